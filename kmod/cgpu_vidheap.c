// SPDX-License-Identifier: GPL-2.0
/*
 * NV_ESC_RM_VID_HEAP_CONTROL, NVOS32 [3] [10.9] [10.10] (docs/nvidia-abi.md,
 * in brackets): vidmem ALLOC_SIZE is admitted as RM_ALLOC's is
 * (cgpu_admit.c), FREE credits, INFO is rewritten so that the slice is the
 * card, and ALLOC_SIZE_RANGE is refused for attached tasks.
 */
#include <linux/bitfield.h>
#include <linux/err.h>
#include <linux/uaccess.h>

#include "cgpu_priv.h"
#include "nv_abi.h"

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

long cgpu_nv_vidheap(struct cgpu_call *c)
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
		inst = cgpu_call_inst(c->f, CGPU_NO_GPU);
		if (IS_ERR(inst))
			return cgpu_nv_refuse(c, r.status_off, NVA_ERR_NO_MEMORY);
		if (!inst)
			return cgpu_nv_orig(c);
		r.size = a->size;
		r.attr = a->attr;
		return cgpu_nv_vidmem(c, &r, inst);
	case NVA_OS32_FUNC_ALLOC_SIZE_RANGE:
		/* Its parameters are not described here: fail closed. */
		if (!cgpu_call_attached(c->f))
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
		inst = cgpu_call_inst(c->f, cgpu_track_gpu_of(p.h_root,
							      p.h_object_parent));
		if (IS_ERR_OR_NULL(inst))
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
