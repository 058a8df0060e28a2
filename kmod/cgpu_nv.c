// SPDX-License-Identifier: GPL-2.0
/*
 * What the nvidia.ko entry points mean to cgpu (shared/nvidia-abi.md, in
 * brackets): admission and accounting of device memory, the memory the
 * card reports, and what the driver tells us about its GPUs.
 *
 * The wrapper sees the user's argument before the driver does and again
 * after.  Admission uses what it read before the call; accounting uses
 * what the driver wrote back (the actual, rounded size and the handle).
 * A refused allocation never reaches the driver: its status field gets
 * NV_ERR_NO_MEMORY and the ioctl returns 0, as a full card answers.
 *
 * The driver reads the user's buffer itself, so a process racing its own
 * buffer against the driver's read can make the driver act on other values
 * than the ones admitted.  Accounting follows the write-back, and an
 * allocation that comes back larger than admitted and over the limit is
 * freed again through the driver, so such a race cannot buy memory past
 * the limit; it can only desynchronise the process's own bookkeeping.
 */
#define pr_fmt(fmt) "cgpu: " fmt

#include <linux/bitfield.h>
#include <linux/ioctl.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cgpu_priv.h"
#include "nv_abi.h"

/* Not in nv_abi.h: NV_ERR_INVALID_POINTER (nvstatuscodes). */
#define CGPU_NV_ERR_INVALID_POINTER	0x3D

long (*cgpu_orig_nv_ioctl)(struct file *f, unsigned int cmd, unsigned long arg);
int (*cgpu_orig_nv_close)(struct inode *inode, struct file *f);

/* UVM layouts changed in 555 [10.7]; learned from CHECK_VERSION_STR. */
bool cgpu_uvm_new_layout = true;

/* One escape as the driver will see it. */
struct cgpu_call {
	struct file *f;
	unsigned int cmd;
	unsigned long arg;
	u32 nr;
	u32 size;
	void __user *uarg;	/* the escape's parameters */
};

static long cgpu_nv_orig(struct cgpu_call *c)
{
	return cgpu_orig_nv_ioctl(c->f, c->cmd, c->arg);
}

static unsigned int cgpu_nv_cmd(u32 nr, u32 size)
{
	return _IOC(_IOC_READ | _IOC_WRITE, NVA_IOCTL_MAGIC, nr, size);
}

/* Answers for the driver: status in the struct, syscall return 0. */
static long cgpu_nv_refuse(struct cgpu_call *c, size_t status_off, u32 status)
{
	if (put_user(status, (u32 __user *)(c->uarg + status_off)))
		return -EFAULT;
	return 0;
}

/* ---- what the driver tells us about its GPUs -------------------------- */

static DEFINE_SPINLOCK(cgpu_map_lock);
/* RM device instance -> gpu_id, from GPU_GET_ID_INFO_V2 replies [10.2] */
static u32 cgpu_devinst_gpu_id[NVA_MAX_DEVICE_INSTANCES];
/* gpu_id -> minor, from CARD_INFO replies [10.4] */
static struct {
	u32 gpu_id;
	u32 minor;
} cgpu_cards[NVA_MAX_DEVICE_INSTANCES];

/*
 * A device's deviceId is an RM device instance, not a minor.  The mapping
 * is learned from the replies the driver gives the task's own CUDA
 * initialisation (GPU_GET_ID_INFO_V2 gives gpu_id -> instance, CARD_INFO
 * gives gpu_id -> minor); when nothing was seen, instance == minor, which
 * holds for nvmock and for the usual probe order of the real driver.
 */
u32 cgpu_nv_minor_of_device(u32 device_id)
{
	u32 minor = device_id, gpu_id, i;

	if (device_id >= NVA_MAX_DEVICE_INSTANCES)
		return CGPU_NO_GPU;
	spin_lock(&cgpu_map_lock);
	gpu_id = cgpu_devinst_gpu_id[device_id];
	for (i = 0; gpu_id && i < ARRAY_SIZE(cgpu_cards); i++) {
		if (cgpu_cards[i].gpu_id == gpu_id) {
			minor = cgpu_cards[i].minor;
			break;
		}
	}
	spin_unlock(&cgpu_map_lock);
	return minor;
}

static void cgpu_nv_learn_card(u32 gpu_id, u32 minor)
{
	u32 i, slot = ARRAY_SIZE(cgpu_cards);

	if (!gpu_id || minor > CGPU_MAX_GPU_MINOR)
		return;
	spin_lock(&cgpu_map_lock);
	for (i = 0; i < ARRAY_SIZE(cgpu_cards); i++) {
		if (cgpu_cards[i].gpu_id == gpu_id || !cgpu_cards[i].gpu_id) {
			slot = i;
			break;
		}
	}
	if (slot < ARRAY_SIZE(cgpu_cards)) {
		cgpu_cards[slot].gpu_id = gpu_id;
		cgpu_cards[slot].minor = minor;
	}
	spin_unlock(&cgpu_map_lock);
}

static void cgpu_nv_learn_devinst(u32 gpu_id, u32 device_instance)
{
	if (!gpu_id || device_instance >= NVA_MAX_DEVICE_INSTANCES)
		return;
	spin_lock(&cgpu_map_lock);
	cgpu_devinst_gpu_id[device_instance] = gpu_id;
	spin_unlock(&cgpu_map_lock);
}

void cgpu_nv_learn_version(const char *s, size_t len)
{
	u32 major = 0;
	size_t i;

	for (i = 0; i < len && i < 4 && s[i] >= '0' && s[i] <= '9'; i++)
		major = major * 10 + (s[i] - '0');
	if (i < len && s[i] == '.' && major)
		WRITE_ONCE(cgpu_uvm_new_layout, major >= 555);
}

/* CARD_INFO [10.4]: learn gpu_id -> minor from the reply. */
static long cgpu_nv_card_info(struct cgpu_call *c)
{
	struct nva_card_info ci;
	long ret = cgpu_nv_orig(c);
	u32 i, n = c->size / sizeof(ci);

	if (ret || !cgpu_current_attached())
		return ret;
	for (i = 0; i < n && i < NVA_CARD_INFO_MAX_ENTRIES; i++) {
		if (copy_from_user(&ci, c->uarg + i * sizeof(ci), sizeof(ci)))
			break;
		if (ci.valid)
			cgpu_nv_learn_card(ci.gpu_id, ci.minor_number);
	}
	return ret;
}

/* CHECK_VERSION_STR [10.5]: the driver's version picks the UVM layouts. */
static long cgpu_nv_version(struct cgpu_call *c)
{
	struct nva_rm_api_version v;
	long ret = cgpu_nv_orig(c);

	if (!copy_from_user(&v, c->uarg, sizeof(v)) &&
	    v.reply == NVA_RM_API_VERSION_REPLY_RECOGNIZED)
		cgpu_nv_learn_version(v.version_string, sizeof(v.version_string));
	return ret;
}

/* ---- device memory ------------------------------------------------------ */

/*
 * The size NV01_MEMORY_LOCAL_USER will charge [10.11]: DEFAULT pages are
 * 2 MiB from 2 MiB up and 64 KiB below; the size is rounded up to the page.
 */
static u64 cgpu_nv_round(u64 size, u32 attr)
{
	if (!size || size > CGPU_MEM_LIMIT_MAX)
		return size;
	return round_up(size, nva_page_bytes(nva_page_size_attr(attr, size, 0)));
}

/*
 * Frees (h_root, h_obj) through the driver after it allocated something we
 * cannot let stand, reusing the first 16 bytes of the caller's buffer as
 * an NVOS00 and restoring them after.  Returns true when RM freed it.
 */
static bool cgpu_nv_undo(struct cgpu_call *c, u32 h_root, u32 h_parent,
			 u32 h_obj)
{
	struct nva_os00_free fr = {
		.h_root = h_root,
		.h_object_parent = h_parent,
		.h_object_old = h_obj,
	};
	u8 saved[sizeof(fr)];
	long ret;

	if (copy_from_user(saved, c->uarg, sizeof(saved)) ||
	    copy_to_user(c->uarg, &fr, sizeof(fr)))
		return false;
	ret = cgpu_orig_nv_ioctl(c->f, cgpu_nv_cmd(NVA_ESC_RM_FREE, sizeof(fr)),
				 (unsigned long)c->uarg);
	if (ret || copy_from_user(&fr, c->uarg, sizeof(fr)))
		fr.status = NVA_ERR_GENERIC;
	if (copy_to_user(c->uarg, saved, sizeof(saved)))
		return false;
	return fr.status == NVA_OK;
}

/* A vidmem allocation about to be made, and how to read its outcome. */
struct cgpu_memreq {
	u32 h_root;
	u32 h_parent;
	u64 size;
	u32 attr;
	size_t status_off;
	bool is64;		/* RM_ALLOC: NVOS64, not NVOS21 */
	/* reads the write-back: 0 and the outcome, or -EFAULT */
	int (*outcome)(struct cgpu_call *c, struct cgpu_memreq *r, u32 *status,
		       u32 *h_mem, u64 *actual, bool *vidmem);
	void __user *uparams;	/* RM_ALLOC: the NV_MEMORY_ALLOCATION_PARAMS */
};

/* inst: the task's nearest instance on any GPU; its reference is ours. */
static long cgpu_nv_vidmem(struct cgpu_call *c, struct cgpu_memreq *r,
			   struct cgpu_inst *inst)
{
	struct cgpu_mem *m = NULL;
	u64 predicted, actual;
	u32 status, h_mem, gpu;
	bool vidmem;
	long ret;

	/*
	 * A parent we never saw (made before the task was attached, or when
	 * tracking memory ran out) has an unknown GPU: charge the task's
	 * nearest instance on any GPU rather than let it through.
	 */
	gpu = cgpu_track_gpu_of(r->h_root, r->h_parent);
	if (gpu != CGPU_NO_GPU && gpu != inst->gpu) {
		cgpu_inst_put(inst);
		inst = cgpu_current_inst(gpu);
		if (!inst)
			return cgpu_nv_orig(c);
	}

	predicted = cgpu_nv_round(r->size, r->attr);
	if (predicted > CGPU_CHARGE_MAX) {
		/* Larger than one record can charge (16 TiB): not admitted. */
		cgpu_inst_count_refused(inst);
		ret = cgpu_nv_refuse(c, r->status_off, NVA_ERR_NO_MEMORY);
		goto out;
	}
	predicted = cgpu_charge_round(predicted);
	m = cgpu_mem_alloc();
	if (!m) {
		/* Fail closed: no tracking, no allocation. */
		cgpu_inst_count_refused(inst);
		ret = cgpu_nv_refuse(c, r->status_off, NVA_ERR_NO_MEMORY);
		goto out;
	}
	if (cgpu_inst_reserve(inst, predicted)) {
		ret = cgpu_nv_refuse(c, r->status_off, NVA_ERR_NO_MEMORY);
		goto out;
	}

	ret = cgpu_nv_orig(c);

	if (ret || r->outcome(c, r, &status, &h_mem, &actual, &vidmem) ||
	    status != NVA_OK || !vidmem) {
		cgpu_inst_unreserve(inst, predicted);
		goto out;
	}
	/*
	 * Larger than admitted (a racing buffer, unusual flags): admit the
	 * rest.  Past what a record can charge it cannot fit: undone, or if
	 * the driver will not, charged as much as a record holds.
	 */
	if (actual > CGPU_CHARGE_MAX)
		actual = U64_MAX;
	else
		actual = cgpu_charge_round(actual);
	if (actual > predicted) {
		if (cgpu_inst_reserve(inst, actual - predicted)) {
			if (cgpu_nv_undo(c, r->h_root, r->h_parent, h_mem)) {
				cgpu_inst_unreserve(inst, predicted);
				ret = cgpu_nv_refuse(c, r->status_off,
						     NVA_ERR_NO_MEMORY);
				goto out;
			}
			/* It stays: account it, even past the limit. */
			cgpu_inst_unreserve(inst, predicted);
			predicted = 0;
			actual = cgpu_charge_round(actual);
		} else {
			predicted = actual;
		}
	}
	if (cgpu_track_mem(c->f, r->h_root, r->h_parent, h_mem, inst, m,
			   predicted, actual)) {
		cgpu_inst_unreserve(inst, predicted);
		if (cgpu_nv_undo(c, r->h_root, r->h_parent, h_mem))
			ret = cgpu_nv_refuse(c, r->status_off, NVA_ERR_NO_MEMORY);
		else
			pr_warn_ratelimited("an allocation of %llu bytes could be neither tracked nor undone\n",
					    actual);
		goto out;
	}
	m = NULL;
out:
	cgpu_mem_release(m);
	cgpu_inst_put(inst);
	return ret;
}

/* Constant sizes: the hardened usercopy checks compile away. */
static unsigned long cgpu_nv_read_alloc(struct cgpu_call *c, void *u,
					bool is64)
{
	if (is64)
		return copy_from_user(u, c->uarg, sizeof(struct nva_os64_alloc));
	return copy_from_user(u, c->uarg, sizeof(struct nva_os21_alloc));
}

/* RM_ALLOC's outcome: the NVOS21/64 header and params.size [3] [4]. */
static int cgpu_nv_alloc_outcome(struct cgpu_call *c, struct cgpu_memreq *r,
				 u32 *status, u32 *h_mem, u64 *actual,
				 bool *vidmem)
{
	union {
		struct nva_os21_alloc a21;
		struct nva_os64_alloc a64;
	} u;

	/* One read: hRoot..hClass lead both forms, then the status. */
	if (cgpu_nv_read_alloc(c, &u, r->is64))
		return -EFAULT;
	*status = r->is64 ? u.a64.status : u.a21.status;
	*h_mem = u.a21.h_object_new;
	*vidmem = u.a21.h_class == NVA_CLASS_MEMORY_LOCAL_USER;
	if (get_user(*actual, (u64 __user *)(r->uparams +
			offsetof(struct nva_memory_alloc_params, size))))
		*actual = cgpu_nv_round(r->size, r->attr);
	return 0;
}

/* NV_ESC_RM_ALLOC with NVOS21 or NVOS64 [3]. */
static long cgpu_nv_alloc(struct cgpu_call *c)
{
	union {
		struct nva_os21_alloc a21;
		struct nva_os64_alloc a64;
	} u;
	bool is64 = c->size == sizeof(struct nva_os64_alloc);
	struct cgpu_memreq r = { .outcome = cgpu_nv_alloc_outcome };
	u32 cls, device_id = 0, status;
	struct cgpu_inst *inst;
	long ret;

	/*
	 * hRoot..pAllocParms lead both forms; only they are read now (under
	 * TCG a user copy costs by the byte, and this is the hot path).
	 */
	if (copy_from_user(&u, c->uarg,
			   offsetof(struct nva_os21_alloc, params_size)))
		return -EFAULT;
	cls = u.a21.h_class;
	r.h_root = u.a21.h_root;
	r.h_parent = u.a21.h_object_parent;
	r.uparams = u64_to_user_ptr(is64 ? u.a64.p_alloc_parms :
					   u.a21.p_alloc_parms);
	r.status_off = is64 ? offsetof(struct nva_os64_alloc, status) :
			      offsetof(struct nva_os21_alloc, status);
	r.is64 = is64;

	switch (cls) {
	case NVA_CLASS_MEMORY_LOCAL_USER:
		inst = cgpu_current_inst(CGPU_NO_GPU);
		if (!inst)
			return cgpu_nv_orig(c);
		/* size and attr sit at the same offsets in the 120 and 128 B forms */
		if (!r.uparams ||
		    get_user(r.size, (u64 __user *)(r.uparams +
			     offsetof(struct nva_memory_alloc_params, size))) ||
		    get_user(r.attr, (u32 __user *)(r.uparams +
			     offsetof(struct nva_memory_alloc_params, attr)))) {
			cgpu_inst_put(inst);
			return cgpu_nv_refuse(c, r.status_off,
					      r.uparams ? CGPU_NV_ERR_INVALID_POINTER :
							  NVA_ERR_INVALID_ARGUMENT);
		}
		return cgpu_nv_vidmem(c, &r, inst);
	case NVA_CLASS_ROOT:
	case NVA_CLASS_ROOT_NON_PRIV:
	case NVA_CLASS_ROOT_CLIENT:
		cls = NVA_CLASS_ROOT_CLIENT;
		break;
	case NVA_CLASS_DEVICE:
		if (r.uparams && get_user(device_id, (u32 __user *)r.uparams))
			device_id = 0;
		break;
	case NVA_CLASS_SUBDEVICE:
		break;
	default:
		return cgpu_nv_orig(c);
	}

	/* Clients, devices, subdevices of attached tasks: remember them. */
	if (!cgpu_current_attached())
		return cgpu_nv_orig(c);
	ret = cgpu_nv_orig(c);
	if (!ret && !cgpu_nv_read_alloc(c, &u, is64)) {
		status = is64 ? u.a64.status : u.a21.status;
		if (status == NVA_OK)
			cgpu_track_object(c->f, r.h_root, r.h_parent,
					  u.a21.h_object_new, cls, device_id);
	}
	return ret;
}

/* NV_ESC_RM_FREE [10.3]: credit what went with the object. */
static long cgpu_nv_free(struct cgpu_call *c)
{
	struct nva_os00_free p;
	u32 status;
	long ret;

	if (copy_from_user(&p, c->uarg, sizeof(p)))
		return -EFAULT;
	ret = cgpu_nv_orig(c);
	if (!ret && !get_user(status, (u32 __user *)(c->uarg +
				offsetof(struct nva_os00_free, status))) &&
	    status == NVA_OK)
		cgpu_track_free(p.h_root, p.h_object_old);
	return ret;
}

/* NV_ESC_RM_DUP_OBJECT [10.1]: the copy shares the source's charge. */
static long cgpu_nv_dup(struct cgpu_call *c)
{
	struct nva_os55_dup p, q;
	struct cgpu_dup *d;
	struct cgpu_mem *m;
	long ret;
	int err;

	if (copy_from_user(&p, c->uarg, sizeof(p)))
		return -EFAULT;
	/* The source's record cannot go while the driver copies it. */
	m = cgpu_track_pin(p.h_client_src, p.h_object_src);
	if (!m)
		return cgpu_nv_orig(c);
	d = IS_ERR(m) ? NULL : cgpu_dup_alloc();
	if (!d) {
		if (!IS_ERR(m))
			cgpu_track_unpin(m);
		return cgpu_nv_refuse(c, offsetof(struct nva_os55_dup, status),
				      NVA_ERR_NO_MEMORY);
	}
	ret = cgpu_nv_orig(c);
	if (ret || copy_from_user(&q, c->uarg, sizeof(q)) || q.status != NVA_OK)
		goto out;
	err = cgpu_track_dup(c->f, p.h_client, p.h_parent, q.h_object, m, d);
	if (!err)
		return ret;
	if (cgpu_nv_undo(c, p.h_client, p.h_parent, q.h_object))
		ret = cgpu_nv_refuse(c, offsetof(struct nva_os55_dup, status),
				     NVA_ERR_NO_MEMORY);
out:
	cgpu_dup_release(d);
	cgpu_track_unpin(m);
	return ret;
}

/* ---- what the card reports ------------------------------------------------ */

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

	/* 1028 B from 550, 436 B (54 entries) in 535 [10.9] */
	if (psize != sizeof(struct nva_fb_get_info_v2) &&
	    psize != NVA_FB_GET_INFO_V2_SIZE_535)
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

/* The controls cgpu looks into [5] [10.2]. */
static __always_inline bool cgpu_nv_control_ours(u32 cmd)
{
	return cmd == NVA_CTRL_GPU_GET_ID_INFO_V2 ||
	       cmd == NVA_CTRL_FB_GET_INFO_V2 || cmd == NVA_CTRL_FB_GET_INFO;
}

/* NV_ESC_RM_CONTROL [5] [10.2]. */
static long cgpu_nv_control(struct cgpu_call *c)
{
	struct nva_os54_control ctl, q;
	struct nva_gpu_get_id_info_v2 id;
	struct cgpu_inst *inst;
	void __user *up;
	long ret;
	u32 cmd;

	/* Most controls are none of ours: one word decides. */
	if (get_user(cmd, (u32 __user *)(c->uarg +
					offsetof(struct nva_os54_control, cmd))))
		return -EFAULT;
	if (!cgpu_nv_control_ours(cmd))
		return cgpu_nv_orig(c);
	if (copy_from_user(&ctl, c->uarg, sizeof(ctl)))
		return -EFAULT;
	up = u64_to_user_ptr(ctl.params);
	switch (ctl.cmd) {
	case NVA_CTRL_GPU_GET_ID_INFO_V2:
		if (!cgpu_current_attached())
			return cgpu_nv_orig(c);
		ret = cgpu_nv_orig(c);
		if (!ret && ctl.params_size == sizeof(id) &&
		    !copy_from_user(&q, c->uarg, sizeof(q)) && q.status == NVA_OK &&
		    !copy_from_user(&id, up, sizeof(id)))
			cgpu_nv_learn_devinst(id.gpu_id, id.device_instance);
		return ret;
	case NVA_CTRL_FB_GET_INFO_V2:
	case NVA_CTRL_FB_GET_INFO:
		inst = cgpu_current_inst(cgpu_track_gpu_of(ctl.h_client,
							   ctl.h_object));
		if (!inst)
			return cgpu_nv_orig(c);
		ret = cgpu_nv_orig(c);
		if (!ret && !copy_from_user(&q, c->uarg, sizeof(q)) &&
		    q.status == NVA_OK) {
			if (ctl.cmd == NVA_CTRL_FB_GET_INFO_V2)
				cgpu_nv_fb_info_v2(c, inst, up, ctl.params_size);
			else if (ctl.params_size == sizeof(struct nva_fb_get_info))
				cgpu_nv_fb_info_old(c, inst, up);
		}
		cgpu_inst_put(inst);
		return ret;
	}
	return cgpu_nv_orig(c);
}

/* ---- VID_HEAP_CONTROL [10.9] [10.10] -------------------------------------- */

static int cgpu_nv_vidheap_outcome(struct cgpu_call *c, struct cgpu_memreq *r,
				   u32 *status, u32 *h_mem, u64 *actual,
				   bool *vidmem)
{
	struct nva_os32_vidheap p;
	struct nva_os32_alloc_size *a = &p.data.alloc_size;

	if (copy_from_user(&p, c->uarg, sizeof(p)))
		return -EFAULT;
	*status = p.status;
	*h_mem = a->h_memory;
	*actual = a->size;
	*vidmem = p.function == NVA_OS32_FUNC_ALLOC_SIZE &&
		  !(a->flags & NVA_ALLOC_FLAGS_VIRTUAL) &&
		  FIELD_GET(NVA_ATTR_LOCATION_MASK, a->attr) == NVA_ATTR_LOCATION_VIDMEM;
	return 0;
}

static long cgpu_nv_vidheap(struct cgpu_call *c)
{
	struct cgpu_memreq r = { .outcome = cgpu_nv_vidheap_outcome };
	struct nva_os32_vidheap p, q;
	struct nva_os32_alloc_size *a = &p.data.alloc_size;
	struct cgpu_inst *inst;
	u64 limit, used, free;
	long ret;

	if (copy_from_user(&p, c->uarg, sizeof(p)))
		return -EFAULT;
	r.h_root = p.h_root;
	r.h_parent = p.h_object_parent;
	r.status_off = offsetof(struct nva_os32_vidheap, status);

	switch (p.function) {
	case NVA_OS32_FUNC_ALLOC_SIZE:
		/* VIRTUAL -> 0x50A0, VIDMEM -> 0x40, else sysmem [4] */
		if ((a->flags & NVA_ALLOC_FLAGS_VIRTUAL) ||
		    FIELD_GET(NVA_ATTR_LOCATION_MASK, a->attr) != NVA_ATTR_LOCATION_VIDMEM)
			return cgpu_nv_orig(c);
		inst = cgpu_current_inst(CGPU_NO_GPU);
		if (!inst)
			return cgpu_nv_orig(c);
		r.size = a->size;
		r.attr = a->attr;
		return cgpu_nv_vidmem(c, &r, inst);
	case NVA_OS32_FUNC_ALLOC_SIZE_RANGE:
		/* Its parameters are not described here: fail closed. */
		if (!cgpu_current_attached())
			return cgpu_nv_orig(c);
		return cgpu_nv_refuse(c, r.status_off, NVA_ERR_NOT_SUPPORTED);
	case NVA_OS32_FUNC_FREE:
		if (!atomic_read(&cgpu_nr_clients))
			return cgpu_nv_orig(c);
		ret = cgpu_nv_orig(c);
		if (!ret && !copy_from_user(&q, c->uarg, sizeof(q)) &&
		    q.status == NVA_OK)
			cgpu_track_free(p.h_root, p.data.free.h_memory);
		return ret;
	case NVA_OS32_FUNC_INFO:
		inst = cgpu_current_inst(cgpu_track_gpu_of(p.h_root,
							   p.h_object_parent));
		if (!inst)
			return cgpu_nv_orig(c);
		ret = cgpu_nv_orig(c);
		if (!ret && !copy_from_user(&q, c->uarg, sizeof(q)) &&
		    q.status == NVA_OK) {
			/* NVOS32 INFO is in bytes */
			cgpu_inst_view(inst, &limit, &used);
			free = limit > used ? limit - used : 0;
			q.total = min(q.total, limit);
			q.free = min(q.free, free);
			q.data.info.size = min(q.data.info.size, free);
			if (copy_to_user(c->uarg, &q, sizeof(q)))
				ret = -EFAULT;
		}
		cgpu_inst_put(inst);
		return ret;
	}
	return cgpu_nv_orig(c);
}

/* ---- entry points ---------------------------------------------------------- */

static long cgpu_nv_dispatch(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct cgpu_call c = {
		.f = f,
		.cmd = cmd,
		.arg = arg,
		.nr = _IOC_NR(cmd),
		.size = _IOC_SIZE(cmd),
		.uarg = (void __user *)arg,
	};
	struct nva_ioctl_xfer x;

	if (c.nr == NVA_ESC_IOCTL_XFER_CMD) {
		/* [2]: the driver reads the wrapped command; a bad wrapper is its to reject */
		if (c.size != sizeof(x) || copy_from_user(&x, c.uarg, sizeof(x)) ||
		    x.size > NVA_ABSOLUTE_MAX_IOCTL_SIZE)
			return cgpu_nv_orig(&c);
		c.nr = x.cmd;
		c.size = x.size;
		c.uarg = u64_to_user_ptr(x.ptr);
		/*
		 * Hand the driver the command we inspect as a plain ioctl, so
		 * that the wrapper cannot be changed between our read and its.
		 */
		if (c.size <= _IOC_SIZEMASK && c.nr <= _IOC_NRMASK) {
			c.cmd = cgpu_nv_cmd(c.nr, c.size);
			c.arg = (unsigned long)c.uarg;
		}
	}

	switch (c.nr) {
	case NVA_ESC_RM_ALLOC:
		if (c.size == sizeof(struct nva_os21_alloc) ||
		    c.size == sizeof(struct nva_os64_alloc))
			return cgpu_nv_alloc(&c);
		break;
	case NVA_ESC_RM_FREE:
		if (c.size == sizeof(struct nva_os00_free) &&
		    atomic_read(&cgpu_nr_clients))
			return cgpu_nv_free(&c);
		break;
	case NVA_ESC_RM_DUP_OBJECT:
		if (c.size == sizeof(struct nva_os55_dup) &&
		    atomic_read(&cgpu_nr_clients))
			return cgpu_nv_dup(&c);
		break;
	case NVA_ESC_RM_VID_HEAP_CONTROL:
		if (c.size == sizeof(struct nva_os32_vidheap))
			return cgpu_nv_vidheap(&c);
		break;
	case NVA_ESC_RM_CONTROL:
		if (c.size == sizeof(struct nva_os54_control) &&
		    static_branch_unlikely(&cgpu_attached_key))
			return cgpu_nv_control(&c);
		break;
	case NVA_ESC_CARD_INFO:
		if (c.size && c.size % sizeof(struct nva_card_info) == 0)
			return cgpu_nv_card_info(&c);
		break;
	case NVA_ESC_CHECK_VERSION_STR:
		if (c.size == sizeof(struct nva_rm_api_version))
			return cgpu_nv_version(&c);
		break;
	}
	return cgpu_nv_orig(&c);
}

/*
 * Called by the ftrace callback before it redirects a call of the ioctl
 * entry point: false for the calls cgpu_nv_dispatch() would only pass on,
 * which then reach the driver with no detour.  Most controls are not ours,
 * and a control's command is one word of the user's argument: it is read
 * here without faulting (the callback must not sleep); a word that cannot
 * be read so is left to the wrapper.  Reading it twice (here, then in the
 * wrapper) is no new race: the driver reads the buffer itself anyway.
 */
bool notrace cgpu_nv_ioctl_wanted(unsigned int cmd, unsigned long arg)
{
	u32 __user *uctl;
	u32 ctl;
	int err;

	switch (_IOC_NR(cmd)) {
	case NVA_ESC_RM_CONTROL:
		if (_IOC_SIZE(cmd) != sizeof(struct nva_os54_control))
			return false;
		uctl = (u32 __user *)(arg + offsetof(struct nva_os54_control, cmd));
		if (!access_ok(uctl, sizeof(*uctl)))
			return true;
		/* One load; a fault is fixed up, not handled (no sleep). */
		pagefault_disable();
		err = __get_user(ctl, uctl);
		pagefault_enable();
		return err || cgpu_nv_control_ours(ctl);
	case NVA_ESC_RM_ALLOC:
	case NVA_ESC_RM_FREE:
	case NVA_ESC_RM_DUP_OBJECT:
	case NVA_ESC_RM_VID_HEAP_CONTROL:
	case NVA_ESC_CARD_INFO:
	case NVA_ESC_CHECK_VERSION_STR:
	case NVA_ESC_IOCTL_XFER_CMD:
		return true;
	}
	return false;
}

long cgpu_nv_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	/* Nobody attached and nothing tracked: the driver's own path. */
	if (!static_branch_unlikely(&cgpu_attached_key) &&
	    !atomic_read(&cgpu_nr_clients))
		return cgpu_orig_nv_ioctl(f, cmd, arg);
	return cgpu_nv_dispatch(f, cmd, arg);
}

int cgpu_nv_close(struct inode *inode, struct file *f)
{
	int ret = cgpu_orig_nv_close(inode, f);

	/* RM freed the fd's clients whatever close returned. */
	if (atomic_read(&cgpu_nr_clients))
		cgpu_track_file_closed(f);
	return ret;
}
