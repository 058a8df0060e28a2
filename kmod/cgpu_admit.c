// SPDX-License-Identifier: GPL-2.0
/*
 * Device memory (docs/nvidia-abi.md, in brackets): admission and accounting
 * of RM_ALLOC, RM_FREE and RM_DUP_OBJECT, and the admission of vidmem that
 * VID_HEAP_CONTROL allocations share (cgpu_vidheap.c).
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

#include <linux/err.h>
#include <linux/printk.h>
#include <linux/uaccess.h>

#include "cgpu_priv.h"
#include "nv_abi.h"

/* Not in nv_abi.h: NV_ERR_INVALID_POINTER (nvstatuscodes). */
#define CGPU_NV_ERR_INVALID_POINTER	0x3D

/*
 * The size NV01_MEMORY_LOCAL_USER will charge [10.11], rounded as nvmock
 * rounds it (nva_alloc_size()).  A size of 0 or past CGPU_MEM_LIMIT_MAX is
 * left as it is: the driver refuses the one, admission the other.
 */
static u64 cgpu_nv_round(u64 size, u32 attr)
{
	if (!size || size > CGPU_MEM_LIMIT_MAX)
		return size;
	return nva_alloc_size(attr, size, 0);
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

/* inst: the task's nearest instance on any GPU; its reference is ours. */
long cgpu_nv_vidmem(struct cgpu_call *c, struct cgpu_memreq *r,
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
	 * nearest instance on any GPU rather than let it through.  A GPU the
	 * slice has no instance on is refused, as a full card refuses: memory
	 * there would be charged to no one.
	 */
	gpu = cgpu_track_gpu_of(r->h_root, r->h_parent);
	if (gpu != CGPU_NO_GPU && gpu != inst->gpu) {
		cgpu_inst_put(inst);
		inst = cgpu_call_inst(c->f, gpu);
		if (IS_ERR_OR_NULL(inst))
			return cgpu_nv_refuse(c, r->status_off, NVA_ERR_NO_MEMORY);
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
long cgpu_nv_alloc(struct cgpu_call *c)
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
		inst = cgpu_call_inst(c->f, CGPU_NO_GPU);
		if (IS_ERR(inst))
			return cgpu_nv_refuse(c, r.status_off, NVA_ERR_NO_MEMORY);
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

	/* Clients, devices, subdevices of slices' fds: remember them. */
	if (!cgpu_call_attached(c->f))
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
long cgpu_nv_free(struct cgpu_call *c)
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
long cgpu_nv_dup(struct cgpu_call *c)
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
