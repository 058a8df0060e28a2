// SPDX-License-Identifier: GPL-2.0
/*
 * What the driver tells cgpu about its GPUs and itself (docs/nvidia-abi.md,
 * in brackets): which minor an RM device instance is, from the replies to
 * attached tasks' CUDA initialisation, and the driver's version, from
 * CHECK_VERSION_STR replies or the module's version (cgpu_hook.c).
 */
#include <linux/uaccess.h>

#include "cgpu_priv.h"
#include "nv_abi.h"

/* UVM layouts changed in 555 [10.7]; learned from CHECK_VERSION_STR. */
bool cgpu_uvm_new_layout = true;

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

/*
 * The driver module's own version (its MODULE_VERSION, or its sysfs
 * version file) picks the UVM layouts [10.9].  Never a reply in user
 * memory: CHECK_VERSION_STR's buffer is the caller's, and another of its
 * threads can rewrite it before anyone reads it.
 */
void cgpu_nv_learn_version(const char *s, size_t len)
{
	u32 v[3];

	if (!nva_version_parse(s, len, v))
		WRITE_ONCE(cgpu_uvm_new_layout, nva_uvm_v2_layout(v));
}

/* CARD_INFO [10.4]: learn gpu_id -> minor from the reply. */
long cgpu_nv_card_info(struct cgpu_call *c)
{
	struct nva_card_info ci;
	long ret = cgpu_nv_orig(c);
	u32 i, n = c->size / sizeof(ci);

	if (ret || !cgpu_call_attached(c->f))
		return ret;
	for (i = 0; i < n && i < NVA_CARD_INFO_MAX_ENTRIES; i++) {
		if (copy_from_user(&ci, c->uarg + i * sizeof(ci), sizeof(ci)))
			break;
		if (ci.valid)
			cgpu_nv_learn_card(ci.gpu_id, ci.minor_number);
	}
	return ret;
}

/* GPU_GET_ID_INFO_V2 [10.2]: learn gpu_id -> RM device instance. */
long cgpu_nv_gpu_id_info(struct cgpu_call *c,
			 const struct nva_os54_control *ctl)
{
	struct nva_os54_control q;
	struct nva_gpu_get_id_info_v2 id;
	void __user *up = u64_to_user_ptr(ctl->params);
	long ret;

	if (!cgpu_call_attached(c->f))
		return cgpu_nv_orig(c);
	ret = cgpu_nv_orig(c);
	if (!ret && ctl->params_size == sizeof(id) &&
	    !copy_from_user(&q, c->uarg, sizeof(q)) && q.status == NVA_OK &&
	    !copy_from_user(&id, up, sizeof(id)))
		cgpu_nv_learn_devinst(id.gpu_id, id.device_instance);
	return ret;
}
