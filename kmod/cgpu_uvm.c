// SPDX-License-Identifier: GPL-2.0
/*
 * Managed memory (cudaMallocManaged) would escape the slice: it is backed
 * by whatever memory UVM chooses.  In the driver an mmap of the UVM fd
 * creates a managed range, unless it matches a range made beforehand by
 * ALLOC_SEMAPHORE_POOL [docs/nvidia-abi.md 7, 10.7].  So for attached tasks
 * the mmap hook allows exactly the semaphore pools it saw being made and
 * refuses every other mapping of the UVM fd with -EPERM (what an LSM
 * refusing the mapping would say; CUDA reports it as not supported).  The
 * UVM device itself stays usable: CUDA cannot initialise without it.
 */
#define pr_fmt(fmt) "cgpu: " fmt

#include <linux/list.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cgpu_priv.h"
#include "nv_abi.h"

long (*cgpu_orig_uvm_ioctl)(struct file *f, unsigned int cmd, unsigned long arg);
int (*cgpu_orig_uvm_mmap)(struct file *f, struct vm_area_struct *vma);
int (*cgpu_orig_uvm_release)(struct inode *inode, struct file *f);

/* Pools are few (a handful per CUDA context): a bounded list will do. */
#define CGPU_MAX_POOLS	4096

struct cgpu_pool {
	struct list_head node;
	struct file *file;	/* identity only */
	u64 base;
	u64 length;
};

/* Nests inside mmap_lock (the mmap hook); nothing nests inside it. */
static DEFINE_SPINLOCK(cgpu_pool_lock);
static LIST_HEAD(cgpu_pools);
unsigned int cgpu_nr_pools;

static void cgpu_pool_forget(struct file *f, bool all, u64 base)
{
	struct cgpu_pool *p, *tmp;
	LIST_HEAD(dead);

	spin_lock(&cgpu_pool_lock);
	list_for_each_entry_safe(p, tmp, &cgpu_pools, node) {
		if (p->file == f && (all || p->base == base)) {
			list_move(&p->node, &dead);
			/* read without the lock: cgpu_hooks_idle() */
			WRITE_ONCE(cgpu_nr_pools, cgpu_nr_pools - 1);
		}
	}
	spin_unlock(&cgpu_pool_lock);
	list_for_each_entry_safe(p, tmp, &dead, node)
		kfree(p);
}

static bool cgpu_pool_match(struct file *f, u64 start, u64 length)
{
	struct cgpu_pool *p;
	bool ok = false;

	spin_lock(&cgpu_pool_lock);
	list_for_each_entry(p, &cgpu_pools, node) {
		if (p->file == f && p->base == start && p->length == length) {
			ok = true;
			break;
		}
	}
	spin_unlock(&cgpu_pool_lock);
	return ok;
}

/* ALLOC_SEMAPHORE_POOL: base and length lead both layouts [10.7]. */
static long cgpu_uvm_sem_pool(struct file *f, unsigned int cmd,
			      unsigned long arg)
{
	void __user *up = (void __user *)arg;
	struct cgpu_pool *p;
	size_t status_off;
	u64 hdr[2];
	u32 status;
	long ret;

	if (!cgpu_current_attached() || copy_from_user(hdr, up, sizeof(hdr)))
		return cgpu_orig_uvm_ioctl(f, cmd, arg);
	/* Without a record the pool's mmap is refused: fail closed. */
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	ret = cgpu_orig_uvm_ioctl(f, cmd, arg);
	status_off = READ_ONCE(cgpu_uvm_new_layout) ?
		     offsetof(struct nva_uvm_alloc_semaphore_pool, rm_status) :
		     NVA_UVM_SEM_POOL_OLD_OFF_STATUS;
	if (!p || ret || get_user(status, (u32 __user *)(up + status_off)) ||
	    status != NVA_OK) {
		kfree(p);
		return ret;
	}
	p->file = f;
	p->base = hdr[0];
	p->length = hdr[1];
	spin_lock(&cgpu_pool_lock);
	if (cgpu_nr_pools < CGPU_MAX_POOLS) {
		list_add(&p->node, &cgpu_pools);
		WRITE_ONCE(cgpu_nr_pools, cgpu_nr_pools + 1);
		p = NULL;
	}
	spin_unlock(&cgpu_pool_lock);
	kfree(p);
	return ret;
}

/*
 * MAP_EXTERNAL_ALLOCATION: UVM now holds the memory too, so its charge
 * stays until the mapping goes [10.7].  The handle and status sit at the
 * end, where depends on the driver's version.
 */
struct cgpu_uvm_map_tail {
	s32 rm_ctrl_fd;
	u32 h_client;
	u32 h_memory;
	u32 rm_status;
};

static long cgpu_uvm_map_external(struct file *f, unsigned int cmd,
				  unsigned long arg)
{
	void __user *up = (void __user *)arg;
	struct cgpu_uvm_map_tail tail, after;
	struct cgpu_umap *u = NULL;
	struct cgpu_mem *m;
	size_t off;
	u64 base;
	long ret;

	off = READ_ONCE(cgpu_uvm_new_layout) ?
	      offsetof(struct nva_uvm_map_external_allocation, rm_ctrl_fd) :
	      NVA_UVM_MAP_EXT_OLD_OFF_FD;
	if (get_user(base, (u64 __user *)up) ||
	    copy_from_user(&tail, up + off, sizeof(tail)))
		return cgpu_orig_uvm_ioctl(f, cmd, arg);
	/* The record stays while UVM maps it; not ours: nothing to hold. */
	m = cgpu_track_pin(tail.h_client, tail.h_memory);
	if (!m)
		return cgpu_orig_uvm_ioctl(f, cmd, arg);
	if (IS_ERR(m))
		return -ENOMEM;
	/* A second mapping of it needs a record: fail closed without one. */
	u = cgpu_umap_alloc();
	if (!u) {
		cgpu_track_unpin(m);
		return -ENOMEM;
	}
	ret = cgpu_orig_uvm_ioctl(f, cmd, arg);
	if (ret || copy_from_user(&after, up + off, sizeof(after)) ||
	    after.rm_status != NVA_OK) {
		cgpu_track_unpin(m);
	} else if (after.h_client != tail.h_client ||
		   after.h_memory != tail.h_memory) {
		/* The buffer changed under the driver: follow its reply. */
		cgpu_track_unpin(m);
		m = cgpu_track_pin(after.h_client, after.h_memory);
		if (!IS_ERR_OR_NULL(m) && cgpu_track_uvm_map(f, base, m, u))
			u = NULL;
	} else if (cgpu_track_uvm_map(f, base, m, u)) {
		u = NULL;
	}
	cgpu_umap_release(u);
	return ret;
}

long cgpu_uvm_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	u64 base;
	long ret;

	if (!static_branch_unlikely(&cgpu_attached_key) &&
	    !READ_ONCE(cgpu_nr_pools) && !atomic_read(&cgpu_nr_umaps))
		return cgpu_orig_uvm_ioctl(f, cmd, arg);
	switch (cmd) {
	case NVA_UVM_ALLOC_SEMAPHORE_POOL:
		return cgpu_uvm_sem_pool(f, cmd, arg);
	case NVA_UVM_MAP_EXTERNAL_ALLOCATION:
		if (!atomic_read(&cgpu_nr_clients))
			break;
		return cgpu_uvm_map_external(f, cmd, arg);
	case NVA_UVM_FREE:
		/* base leads both layouts; forgetting too much only refuses more */
		if ((!READ_ONCE(cgpu_nr_pools) && !atomic_read(&cgpu_nr_umaps)) ||
		    get_user(base, (u64 __user *)arg))
			break;
		ret = cgpu_orig_uvm_ioctl(f, cmd, arg);
		if (!ret) {
			cgpu_pool_forget(f, false, base);
			if (atomic_read(&cgpu_nr_umaps))
				cgpu_track_uvm_unmap(f, false, base);
		}
		return ret;
	}
	return cgpu_orig_uvm_ioctl(f, cmd, arg);
}

int cgpu_uvm_mmap(struct file *f, struct vm_area_struct *vma)
{
	struct cgpu_inst *inst;
	u64 start = vma->vm_start, length = vma->vm_end - vma->vm_start;

	/* Only offset == address makes a range; the driver refuses the rest. */
	if (((u64)vma->vm_pgoff << PAGE_SHIFT) != start)
		return cgpu_orig_uvm_mmap(f, vma);
	inst = cgpu_current_inst(CGPU_NO_GPU);
	if (!inst)
		return cgpu_orig_uvm_mmap(f, vma);
	if (cgpu_pool_match(f, start, length)) {
		cgpu_inst_put(inst);
		return cgpu_orig_uvm_mmap(f, vma);
	}
	cgpu_inst_count_managed(inst);
	cgpu_inst_put(inst);
	return -EPERM;
}

int cgpu_uvm_release(struct inode *inode, struct file *f)
{
	int ret = cgpu_orig_uvm_release(inode, f);

	if (READ_ONCE(cgpu_nr_pools))
		cgpu_pool_forget(f, true, 0);
	if (atomic_read(&cgpu_nr_umaps))
		cgpu_track_uvm_unmap(f, true, 0);
	return ret;
}

void cgpu_uvm_exit(void)
{
	struct cgpu_pool *p, *tmp;

	list_for_each_entry_safe(p, tmp, &cgpu_pools, node) {
		list_del(&p->node);
		kfree(p);
	}
	WRITE_ONCE(cgpu_nr_pools, 0);
}
