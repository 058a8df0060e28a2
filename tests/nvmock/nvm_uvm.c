// SPDX-License-Identifier: GPL-2.0
/*
 * nvmock: the nvidia-uvm.ko half.  /dev/nvidia-uvm with plain-integer ioctl
 * commands [7] [10.7], one VA space per initialized fd holding non-overlapping
 * ranges (external, semaphore pool, managed), and managed ranges made by mmap.
 *
 * Locking: each VA space has a mutex.  mmap and the vm_ops run under the
 * mm's mmap_lock and take it, so the ioctls never touch user memory, take a
 * file reference or call into the RM half while holding it.
 */

#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/rbtree.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "nvmock.h"

/* Largest mapping backed by kernel memory. */
#define NVM_UVM_MAX_MMAP	(256ul << 20)
/* Highest user address a range may reach (57-bit VA). */
#define NVM_UVM_VA_END		BIT_ULL(57)

enum uvm_fd_kind {
	UVM_FD_UNINITIALIZED,
	UVM_FD_VA_SPACE,
	UVM_FD_MM,
};

enum uvm_range_type {
	UVM_RANGE_EXTERNAL,
	UVM_RANGE_SEMAPHORE_POOL,
	UVM_RANGE_MANAGED,
};

struct uvm_vm;

struct uvm_range {
	struct rb_node node;
	u64 start;
	u64 end;			/* exclusive */
	enum uvm_range_type type;
	struct list_head maps;		/* external: struct uvm_ext_map */
	struct uvm_vm *vm;		/* semaphore pool, managed: the mapping */
};

struct uvm_ext_map {
	struct list_head node;
	u64 start;
	u64 end;
	struct nvm_mem *mem;		/* holds a reference */
};

struct uvm_fd {
	struct mutex lock;		/* everything below */
	enum uvm_fd_kind kind;
	u64 init_flags;
	u32 registered_gpus;		/* bit per GPU */
	u32 vaspace_gpus;
	u64 next_range_group;
	struct rb_root ranges;
};

/* One mmap of the fd; copies of the vma share it. */
struct uvm_vm {
	struct kref ref;
	struct page **pages;		/* zeroed, charged to the caller's memcg */
	unsigned long npages;
	struct uvm_fd *ufd;
	struct uvm_range *range;	/* NULL once a semaphore pool is freed */
	bool managed;
};

static const struct file_operations uvm_fops;

/* ---- range tree ------------------------------------------------------------ */

static struct uvm_range *uvm_range_find(struct uvm_fd *ufd, u64 addr)
{
	struct rb_node *n = ufd->ranges.rb_node;

	while (n) {
		struct uvm_range *r = rb_entry(n, struct uvm_range, node);

		if (addr < r->start)
			n = n->rb_left;
		else if (addr >= r->end)
			n = n->rb_right;
		else
			return r;
	}
	return NULL;
}

/* Inserts r unless it overlaps a range already there. */
static bool uvm_range_insert(struct uvm_fd *ufd, struct uvm_range *r)
{
	struct rb_node **link = &ufd->ranges.rb_node, *parent = NULL;

	lockdep_assert_held(&ufd->lock);
	while (*link) {
		struct uvm_range *cur = rb_entry(*link, struct uvm_range, node);

		parent = *link;
		if (r->end <= cur->start)
			link = &(*link)->rb_left;
		else if (r->start >= cur->end)
			link = &(*link)->rb_right;
		else
			return false;
	}
	rb_link_node(&r->node, parent, link);
	rb_insert_color(&r->node, &ufd->ranges);
	return true;
}

static struct uvm_range *uvm_range_new(u64 start, u64 end,
				       enum uvm_range_type type)
{
	struct uvm_range *r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);

	if (!r)
		return NULL;
	r->start = start;
	r->end = end;
	r->type = type;
	INIT_LIST_HEAD(&r->maps);
	return r;
}

/* Drops the memory references of a range already out of the tree. */
static void uvm_range_destroy(struct uvm_range *r)
{
	struct uvm_ext_map *m, *tmp;

	list_for_each_entry_safe(m, tmp, &r->maps, node) {
		list_del(&m->node);
		nvm_mem_put(m->mem);
		kfree(m);
	}
	kfree(r);
}

/*
 * [base, base + length): page aligned, not empty, not at 0, no wrap, within
 * the user address space.
 */
static bool uvm_va_ok(u64 base, u64 length)
{
	return base && length && PAGE_ALIGNED(base) && PAGE_ALIGNED(length) &&
	       base < NVM_UVM_VA_END && length <= NVM_UVM_VA_END - base;
}

/* ---- commands -------------------------------------------------------------- */

static u32 uvm_initialize(struct uvm_fd *ufd, struct nva_uvm_initialize *p)
{
	u32 st = NVA_OK;

	mutex_lock(&ufd->lock);
	if (ufd->kind == UVM_FD_MM) {
		st = NVA_ERR_INVALID_ARGUMENT;
	} else if (ufd->kind == UVM_FD_VA_SPACE) {
		if (p->flags != ufd->init_flags)
			st = NVA_ERR_INVALID_ARGUMENT;
	} else {
		ufd->kind = UVM_FD_VA_SPACE;
		ufd->init_flags = p->flags;
	}
	mutex_unlock(&ufd->lock);
	return st;
}

/* uvmFd must be an initialized nvidia-uvm fd: f_op == &uvm_fops [8]. */
static u32 uvm_mm_initialize(struct uvm_fd *ufd, struct nva_uvm_mm_initialize *p)
{
	struct uvm_fd *other;
	struct file *f;
	u32 st = NVA_OK;

	f = fget(p->uvm_fd);
	if (!f)
		return NVA_ERR_INVALID_ARGUMENT;
	if (f->f_op != &uvm_fops) {
		fput(f);
		return NVA_ERR_INVALID_ARGUMENT;
	}
	other = f->private_data;
	if (other != ufd) {
		mutex_lock(&other->lock);
		if (other->kind != UVM_FD_VA_SPACE)
			st = NVA_ERR_INVALID_ARGUMENT;
		mutex_unlock(&other->lock);
	} else {
		st = NVA_ERR_INVALID_ARGUMENT;
	}
	fput(f);
	if (st)
		return st;

	mutex_lock(&ufd->lock);
	if (ufd->kind != UVM_FD_UNINITIALIZED)
		st = NVA_ERR_INVALID_STATE;
	else
		ufd->kind = UVM_FD_MM;
	mutex_unlock(&ufd->lock);
	return st;
}

/* Checks rmCtrlFd (an nvidiactl fd, like nv_get_file_private) and hClient. */
static u32 uvm_check_rm(int rm_ctrl_fd, u32 h_client, u32 h_va_space, int gpu)
{
	struct nvm_file *nvf;
	struct file *f;
	u32 st;

	nvf = nvm_get_ctl_file(rm_ctrl_fd, &f);
	if (!nvf)
		return NVA_ERR_INVALID_ARGUMENT;
	if (gpu >= 0)
		st = nvm_rm_check_vaspace(nvf, h_client, h_va_space, gpu);
	else
		st = nvm_rm_check_client(nvf, h_client);
	fput(f);
	return st;
}

static u32 uvm_register_gpu(struct uvm_fd *ufd, struct nva_uvm_register_gpu *p)
{
	int gpu = nvm_gpu_by_uuid(p->gpu_uuid);
	u32 st;

	if (gpu < 0)
		return NVA_ERR_INVALID_DEVICE;
	st = uvm_check_rm(p->rm_ctrl_fd, p->h_client, 0, -1);
	if (st)
		return st;
	mutex_lock(&ufd->lock);
	if (ufd->registered_gpus & BIT(gpu)) {
		st = NVA_ERR_IN_USE;
	} else {
		ufd->registered_gpus |= BIT(gpu);
		p->numa_enabled = 0;
		p->numa_node_id = -1;
	}
	mutex_unlock(&ufd->lock);
	return st;
}

static u32 uvm_register_gpu_vaspace(struct uvm_fd *ufd,
				    struct nva_uvm_register_gpu_vaspace *p)
{
	int gpu = nvm_gpu_by_uuid(p->gpu_uuid);
	u32 st;

	if (gpu < 0)
		return NVA_ERR_INVALID_DEVICE;
	st = uvm_check_rm(p->rm_ctrl_fd, p->h_client, p->h_va_space, gpu);
	if (st)
		return st;
	mutex_lock(&ufd->lock);
	if (!(ufd->registered_gpus & BIT(gpu)))
		st = NVA_ERR_INVALID_DEVICE;
	else if (ufd->vaspace_gpus & BIT(gpu))
		st = NVA_ERR_IN_USE;
	else
		ufd->vaspace_gpus |= BIT(gpu);
	mutex_unlock(&ufd->lock);
	return st;
}

static u32 uvm_create_range_group(struct uvm_fd *ufd,
				  struct nva_uvm_create_range_group *p)
{
	mutex_lock(&ufd->lock);
	p->range_group_id = ++ufd->next_range_group;
	mutex_unlock(&ufd->lock);
	return NVA_OK;
}

/* Creates an external or semaphore-pool range. */
static u32 uvm_add_range(struct uvm_fd *ufd, u64 base, u64 length,
			 enum uvm_range_type type)
{
	struct uvm_range *r;
	bool ok;

	if (!uvm_va_ok(base, length))
		return NVA_ERR_INVALID_ADDRESS;
	r = uvm_range_new(base, base + length, type);
	if (!r)
		return NVA_ERR_NO_MEMORY;
	mutex_lock(&ufd->lock);
	ok = uvm_range_insert(ufd, r);
	mutex_unlock(&ufd->lock);
	if (!ok) {
		kfree(r);
		return NVA_ERR_UVM_ADDRESS_IN_USE;
	}
	return NVA_OK;
}

struct uvm_map_args {
	u64 base, length, offset, count;
	const struct nva_uvm_gpu_mapping_attrs *attrs;
	s32 rm_ctrl_fd;
	u32 h_client, h_memory;
};

static u32 uvm_map_external(struct uvm_fd *ufd, const struct uvm_map_args *a)
{
	struct uvm_ext_map *m, *it, *tmp;
	struct nvm_mem *mem = NULL;
	struct nvm_file *nvf;
	struct uvm_range *r;
	LIST_HEAD(dropped);
	struct file *f;
	u32 st = NVA_OK;
	u64 i;
	int gpu;

	if (!uvm_va_ok(a->base, a->length))
		return NVA_ERR_INVALID_ADDRESS;
	if (!a->count || a->count > nvm_layout.uvm_max_gpus)
		return NVA_ERR_INVALID_ARGUMENT;

	nvf = nvm_get_ctl_file(a->rm_ctrl_fd, &f);
	if (!nvf)
		return NVA_ERR_INVALID_ARGUMENT;
	st = nvm_rm_get_mem(nvf, a->h_client, a->h_memory, &mem);
	fput(f);
	if (st)
		return st;
	if (a->offset > mem->size || a->length > mem->size - a->offset) {
		st = NVA_ERR_INVALID_ARGUMENT;
		goto put_mem;
	}
	m = kzalloc(sizeof(*m), GFP_KERNEL_ACCOUNT);
	if (!m) {
		st = NVA_ERR_NO_MEMORY;
		goto put_mem;
	}
	m->start = a->base;
	m->end = a->base + a->length;
	m->mem = mem;

	mutex_lock(&ufd->lock);
	for (i = 0; i < a->count; i++) {
		gpu = nvm_gpu_by_uuid(a->attrs[i].gpu_uuid);
		if (gpu < 0 || !(ufd->registered_gpus & BIT(gpu))) {
			st = NVA_ERR_INVALID_DEVICE;
			goto unlock;
		}
	}
	r = uvm_range_find(ufd, a->base);
	if (!r || r->type != UVM_RANGE_EXTERNAL || m->end > r->end) {
		st = NVA_ERR_INVALID_ADDRESS;
		goto unlock;
	}
	/* A new mapping replaces whatever part of older ones it overlaps. */
	list_for_each_entry_safe(it, tmp, &r->maps, node) {
		if (it->end <= m->start || it->start >= m->end)
			continue;
		list_move(&it->node, &dropped);
	}
	list_add_tail(&m->node, &r->maps);
	m = NULL;
unlock:
	mutex_unlock(&ufd->lock);
	list_for_each_entry_safe(it, tmp, &dropped, node) {
		list_del(&it->node);
		nvm_mem_put(it->mem);
		kfree(it);
	}
	if (!m)
		return st;
	kfree(m);
put_mem:
	nvm_mem_put(mem);
	return st;
}

static u32 uvm_free(struct uvm_fd *ufd, u64 base)
{
	struct uvm_range *r;
	u32 st = NVA_OK;

	mutex_lock(&ufd->lock);
	r = uvm_range_find(ufd, base);
	if (!r || r->start != base || r->type == UVM_RANGE_MANAGED) {
		st = NVA_ERR_INVALID_ADDRESS;
		r = NULL;
	} else {
		rb_erase(&r->node, &ufd->ranges);
		/* a still-mapped semaphore pool keeps its memory until munmap */
		if (r->vm)
			r->vm->range = NULL;
	}
	mutex_unlock(&ufd->lock);
	if (r)
		uvm_range_destroy(r);
	return st;
}

/*
 * VALIDATE_VA_RANGE and DISABLE_READ_DUPLICATION: [base, base + length) must
 * be covered by managed ranges, else NV_ERR_INVALID_ADDRESS.  Nothing else
 * to do: the mock has no GPU copies to duplicate.
 */
static u32 uvm_check_managed(struct uvm_fd *ufd, u64 base, u64 length)
{
	struct uvm_range *r;
	u64 addr = base;
	u32 st = NVA_OK;

	if (!uvm_va_ok(base, length))
		return NVA_ERR_INVALID_ADDRESS;
	mutex_lock(&ufd->lock);
	while (addr < base + length) {
		r = uvm_range_find(ufd, addr);
		if (!r || r->type != UVM_RANGE_MANAGED) {
			st = NVA_ERR_INVALID_ADDRESS;
			break;
		}
		addr = r->end;
	}
	mutex_unlock(&ufd->lock);
	return st;
}

/* ---- dispatch -------------------------------------------------------------- */

struct uvm_cmd {
	size_t size;
	size_t status_off;
};

/* Parameter size and rmStatus offset of a command for this version. */
static bool uvm_cmd_layout(unsigned int cmd, struct uvm_cmd *c)
{
	const struct nva_layout *l = &nvm_layout;

	switch (cmd) {
	case NVA_UVM_INITIALIZE:
		*c = (struct uvm_cmd){ 16, 8 };
		break;
	case NVA_UVM_MM_INITIALIZE:
		*c = (struct uvm_cmd){ 8, 4 };
		break;
	case NVA_UVM_CREATE_RANGE_GROUP:
		*c = (struct uvm_cmd){ 16, 8 };
		break;
	case NVA_UVM_REGISTER_GPU_VASPACE:
		*c = (struct uvm_cmd){ 32, 28 };
		break;
	case NVA_UVM_REGISTER_GPU:
		*c = (struct uvm_cmd){ 40, 36 };
		break;
	case NVA_UVM_PAGEABLE_MEM_ACCESS:
		*c = (struct uvm_cmd){ 8, 4 };
		break;
	case NVA_UVM_CREATE_EXTERNAL_RANGE:
	case NVA_UVM_VALIDATE_VA_RANGE:
	case NVA_UVM_DISABLE_READ_DUPLICATION:
		/* {u64 base; u64 length; u32 rmStatus} */
		*c = (struct uvm_cmd){ 24, 16 };
		break;
	case NVA_UVM_MAP_EXTERNAL_ALLOCATION:
		*c = (struct uvm_cmd){ l->uvm_map_ext, l->uvm_map_ext - 4 };
		break;
	case NVA_UVM_FREE:
		*c = (struct uvm_cmd){ l->uvm_free, l->uvm_free - 8 };
		break;
	case NVA_UVM_ALLOC_SEMAPHORE_POOL:
		*c = (struct uvm_cmd){ l->uvm_sem_pool, l->uvm_sem_pool - 8 };
		break;
	default:
		return false;
	}
	return true;
}

static u32 uvm_do_map_external(struct uvm_fd *ufd, void *buf, size_t size)
{
	const struct nva_uvm_map_external_allocation *p = buf;
	struct uvm_map_args a = {
		.base = p->base,
		.length = p->length,
		.offset = p->offset,
		.attrs = p->per_gpu_attributes,
	};

	if (size == sizeof(*p)) {
		a.count = p->gpu_attributes_count;
		a.rm_ctrl_fd = p->rm_ctrl_fd;
		a.h_client = p->h_client;
		a.h_memory = p->h_memory;
	} else {
		a.count = *(u64 *)(buf + NVA_UVM_MAP_EXT_OLD_OFF_COUNT);
		a.rm_ctrl_fd = *(s32 *)(buf + NVA_UVM_MAP_EXT_OLD_OFF_FD);
		a.h_client = *(u32 *)(buf + NVA_UVM_MAP_EXT_OLD_OFF_CLIENT);
		a.h_memory = *(u32 *)(buf + NVA_UVM_MAP_EXT_OLD_OFF_MEMORY);
	}
	return uvm_map_external(ufd, &a);
}

static u32 uvm_do_sem_pool(struct uvm_fd *ufd, void *buf, size_t size)
{
	const struct nva_uvm_alloc_semaphore_pool *p = buf;
	u64 count;

	if (size == sizeof(*p))
		count = p->gpu_attributes_count;
	else
		count = *(u64 *)(buf + NVA_UVM_SEM_POOL_OLD_OFF_COUNT);
	if (count > nvm_layout.uvm_max_gpus)
		return NVA_ERR_INVALID_ARGUMENT;
	return uvm_add_range(ufd, p->base, p->length, UVM_RANGE_SEMAPHORE_POOL);
}

static u32 uvm_run(struct uvm_fd *ufd, unsigned int cmd, void *buf, size_t size)
{
	switch (cmd) {
	case NVA_UVM_CREATE_RANGE_GROUP:
		return uvm_create_range_group(ufd, buf);
	case NVA_UVM_REGISTER_GPU_VASPACE:
		return uvm_register_gpu_vaspace(ufd, buf);
	case NVA_UVM_REGISTER_GPU:
		return uvm_register_gpu(ufd, buf);
	case NVA_UVM_PAGEABLE_MEM_ACCESS:
		((struct nva_uvm_pageable_mem_access *)buf)->pageable_mem_access = 0;
		return NVA_OK;
	case NVA_UVM_CREATE_EXTERNAL_RANGE: {
		struct nva_uvm_create_external_range *p = buf;

		return uvm_add_range(ufd, p->base, p->length, UVM_RANGE_EXTERNAL);
	}
	case NVA_UVM_VALIDATE_VA_RANGE:
	case NVA_UVM_DISABLE_READ_DUPLICATION: {
		struct nva_uvm_create_external_range *p = buf;

		return uvm_check_managed(ufd, p->base, p->length);
	}
	case NVA_UVM_MAP_EXTERNAL_ALLOCATION:
		return uvm_do_map_external(ufd, buf, size);
	case NVA_UVM_FREE:
		return uvm_free(ufd, *(u64 *)buf);
	case NVA_UVM_ALLOC_SEMAPHORE_POOL:
		return uvm_do_sem_pool(ufd, buf, size);
	}
	return NVA_ERR_NOT_SUPPORTED;
}

static bool uvm_is_va_space(struct uvm_fd *ufd)
{
	bool ret;

	mutex_lock(&ufd->lock);
	ret = ufd->kind == UVM_FD_VA_SPACE;
	mutex_unlock(&ufd->lock);
	return ret;
}

/*
 * Each command copies in sizeof(its params) with no size check, answers in
 * rmStatus and returns 0; unknown commands are -EINVAL [7].
 */
static noinline __noclone long uvm_ioctl(struct file *filp, unsigned int cmd,
					 unsigned long arg)
{
	struct uvm_fd *ufd = filp->private_data;
	void __user *uarg = (void __user *)arg;
	struct uvm_cmd c;
	void *buf;
	u32 st;

	if (cmd == NVA_UVM_DEINITIALIZE)
		return 0;
	if (!uvm_cmd_layout(cmd, &c))
		return -EINVAL;
	buf = kmalloc(c.size, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	if (copy_from_user(buf, uarg, c.size)) {
		kfree(buf);
		return -EFAULT;
	}
	if (cmd == NVA_UVM_INITIALIZE)
		st = uvm_initialize(ufd, buf);
	else if (cmd == NVA_UVM_MM_INITIALIZE)
		st = uvm_mm_initialize(ufd, buf);
	else if (!uvm_is_va_space(ufd))
		st = NVA_ERR_ILLEGAL_ACTION;
	else
		st = uvm_run(ufd, cmd, buf, c.size);
	*(u32 *)(buf + c.status_off) = st;
	if (copy_to_user(uarg, buf, c.size)) {
		kfree(buf);
		return -EFAULT;
	}
	kfree(buf);
	return 0;
}

/* ---- mmap: managed ranges [7] --------------------------------------------- */

static void uvm_vm_free_pages(struct uvm_vm *vm)
{
	unsigned long i;

	/* pages still mapped keep the references the page tables hold */
	for (i = 0; i < vm->npages; i++)
		put_page(vm->pages[i]);
	kvfree(vm->pages);
}

static int uvm_vm_alloc_pages(struct uvm_vm *vm, unsigned long npages)
{
	vm->pages = kvcalloc(npages, sizeof(*vm->pages), GFP_KERNEL_ACCOUNT);
	if (!vm->pages)
		return -ENOMEM;
	for (vm->npages = 0; vm->npages < npages; vm->npages++) {
		if (fatal_signal_pending(current))
			return -EINTR;
		vm->pages[vm->npages] = alloc_page(GFP_HIGHUSER | __GFP_ZERO | __GFP_ACCOUNT);
		if (!vm->pages[vm->npages])
			return -ENOMEM;
	}
	return 0;
}

static void uvm_vm_release(struct kref *ref)
{
	struct uvm_vm *vm = container_of(ref, struct uvm_vm, ref);
	struct uvm_fd *ufd = vm->ufd;
	struct uvm_range *r;

	mutex_lock(&ufd->lock);
	r = vm->range;
	if (r)
		r->vm = NULL;
	if (r && vm->managed)
		rb_erase(&r->node, &ufd->ranges);
	mutex_unlock(&ufd->lock);
	if (vm->managed) {
		kfree(r);
		atomic_dec(&nvm_stat_live_managed);
	}
	uvm_vm_free_pages(vm);
	kfree(vm);
}

static void uvm_vm_open(struct vm_area_struct *vma)
{
	struct uvm_vm *vm = vma->vm_private_data;

	kref_get(&vm->ref);
}

static void uvm_vm_close(struct vm_area_struct *vma)
{
	struct uvm_vm *vm = vma->vm_private_data;

	kref_put(&vm->ref, uvm_vm_release);
}

/* The range is the whole mapping: no partial unmap, no move. */
static int uvm_vm_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

static int uvm_vm_mremap(struct vm_area_struct *vma)
{
	return -EINVAL;
}

static const struct vm_operations_struct uvm_vm_ops = {
	.open = uvm_vm_open,
	.close = uvm_vm_close,
	.may_split = uvm_vm_may_split,
	.mremap = uvm_vm_mremap,
};

static int uvm_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct uvm_fd *ufd = filp->private_data;
	unsigned long len = vma->vm_end - vma->vm_start;
	struct uvm_range *r, *fresh;
	unsigned long npages;
	struct uvm_vm *vm;
	int ret;

	if (!uvm_is_va_space(ufd))
		return -EBADFD;
	/* The offset must be the address: a managed range at that VA. */
	if (vma->vm_pgoff != vma->vm_start >> PAGE_SHIFT)
		return -EINVAL;
	/* Shared and read/write only, so no copy-on-write behind our back. */
	if ((vma->vm_flags & (VM_SHARED | VM_READ | VM_WRITE)) !=
	    (VM_SHARED | VM_READ | VM_WRITE))
		return -EINVAL;
	if (len > NVM_UVM_MAX_MMAP)
		return -ENOMEM;

	vm = kzalloc(sizeof(*vm), GFP_KERNEL_ACCOUNT);
	fresh = uvm_range_new(vma->vm_start, vma->vm_end, UVM_RANGE_MANAGED);
	if (!vm || !fresh) {
		ret = -ENOMEM;
		goto free;
	}
	ret = uvm_vm_alloc_pages(vm, len >> PAGE_SHIFT);
	if (ret)
		goto free;
	npages = vm->npages;
	ret = vm_insert_pages(vma, vma->vm_start, vm->pages, &npages);
	if (ret)
		goto free;
	kref_init(&vm->ref);
	vm->ufd = ufd;

	mutex_lock(&ufd->lock);
	r = uvm_range_find(ufd, vma->vm_start);
	if (r && r->type == UVM_RANGE_SEMAPHORE_POOL && !r->vm &&
	    r->start == vma->vm_start && r->end == vma->vm_end) {
		/* the CPU mapping of a pool made by ALLOC_SEMAPHORE_POOL */
		r->vm = vm;
		vm->range = r;
	} else if (uvm_range_insert(ufd, fresh)) {
		fresh->vm = vm;
		vm->range = fresh;
		vm->managed = true;
		fresh = NULL;
		atomic64_inc(&nvm_stat_managed_ranges);
		atomic_inc(&nvm_stat_live_managed);
	} else {
		ret = -EADDRINUSE;
	}
	mutex_unlock(&ufd->lock);
	if (ret)
		goto free;
	kfree(fresh);

	vma->vm_flags |= VM_MIXEDMAP | VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_private_data = vm;
	vma->vm_ops = &uvm_vm_ops;
	return 0;

free:
	/* the kernel zaps whatever vm_insert_pages() put in the vma */
	if (vm)
		uvm_vm_free_pages(vm);
	kfree(vm);
	kfree(fresh);
	return ret;
}

/* ---- file operations ------------------------------------------------------- */

static int uvm_open(struct inode *inode, struct file *filp)
{
	struct uvm_fd *ufd = kzalloc(sizeof(*ufd), GFP_KERNEL_ACCOUNT);

	if (!ufd)
		return -ENOMEM;
	mutex_init(&ufd->lock);
	ufd->ranges = RB_ROOT;
	filp->private_data = ufd;
	return 0;
}

static void uvm_release(struct uvm_fd *ufd)
{
	struct rb_node *n;

	/* No mapping is left: each one holds a reference to this file. */
	while ((n = rb_first(&ufd->ranges))) {
		struct uvm_range *r = rb_entry(n, struct uvm_range, node);

		rb_erase(n, &ufd->ranges);
		WARN_ON_ONCE(r->vm);
		uvm_range_destroy(r);
	}
	mutex_destroy(&ufd->lock);
	kfree(ufd);
}

static noinline int uvm_open_entry(struct inode *inode, struct file *filp)
{
	return uvm_open(inode, filp);
}

static noinline int uvm_release_entry(struct inode *inode, struct file *filp)
{
	uvm_release(filp->private_data);
	return 0;
}

static noinline int uvm_mmap_entry(struct file *filp, struct vm_area_struct *vma)
{
	return uvm_mmap(filp, vma);
}

static noinline long uvm_unlocked_ioctl_entry(struct file *filp, unsigned int cmd,
					      unsigned long arg)
{
	return uvm_ioctl(filp, cmd, arg);
}

static const struct file_operations uvm_fops = {
	.owner = THIS_MODULE,
	.open = uvm_open_entry,
	.release = uvm_release_entry,
	.mmap = uvm_mmap_entry,
	.unlocked_ioctl = uvm_unlocked_ioctl_entry,
	.compat_ioctl = uvm_unlocked_ioctl_entry,
	.llseek = noop_llseek,
};

/* /dev/nvidia-uvm-tools: opens and closes, nothing else. */
static int uvm_tools_open(struct inode *inode, struct file *filp)
{
	return 0;
}

static long uvm_tools_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	return -EINVAL;
}

static const struct file_operations uvm_tools_fops = {
	.owner = THIS_MODULE,
	.open = uvm_tools_open,
	.unlocked_ioctl = uvm_tools_ioctl,
	.compat_ioctl = uvm_tools_ioctl,
	.llseek = noop_llseek,
};

const struct file_operations *nvm_uvm_fops(void)
{
	return &uvm_fops;
}

const struct file_operations *nvm_uvm_tools_fops(void)
{
	return &uvm_tools_fops;
}
