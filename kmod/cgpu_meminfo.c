// SPDX-License-Identifier: GPL-2.0
/*
 * The memory the card reports (docs/nvidia-abi.md, in brackets): the
 * FB_GET_INFO_V2 and FB_GET_INFO controls are rewritten for attached tasks
 * after the driver answers, so that the slice is the card.
 */
#define pr_fmt(fmt) "cgpu: " fmt

#include <linux/err.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "cgpu_priv.h"
#include "nv_abi.h"

/* FB info values are KiB [5]: the slice is the card, never more than it. */
static void cgpu_fb_fix(struct nva_fb_info *e, u32 n, u64 limit, u64 used)
{
	u32 lim_kib = min_t(u64, limit >> 10, U32_MAX);
	u32 free_kib = min_t(u64, (limit > used ? limit - used : 0) >> 10,
			     U32_MAX);
	u32 i;

	for (i = 0; i < n; i++) {
		switch (e[i].index) {
		case NVA_FB_INFO_RAM_SIZE:
		case NVA_FB_INFO_TOTAL_RAM_SIZE:
		case NVA_FB_INFO_HEAP_SIZE:
		case NVA_FB_INFO_USABLE_RAM_SIZE:
		case NVA_FB_INFO_MAPPABLE_HEAP_SIZE:
			e[i].data = min(e[i].data, lim_kib);
			break;
		case NVA_FB_INFO_HEAP_FREE:
			e[i].data = min(e[i].data, free_kib);
			break;
		}
	}
}

/* Only the entries asked for travel: most callers ask for a handful. */
static void cgpu_nv_fb_info_v2(struct cgpu_call *c, struct cgpu_inst *inst,
			       void __user *up, u32 psize)
{
	struct nva_fb_info small[16], *e = small;
	void __user *ul = up + offsetof(struct nva_fb_get_info_v2, fb_info_list);
	u32 n, max;
	u64 limit, used;

	/*
	 * One size per branch [10.9]; the driver answered NV_OK, so this is
	 * the one it takes.
	 */
	if (!nva_fb_info_v2_size_known(psize))
		return;
	max = (psize - offsetof(struct nva_fb_get_info_v2, fb_info_list)) /
	      sizeof(*e);
	if (get_user(n, (u32 __user *)up))
		return;
	n = min(n, max);
	if (!n)
		return;
	if (n > ARRAY_SIZE(small)) {
		e = kmalloc_array(n, sizeof(*e), GFP_KERNEL);
		if (!e)
			return;
	}
	if (copy_from_user(e, ul, n * sizeof(*e)))
		goto out;
	cgpu_inst_view(inst, &limit, &used);
	cgpu_fb_fix(e, n, limit, used);
	if (copy_to_user(ul, e, n * sizeof(*e)))
		pr_debug("FB_GET_INFO_V2 reply vanished\n");
out:
	if (e != small)
		kfree(e);
}

static void cgpu_nv_fb_info_old(struct cgpu_call *c, struct cgpu_inst *inst,
				void __user *up)
{
	struct nva_fb_get_info p;
	struct nva_fb_info *e;
	void __user *ul;
	u64 limit, used;
	u32 n;

	if (copy_from_user(&p, up, sizeof(p)))
		return;
	n = min_t(u32, p.fb_info_list_size, NVA_FB_INFO_MAX_LIST);
	ul = u64_to_user_ptr(p.fb_info_list);
	if (!n || !ul)
		return;
	e = memdup_user(ul, n * sizeof(*e));
	if (IS_ERR(e))
		return;
	cgpu_inst_view(inst, &limit, &used);
	cgpu_fb_fix(e, n, limit, used);
	if (copy_to_user(ul, e, n * sizeof(*e)))
		pr_debug("FB_GET_INFO reply vanished\n");
	kfree(e);
}

/* FB_GET_INFO_V2 and FB_GET_INFO [5]: rewritten after the driver answers. */
long cgpu_nv_fb_info(struct cgpu_call *c, const struct nva_os54_control *ctl)
{
	struct nva_os54_control q;
	void __user *up = u64_to_user_ptr(ctl->params);
	struct cgpu_inst *inst;
	long ret;

	inst = cgpu_call_inst(c->f, cgpu_track_gpu_of(ctl->h_client,
						      ctl->h_object));
	if (IS_ERR_OR_NULL(inst))
		return cgpu_nv_orig(c);
	ret = cgpu_nv_orig(c);
	if (!ret && !copy_from_user(&q, c->uarg, sizeof(q)) &&
	    q.status == NVA_OK) {
		if (ctl->cmd == NVA_CTRL_FB_GET_INFO_V2)
			cgpu_nv_fb_info_v2(c, inst, up, ctl->params_size);
		else if (ctl->params_size == sizeof(struct nva_fb_get_info))
			cgpu_nv_fb_info_old(c, inst, up);
	}
	cgpu_inst_put(inst);
	return ret;
}
