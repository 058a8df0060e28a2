// SPDX-License-Identifier: GPL-2.0
/*
 * nvmock: the nvidia.ko half.  /dev/nvidiactl and /dev/nvidiaN, the ioctl
 * escapes, and an RM object tree (clients, devices, subdevices, VA spaces,
 * memory) with per-GPU frame-buffer accounting.  Behaviour follows
 * docs/nvidia-abi.md; section numbers are given in brackets.
 *
 * Locking: nvm_rm_lock serialises the object tree, every nvm_file's RM state
 * and the accounting, like RM's own lock.  No user memory is touched and no
 * file reference is taken or dropped while it is held, so it nests inside
 * nothing and nothing nests inside it.
 */

#include <linux/bitfield.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/ioctl.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "nvmock.h"

/* RM's lock: the object tree, every nvm_file's RM state, the accounting */
DEFINE_MUTEX(nvm_rm_lock);

/* Client handles are global: handle -> struct nvm_client. */
static DEFINE_XARRAY(nvm_clients);
static u32 nvm_next_client;

#define NVM_CLIENT_HANDLE_BASE	0xc1d00000u
#define NVM_OBJECT_HANDLE_BASE	0xcaf00000u
#define NVM_HANDLE_SPAN		0x100000u

#define NVM_MAX_OS_EVENTS	1024
/* Sizes above this are refused with NV_ERR_NO_MEMORY for uncharged memory. */
#define NVM_MAX_UNCHARGED	BIT_ULL(48)

struct nvm_os_event {
	struct list_head node;
	u32 h_client;
	u32 fd;
};

/* Per open /dev/nvidia* file. */
struct nvm_file {
	bool ctl;
	unsigned int minor;
	/* The rest is under nvm_rm_lock. */
	struct list_head clients;
	struct list_head events;
	unsigned int n_events;
	bool fd_registered;	/* REGISTER_FD linked this fd */
	bool ctl_taken;		/* this control fd was the target of a link */
	bool gpus_attached;
	u32 attached_mask;
};

struct nvm_client;

struct nvm_obj {
	u32 handle;
	u32 cls;
	struct nvm_client *client;
	struct nvm_obj *parent;
	struct list_head children;
	struct list_head sibling;
	int gpu;		/* device, subdevice, VA space, vidmem: GPU index */
	u32 sub_id;		/* subdevice */
	struct nvm_mem *mem;	/* memory classes */
};

struct nvm_client {
	struct nvm_obj root;	/* class 0x41, handle = client handle */
	struct nvm_file *owner;
	struct list_head file_node;
	struct xarray objs;	/* handle -> nvm_obj, root included */
	u32 next_handle;
};

static bool nvm_is_device(const struct nvm_obj *obj)
{
	return obj->cls == NVA_CLASS_DEVICE || obj->cls == NVA_CLASS_SUBDEVICE;
}

/* ---- accounting ---------------------------------------------------------- */

static void nvm_mem_put_locked(struct nvm_mem *mem)
{
	struct nvm_gpu *g;

	lockdep_assert_held(&nvm_rm_lock);
	if (!refcount_dec_and_test(&mem->refs))
		return;
	if (mem->gpu >= 0) {
		g = &nvm_gpus[mem->gpu];
		WRITE_ONCE(g->used, g->used - mem->size);
		WRITE_ONCE(g->live_allocs, g->live_allocs - 1);
	}
	kfree(mem);
}

void nvm_mem_put(struct nvm_mem *mem)
{
	mutex_lock(&nvm_rm_lock);
	nvm_mem_put_locked(mem);
	mutex_unlock(&nvm_rm_lock);
}

/*
 * Size rounding of [10.11], as cgpu's admission predicts it (nv_abi.h): the
 * page size comes from attr PAGE_SIZE, DEFAULT picks 2 MiB from 2 MiB up
 * and 64 KiB below (4 KiB for system memory); the size is rounded up to it,
 * the alignment is the page, and attr/attr2 are written back with it.
 */
static u32 nvm_mem_round(u32 cls, u64 cap, u32 *attr, u32 *attr2, u64 *size,
			 u64 *align)
{
	int sysmem = cls == NVA_CLASS_MEMORY_SYSTEM;
	u32 pg;
	u64 page;

	if (*size == 0)
		return NVA_ERR_INVALID_ARGUMENT;
	if (*size > cap)
		return NVA_ERR_NO_MEMORY;
	pg = nva_page_size_attr(*attr, *size, sysmem);
	page = nva_page_bytes(pg);
	/* size <= cap <= 2^48, so this cannot wrap */
	*size = nva_alloc_size(*attr, *size, sysmem);
	if (pg == NVA_ATTR_PAGE_SIZE_HUGE) {
		*attr2 &= ~NVA_ATTR2_PAGE_SIZE_HUGE_MASK;
		*attr2 |= FIELD_PREP(NVA_ATTR2_PAGE_SIZE_HUGE_MASK,
				     NVA_ATTR2_PAGE_SIZE_HUGE_2MB);
	}
	*attr &= ~NVA_ATTR_PAGE_SIZE_MASK;
	*attr |= FIELD_PREP(NVA_ATTR_PAGE_SIZE_MASK, pg);
	*align = page;
	return NVA_OK;
}

/* Makes an allocation of p->size bytes; charges vidmem to GPU gpu. */
static u32 nvm_mem_create(u32 cls, int gpu, struct nva_memory_alloc_params *p,
			  struct nvm_mem **out)
{
	struct nvm_gpu *g = &nvm_gpus[gpu];
	bool charged = cls == NVA_CLASS_MEMORY_LOCAL_USER;
	struct nvm_mem *mem;
	u64 size = p->size, align;
	u32 attr = p->attr, attr2 = p->attr2;
	u32 st;

	lockdep_assert_held(&nvm_rm_lock);
	st = nvm_mem_round(cls, charged ? g->total : NVM_MAX_UNCHARGED,
			   &attr, &attr2, &size, &align);
	if (st)
		return st;
	if (charged && size > g->total - g->used)
		return NVA_ERR_NO_MEMORY;
	mem = kzalloc(sizeof(*mem), GFP_KERNEL_ACCOUNT);
	if (!mem)
		return NVA_ERR_NO_MEMORY;
	refcount_set(&mem->refs, 1);
	mem->cls = cls;
	mem->size = size;
	mem->gpu = charged ? gpu : -1;
	if (charged) {
		WRITE_ONCE(g->used, g->used + size);
		WRITE_ONCE(g->live_allocs, g->live_allocs + 1);
	}
	p->size = size;
	p->alignment = align;
	p->limit = size - 1;
	p->attr = attr;
	p->attr2 = attr2;
	p->offset = 0;
	*out = mem;
	return NVA_OK;
}

/* ---- object tree --------------------------------------------------------- */

static struct nvm_client *nvm_client_find(u32 h)
{
	lockdep_assert_held(&nvm_rm_lock);
	return xa_load(&nvm_clients, h);
}

/* Looks up a client that nvf may use: unknown 0x33, another fd's 0x23. */
static u32 nvm_client_get(struct nvm_file *nvf, u32 h, struct nvm_client **out)
{
	struct nvm_client *c = nvm_client_find(h);

	if (!c)
		return NVA_ERR_INVALID_OBJECT_HANDLE;
	if (c->owner != nvf)
		return NVA_ERR_INVALID_CLIENT;
	*out = c;
	return NVA_OK;
}

static struct nvm_obj *nvm_obj_find(struct nvm_client *c, u32 h)
{
	return xa_load(&c->objs, h);
}

static u32 nvm_pick_handle(struct xarray *xa, u32 base, u32 *next)
{
	u32 i, h;

	for (i = 0; i < NVM_HANDLE_SPAN; i++) {
		h = base | (*next & (NVM_HANDLE_SPAN - 1));
		(*next)++;
		if (!xa_load(xa, h))
			return h;
	}
	return 0;
}

static void nvm_obj_free(struct nvm_obj *obj)
{
	struct nvm_obj *child, *tmp;

	/* Children first, the object last [10.3]; the tree is at most 4 deep. */
	list_for_each_entry_safe(child, tmp, &obj->children, sibling)
		nvm_obj_free(child);
	list_del_init(&obj->sibling);
	xa_erase(&obj->client->objs, obj->handle);
	if (obj->mem)
		nvm_mem_put_locked(obj->mem);
	if (obj != &obj->client->root)
		kfree(obj);
}

static void nvm_events_free_client(struct nvm_file *nvf, u32 h_client)
{
	struct nvm_os_event *ev, *tmp;

	list_for_each_entry_safe(ev, tmp, &nvf->events, node) {
		if (ev->h_client != h_client)
			continue;
		list_del(&ev->node);
		nvf->n_events--;
		kfree(ev);
	}
}

static void nvm_client_free(struct nvm_client *c)
{
	lockdep_assert_held(&nvm_rm_lock);
	nvm_obj_free(&c->root);
	xa_erase(&nvm_clients, c->root.handle);
	list_del(&c->file_node);
	nvm_events_free_client(c->owner, c->root.handle);
	xa_destroy(&c->objs);
	atomic_dec(&nvm_stat_clients);
	kfree(c);
}

static u32 nvm_client_alloc(struct nvm_file *nvf, u32 *handle)
{
	struct nvm_client *c;
	u32 h = *handle;
	int err;

	lockdep_assert_held(&nvm_rm_lock);
	if (h && xa_load(&nvm_clients, h))
		return NVA_ERR_INSERT_DUPLICATE_NAME;
	if (!h)
		h = nvm_pick_handle(&nvm_clients, NVM_CLIENT_HANDLE_BASE,
				    &nvm_next_client);
	if (!h)
		return NVA_ERR_INSUFFICIENT_RESOURCES;
	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		return NVA_ERR_NO_MEMORY;
	xa_init(&c->objs);
	c->owner = nvf;
	c->root.handle = h;
	c->root.cls = NVA_CLASS_ROOT_CLIENT;
	c->root.client = c;
	c->root.gpu = -1;
	INIT_LIST_HEAD(&c->root.children);
	INIT_LIST_HEAD(&c->root.sibling);
	err = xa_insert(&c->objs, h, &c->root, GFP_KERNEL_ACCOUNT);
	if (err)
		goto free_client;
	err = xa_insert(&nvm_clients, h, c, GFP_KERNEL_ACCOUNT);
	if (err)
		goto free_objs;
	list_add_tail(&c->file_node, &nvf->clients);
	atomic_inc(&nvm_stat_clients);
	*handle = h;
	return NVA_OK;

free_objs:
	xa_destroy(&c->objs);
free_client:
	kfree(c);
	return err == -EBUSY ? NVA_ERR_INSERT_DUPLICATE_NAME : NVA_ERR_NO_MEMORY;
}

/* Picks or checks the new handle and links a fresh object under parent. */
static u32 nvm_obj_add(struct nvm_client *c, struct nvm_obj *parent, u32 *handle,
		       u32 cls, struct nvm_obj **out)
{
	struct nvm_obj *obj;
	u32 h = *handle;

	if (h && nvm_obj_find(c, h))
		return NVA_ERR_INSERT_DUPLICATE_NAME;
	if (!h)
		h = nvm_pick_handle(&c->objs, NVM_OBJECT_HANDLE_BASE, &c->next_handle);
	if (!h)
		return NVA_ERR_INSUFFICIENT_RESOURCES;
	obj = kzalloc(sizeof(*obj), GFP_KERNEL_ACCOUNT);
	if (!obj)
		return NVA_ERR_NO_MEMORY;
	obj->handle = h;
	obj->cls = cls;
	obj->client = c;
	obj->parent = parent;
	obj->gpu = parent->gpu;
	INIT_LIST_HEAD(&obj->children);
	if (xa_insert(&c->objs, h, obj, GFP_KERNEL_ACCOUNT)) {
		kfree(obj);
		return NVA_ERR_NO_MEMORY;
	}
	list_add_tail(&obj->sibling, &parent->children);
	*handle = h;
	*out = obj;
	return NVA_OK;
}

static bool nvm_class_known(u32 cls)
{
	switch (cls) {
	case NVA_CLASS_DEVICE:
	case NVA_CLASS_SUBDEVICE:
	case NVA_CLASS_VASPACE:
	case NVA_CLASS_MEMORY_LOCAL_USER:
	case NVA_CLASS_MEMORY_SYSTEM:
	case NVA_CLASS_MEMORY_VIRTUAL:
		return true;
	}
	return false;
}

/*
 * Allocates an object of class cls (not a client) under (h_root, h_parent).
 * params is the kernel copy of the class's parameters or NULL; memory
 * parameters are updated in place.
 */
static u32 nvm_alloc_locked(struct nvm_file *nvf, u32 h_root, u32 h_parent,
			    u32 *h_new, u32 cls, void *params,
			    struct nvm_mem **out_mem)
{
	struct nvm_client *c;
	struct nvm_obj *parent, *obj, *sib;
	struct nvm_mem *mem = NULL;
	u32 st, id = 0;

	lockdep_assert_held(&nvm_rm_lock);
	if (!nvm_class_known(cls))
		return NVA_ERR_INVALID_CLASS;
	st = nvm_client_get(nvf, h_root, &c);
	if (st)
		return st;
	parent = nvm_obj_find(c, h_parent);
	if (!parent)
		return NVA_ERR_INVALID_OBJECT_PARENT;
	if (*h_new && nvm_obj_find(c, *h_new))
		return NVA_ERR_INSERT_DUPLICATE_NAME;

	switch (cls) {
	case NVA_CLASS_DEVICE:			/* [10.2] */
		if (parent->cls != NVA_CLASS_ROOT_CLIENT)
			return NVA_ERR_INVALID_OBJECT_PARENT;
		if (params)
			id = ((struct nva_device_alloc_params *)params)->device_id;
		if (id >= NVA_MAX_DEVICE_INSTANCES || id >= nvm_num_gpus)
			return NVA_ERR_INVALID_CLASS;
		break;
	case NVA_CLASS_SUBDEVICE:
		if (parent->cls != NVA_CLASS_DEVICE)
			return NVA_ERR_INVALID_OBJECT_PARENT;
		if (params)
			id = ((struct nva_subdevice_alloc_params *)params)->sub_device_id;
		if (id != 0)
			return NVA_ERR_INVALID_CLASS;
		list_for_each_entry(sib, &parent->children, sibling)
			if (sib->cls == NVA_CLASS_SUBDEVICE && sib->sub_id == id)
				return NVA_ERR_INSUFFICIENT_RESOURCES;
		break;
	case NVA_CLASS_VASPACE:
		if (parent->cls != NVA_CLASS_DEVICE)
			return NVA_ERR_INVALID_OBJECT_PARENT;
		break;
	default:				/* memory [4] */
		if (!nvm_is_device(parent))
			return NVA_ERR_INVALID_OBJECT_PARENT;
		if (!params)
			return NVA_ERR_INVALID_ARGUMENT;
		st = nvm_mem_create(cls, parent->gpu, params, &mem);
		if (st)
			return st;
		break;
	}

	st = nvm_obj_add(c, parent, h_new, cls, &obj);
	if (st) {
		if (mem)
			nvm_mem_put_locked(mem);
		return st;
	}
	if (cls == NVA_CLASS_DEVICE)
		obj->gpu = id;
	obj->sub_id = id;
	obj->mem = mem;
	if (out_mem)
		*out_mem = mem;
	return NVA_OK;
}

/* RM_FREE semantics [10.3], also used by VID_HEAP_CONTROL FREE. */
static u32 nvm_free_locked(struct nvm_file *nvf, u32 h_root, u32 h_old)
{
	struct nvm_client *c;
	struct nvm_obj *obj;
	u32 st;

	lockdep_assert_held(&nvm_rm_lock);
	st = nvm_client_get(nvf, h_root, &c);
	if (st)
		return st;
	if (h_old == h_root) {
		nvm_client_free(c);
		return NVA_OK;
	}
	obj = nvm_obj_find(c, h_old);
	if (obj)
		nvm_obj_free(obj);
	return NVA_OK;	/* unknown object: NV_OK (RS_COMPATABILITY_MODE) */
}

/*
 * Frees a memory object again after its parameters could not be copied out,
 * unless another thread of the fd already freed it (and maybe reused the
 * handle): it goes only if it still holds the same allocation.
 */
static void nvm_free_quietly(struct nvm_file *nvf, u32 h_root, u32 h_obj,
			     const struct nvm_mem *mem)
{
	struct nvm_client *c;
	struct nvm_obj *obj;

	mutex_lock(&nvm_rm_lock);
	if (!nvm_client_get(nvf, h_root, &c)) {
		obj = nvm_obj_find(c, h_obj);
		if (obj && obj->mem == mem)
			nvm_obj_free(obj);
	}
	mutex_unlock(&nvm_rm_lock);
}

/* ---- helpers for the UVM half -------------------------------------------- */

u32 nvm_rm_check_client(struct nvm_file *nvf, u32 h_client)
{
	struct nvm_client *c;
	u32 st;

	mutex_lock(&nvm_rm_lock);
	st = nvm_client_get(nvf, h_client, &c);
	mutex_unlock(&nvm_rm_lock);
	return st;
}

u32 nvm_rm_check_vaspace(struct nvm_file *nvf, u32 h_client, u32 h_va_space,
			 int gpu)
{
	struct nvm_client *c;
	struct nvm_obj *obj;
	u32 st;

	mutex_lock(&nvm_rm_lock);
	st = nvm_client_get(nvf, h_client, &c);
	if (st)
		goto out;
	obj = nvm_obj_find(c, h_va_space);
	if (!obj)
		st = NVA_ERR_OBJECT_NOT_FOUND;
	else if (obj->cls != NVA_CLASS_VASPACE || obj->gpu != gpu)
		st = NVA_ERR_INVALID_ARGUMENT;
out:
	mutex_unlock(&nvm_rm_lock);
	return st;
}

u32 nvm_rm_get_mem(struct nvm_file *nvf, u32 h_client, u32 h_memory,
		   struct nvm_mem **out)
{
	struct nvm_client *c;
	struct nvm_obj *obj;
	u32 st;

	mutex_lock(&nvm_rm_lock);
	st = nvm_client_get(nvf, h_client, &c);
	if (st)
		goto out;
	obj = nvm_obj_find(c, h_memory);
	if (!obj) {
		st = NVA_ERR_OBJECT_NOT_FOUND;
	} else if (!obj->mem || obj->cls == NVA_CLASS_MEMORY_VIRTUAL) {
		st = NVA_ERR_INVALID_ARGUMENT;
	} else {
		refcount_inc(&obj->mem->refs);
		*out = obj->mem;
	}
out:
	mutex_unlock(&nvm_rm_lock);
	return st;
}

/* ---- escapes --------------------------------------------------------------- */

static int nvm_esc_card_info(struct nvm_file *nvf, void *buf, u32 size)
{
	struct nva_card_info *ci = buf;
	u32 n = size / sizeof(*ci), i;

	memset(buf, 0, size);
	if (n < nvm_num_gpus)
		return -EINVAL;	/* the zeroed buffer is still copied back */
	for (i = 0; i < nvm_num_gpus; i++) {
		const struct nvm_gpu *g = &nvm_gpus[i];

		ci[i].valid = 1;
		ci[i].pci_domain = 0;
		ci[i].pci_bus = g->bus;
		ci[i].pci_slot = 0;
		ci[i].pci_vendor_id = NVM_PCI_VENDOR;
		ci[i].pci_device_id = NVM_PCI_DEVICE;
		ci[i].gpu_id = g->gpu_id;
		ci[i].interrupt_line = 16 + i;
		ci[i].reg_address = 0xf0000000ull + ((u64)i << 24);
		ci[i].reg_size = 1ull << 24;
		ci[i].fb_address = 0x38000000000ull + ((u64)i << 36);
		ci[i].fb_size = g->total;
		ci[i].minor_number = i;
	}
	return 0;
}

/* [10.5] */
static int nvm_esc_check_version(struct nva_rm_api_version *v)
{
	char theirs[NVA_RM_API_VERSION_STRING_LEN + 1];
	const char *mine = nvm_version;
	bool ok = false;
	size_t i;

	v->reply = NVA_RM_API_VERSION_REPLY_RECOGNIZED;
	switch (v->cmd) {
	case NVA_RM_API_VERSION_CMD_QUERY:
		memset(v->version_string, 0, sizeof(v->version_string));
		strscpy(v->version_string, mine, sizeof(v->version_string));
		return 0;
	case NVA_RM_API_VERSION_CMD_STRICT:
	case NVA_RM_API_VERSION_CMD_RELAXED:
		for (i = 0; i < sizeof(v->version_string); i++) {
			if (v->version_string[i] != mine[i])
				break;
			if (mine[i] == '\0' ||
			    (mine[i] == '.' && v->cmd == NVA_RM_API_VERSION_CMD_RELAXED)) {
				ok = true;
				break;
			}
		}
		break;
	}
	if (ok)
		return 0;
	/* the client's string is arbitrary bytes: log a printable copy */
	for (i = 0; i < sizeof(v->version_string) && v->version_string[i]; i++)
		theirs[i] = v->version_string[i] >= 0x20 && v->version_string[i] < 0x7f ?
			    v->version_string[i] : '?';
	theirs[i] = '\0';
	pr_info_ratelimited("API mismatch: the client has version \"%s\", this mock is %s\n",
			    theirs, mine);
	memset(v->version_string, 0, sizeof(v->version_string));
	strscpy(v->version_string, mine, sizeof(v->version_string));
	return -EINVAL;
}

static int nvm_esc_register_fd(struct nvm_file *nvf, struct nva_register_fd *p)
{
	struct nvm_file *ctl;
	struct file *f;
	int ret = 0;

	ctl = nvm_get_ctl_file(p->ctl_fd, &f);
	if (!ctl)
		return -EINVAL;
	mutex_lock(&nvm_rm_lock);
	if (ctl == nvf || nvf->fd_registered || ctl->ctl_taken) {
		ret = -EINVAL;
	} else {
		nvf->fd_registered = true;
		ctl->ctl_taken = true;
	}
	mutex_unlock(&nvm_rm_lock);
	fput(f);
	return ret;
}

static int nvm_esc_attach_gpus(struct nvm_file *nvf, u32 *ids, u32 n)
{
	u32 mask = 0, i, g;
	int ret = 0;

	for (i = 0; i < n; i++) {
		if (!ids[i])
			continue;
		for (g = 0; g < nvm_num_gpus; g++)
			if (nvm_gpus[g].gpu_id == ids[i])
				break;
		if (g == nvm_num_gpus)
			return -EINVAL;	/* nothing was attached: no rollback */
		mask |= BIT(g);
	}
	mutex_lock(&nvm_rm_lock);
	if (nvf->gpus_attached) {
		ret = -EINVAL;
	} else {
		nvf->gpus_attached = true;
		nvf->attached_mask = mask;
	}
	mutex_unlock(&nvm_rm_lock);
	return ret;
}

static void nvm_esc_os_event(struct nvm_file *nvf, struct nva_os_event *p,
			     bool alloc)
{
	struct nvm_os_event *ev, *found = NULL;

	mutex_lock(&nvm_rm_lock);
	list_for_each_entry(ev, &nvf->events, node) {
		if (ev->h_client == p->h_client && ev->fd == p->fd) {
			found = ev;
			break;
		}
	}
	if (!alloc) {
		if (found) {
			list_del(&found->node);
			nvf->n_events--;
			kfree(found);
			p->status = NVA_OK;
		} else {
			p->status = NVA_ERR_INVALID_EVENT;
		}
	} else if (found || nvf->n_events >= NVM_MAX_OS_EVENTS) {
		p->status = NVA_ERR_INSUFFICIENT_RESOURCES;
	} else {
		ev = kzalloc(sizeof(*ev), GFP_KERNEL_ACCOUNT);
		if (ev) {
			ev->h_client = p->h_client;
			ev->fd = p->fd;
			list_add_tail(&ev->node, &nvf->events);
			nvf->n_events++;
			p->status = NVA_OK;
		} else {
			p->status = NVA_ERR_NO_MEMORY;
		}
	}
	mutex_unlock(&nvm_rm_lock);
}

/* Size of the class's allocation parameters; RM ignores paramsSize [3]. */
static size_t nvm_alloc_params_size(u32 cls)
{
	switch (cls) {
	case NVA_CLASS_DEVICE:
		return sizeof(struct nva_device_alloc_params);
	case NVA_CLASS_SUBDEVICE:
		return sizeof(struct nva_subdevice_alloc_params);
	case NVA_CLASS_MEMORY_LOCAL_USER:
	case NVA_CLASS_MEMORY_SYSTEM:
	case NVA_CLASS_MEMORY_VIRTUAL:
		return nvm_layout.mem_params;
	}
	return 0;
}

/* NV_ESC_RM_ALLOC with NVOS21 or NVOS64. */
static int nvm_esc_rm_alloc(struct nvm_file *nvf, void *buf, u32 size)
{
	struct nva_os21_alloc *a21 = buf;
	struct nva_os64_alloc *a64 = buf;
	u32 h_root, h_parent, h_new, cls, *status, st;
	union {
		struct nva_device_alloc_params dev;
		struct nva_subdevice_alloc_params sub;
		struct nva_memory_alloc_params mem;
	} params;
	struct nvm_mem *mem = NULL;
	void __user *uparams;
	size_t psize;

	/* The four leading handles are common to both forms. */
	h_root = a21->h_root;
	h_parent = a21->h_object_parent;
	h_new = a21->h_object_new;
	cls = a21->h_class;
	if (size == sizeof(*a21)) {
		uparams = u64_to_user_ptr(a21->p_alloc_parms);
		status = &a21->status;
	} else {
		uparams = u64_to_user_ptr(a64->p_alloc_parms);
		status = &a64->status;
	}
	/* Every class but OS events is control-node only [2]. */
	if (cls != NVA_CLASS_EVENT_OS_EVENT && !nvf->ctl)
		return -EINVAL;
	if (cls == NVA_CLASS_ROOT || cls == NVA_CLASS_ROOT_NON_PRIV)
		cls = NVA_CLASS_ROOT_CLIENT;

	if (cls == NVA_CLASS_ROOT_CLIENT) {
		mutex_lock(&nvm_rm_lock);
		st = nvm_client_alloc(nvf, &h_new);
		mutex_unlock(&nvm_rm_lock);
		goto out;
	}

	psize = nvm_alloc_params_size(cls);
	memset(&params, 0, sizeof(params));
	if (psize && uparams && copy_from_user(&params, uparams, psize)) {
		st = NVA_ERR_INVALID_POINTER;
		goto out;
	}
	mutex_lock(&nvm_rm_lock);
	st = nvm_alloc_locked(nvf, h_root, h_parent, &h_new, cls,
			      psize && uparams ? &params : NULL, &mem);
	mutex_unlock(&nvm_rm_lock);
	if (st == NVA_OK && mem && copy_to_user(uparams, &params, psize)) {
		nvm_free_quietly(nvf, h_root, h_new, mem);
		st = NVA_ERR_INVALID_POINTER;
	}
out:
	if (st == NVA_OK)
		a21->h_object_new = h_new;
	*status = st;
	return 0;
}

static int nvm_esc_rm_free(struct nvm_file *nvf, struct nva_os00_free *p)
{
	mutex_lock(&nvm_rm_lock);
	p->status = nvm_free_locked(nvf, p->h_root, p->h_object_old);
	mutex_unlock(&nvm_rm_lock);
	return 0;
}

/* [10.1] */
static int nvm_esc_rm_dup(struct nvm_file *nvf, struct nva_os55_dup *p)
{
	struct nvm_client *dst, *src;
	struct nvm_obj *sobj, *parent, *obj;
	u32 h = p->h_object, st;

	mutex_lock(&nvm_rm_lock);
	st = nvm_client_get(nvf, p->h_client, &dst);
	if (st)
		goto out;
	src = nvm_client_find(p->h_client_src);
	if (!src) {
		st = NVA_ERR_INVALID_OBJECT_HANDLE;
		goto out;
	}
	sobj = nvm_obj_find(src, p->h_object_src);
	parent = nvm_obj_find(dst, p->h_parent);
	if (!sobj || !parent) {
		st = NVA_ERR_OBJECT_NOT_FOUND;
		goto out;
	}
	/* Only memory can be duplicated here, under a device of its GPU. */
	if (!sobj->mem || !nvm_is_device(parent) ||
	    (sobj->mem->gpu >= 0 && sobj->mem->gpu != parent->gpu)) {
		st = NVA_ERR_INVALID_ARGUMENT;
		goto out;
	}
	st = nvm_obj_add(dst, parent, &h, sobj->cls, &obj);
	if (st)
		goto out;
	refcount_inc(&sobj->mem->refs);
	obj->mem = sobj->mem;
	p->h_object = h;
out:
	mutex_unlock(&nvm_rm_lock);
	p->status = st;
	return 0;
}

static int nvm_esc_rm_share(struct nvm_file *nvf, struct nva_os57_share *p)
{
	struct nvm_client *c;

	mutex_lock(&nvm_rm_lock);
	p->status = nvm_client_get(nvf, p->h_client, &c);
	if (!p->status && !nvm_obj_find(c, p->h_object))
		p->status = NVA_ERR_OBJECT_NOT_FOUND;
	mutex_unlock(&nvm_rm_lock);
	return 0;
}

/* ---- RM_CONTROL -------------------------------------------------------------- */

static u32 nvm_fb_info(int gpu, struct nva_fb_info *list, u32 n)
{
	const struct nvm_gpu *g = &nvm_gpus[gpu];
	u32 total_kib = g->total >> 10;
	u32 free_kib = (g->total - g->used) >> 10;
	u32 i;

	lockdep_assert_held(&nvm_rm_lock);
	for (i = 0; i < n; i++) {
		switch (list[i].index) {
		case NVA_FB_INFO_RAM_SIZE:
		case NVA_FB_INFO_TOTAL_RAM_SIZE:
		case NVA_FB_INFO_HEAP_SIZE:
		case NVA_FB_INFO_USABLE_RAM_SIZE:
		case NVA_FB_INFO_MAPPABLE_HEAP_SIZE:
			list[i].data = total_kib;
			break;
		case NVA_FB_INFO_HEAP_FREE:
			list[i].data = free_kib;
			break;
		case NVA_FB_INFO_BAR1_SIZE:
			list[i].data = min_t(u32, total_kib, 256 * 1024);
			break;
		case NVA_FB_INFO_HEAP_START:
			list[i].data = 0;
			break;
		default:
			return NVA_ERR_INVALID_ARGUMENT;
		}
	}
	return NVA_OK;
}

struct nvm_ctrl_ctx {
	struct nvm_file *nvf;
	struct nva_os54_control *ctl;
	void *params;			/* kernel copy */
	struct nva_fb_info *list;	/* deprecated FB_GET_INFO list */
	u32 list_n;
};

/* Runs the command on its object under the lock. */
static u32 nvm_ctrl_locked(struct nvm_ctrl_ctx *x)
{
	struct nva_os54_control *ctl = x->ctl;
	struct nvm_client *c;
	struct nvm_obj *obj;
	u32 st, i;

	st = nvm_client_get(x->nvf, ctl->h_client, &c);
	if (st)
		return st;
	obj = nvm_obj_find(c, ctl->h_object);
	if (!obj)
		return NVA_ERR_INVALID_OBJECT_HANDLE;

	switch (ctl->cmd) {
	case NVA_CTRL_GPU_GET_ATTACHED_IDS: {
		struct nva_gpu_get_attached_ids *p = x->params;

		if (obj->cls != NVA_CLASS_ROOT_CLIENT)
			return NVA_ERR_NOT_SUPPORTED;
		for (i = 0; i < NVA_MAX_ATTACHED_GPUS; i++)
			p->gpu_ids[i] = i < nvm_num_gpus ? nvm_gpus[i].gpu_id :
							   NVA_GPU_INVALID_ID;
		return NVA_OK;
	}
	case NVA_CTRL_GPU_GET_ID_INFO_V2: {
		struct nva_gpu_get_id_info_v2 *p = x->params;

		if (obj->cls != NVA_CLASS_ROOT_CLIENT)
			return NVA_ERR_NOT_SUPPORTED;
		for (i = 0; i < nvm_num_gpus; i++)
			if (nvm_gpus[i].gpu_id == p->gpu_id)
				break;
		if (i == nvm_num_gpus)
			return NVA_ERR_INVALID_ARGUMENT;
		memset(p, 0, sizeof(*p));
		p->gpu_id = nvm_gpus[i].gpu_id;
		p->device_instance = i;
		p->sub_device_instance = 0;
		return NVA_OK;
	}
	case NVA_CTRL_FB_GET_INFO_V2: {
		struct nva_fb_get_info_v2 *p = x->params;

		if (obj->cls != NVA_CLASS_SUBDEVICE)
			return NVA_ERR_NOT_SUPPORTED;
		if (p->fb_info_list_size > nvm_layout.fb_info_max)
			return NVA_ERR_INVALID_ARGUMENT;
		return nvm_fb_info(obj->gpu, p->fb_info_list, p->fb_info_list_size);
	}
	case NVA_CTRL_FB_GET_INFO:
		if (obj->cls != NVA_CLASS_SUBDEVICE)
			return NVA_ERR_NOT_SUPPORTED;
		return nvm_fb_info(obj->gpu, x->list, x->list_n);
	}
	return NVA_ERR_NOT_SUPPORTED;
}

static int nvm_esc_rm_control(struct nvm_file *nvf, struct nva_os54_control *ctl)
{
	struct nvm_ctrl_ctx x = { .nvf = nvf, .ctl = ctl };
	void __user *up = u64_to_user_ptr(ctl->params);
	void __user *ulist = NULL;
	size_t psize, lsize = 0;
	u32 st;

	switch (ctl->cmd) {
	case NVA_CTRL_GPU_GET_ATTACHED_IDS:
		psize = sizeof(struct nva_gpu_get_attached_ids);
		break;
	case NVA_CTRL_GPU_GET_ID_INFO_V2:
		psize = sizeof(struct nva_gpu_get_id_info_v2);
		break;
	case NVA_CTRL_FB_GET_INFO_V2:
		psize = nvm_layout.fb_info_v2;
		break;
	case NVA_CTRL_FB_GET_INFO:
		psize = sizeof(struct nva_fb_get_info);
		break;
	default:
		ctl->status = NVA_ERR_NOT_SUPPORTED;
		return 0;
	}
	if (ctl->params_size != psize) {
		ctl->status = NVA_ERR_INVALID_PARAM_STRUCT;
		return 0;
	}
	if (!up) {
		ctl->status = NVA_ERR_INVALID_ARGUMENT;
		return 0;
	}
	x.params = kzalloc(psize, GFP_KERNEL);
	if (!x.params) {
		ctl->status = NVA_ERR_NO_MEMORY;
		return 0;
	}
	if (copy_from_user(x.params, up, psize)) {
		st = NVA_ERR_INVALID_POINTER;
		goto out;
	}
	if (ctl->cmd == NVA_CTRL_FB_GET_INFO) {
		struct nva_fb_get_info *p = x.params;

		/* embedded pointer: at most one V2 list of entries [10.9] */
		if (p->fb_info_list_size > nvm_layout.fb_info_max) {
			st = NVA_ERR_INVALID_ARGUMENT;
			goto out;
		}
		x.list_n = p->fb_info_list_size;
		lsize = x.list_n * sizeof(*x.list);
		ulist = u64_to_user_ptr(p->fb_info_list);
		if (lsize && !ulist) {
			st = NVA_ERR_INVALID_ARGUMENT;
			goto out;
		}
		x.list = lsize ? memdup_user(ulist, lsize) : NULL;
		if (IS_ERR(x.list)) {
			st = PTR_ERR(x.list) == -EFAULT ? NVA_ERR_INVALID_POINTER :
							 NVA_ERR_NO_MEMORY;
			x.list = NULL;
			goto out;
		}
	}
	mutex_lock(&nvm_rm_lock);
	st = nvm_ctrl_locked(&x);
	mutex_unlock(&nvm_rm_lock);
	if (st)
		goto out;
	if (copy_to_user(up, x.params, psize) ||
	    (lsize && copy_to_user(ulist, x.list, lsize)))
		st = NVA_ERR_INVALID_POINTER;
out:
	kfree(x.list);
	kfree(x.params);
	ctl->status = st;
	return 0;
}

/* ---- VID_HEAP_CONTROL [10.9] [10.10] ----------------------------------------- */

static void nvm_vidheap_alloc(struct nvm_file *nvf, struct nva_os32_vidheap *p)
{
	struct nva_os32_alloc_size *a = &p->data.alloc_size;
	struct nva_memory_alloc_params mp = {
		.owner = a->owner,
		.type = a->type,
		.flags = a->flags,
		.width = a->width,
		.height = a->height,
		.attr = a->attr,
		.attr2 = a->attr2,
		.format = a->format,
		.size = a->size,
		.alignment = a->alignment,
		.offset = a->offset,
		.h_va_space = p->h_va_space,
	};
	u32 h = (a->flags & NVA_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED) ? a->h_memory : 0;
	u32 cls;

	if (a->flags & NVA_ALLOC_FLAGS_VIRTUAL)
		cls = NVA_CLASS_MEMORY_VIRTUAL;
	else if (FIELD_GET(NVA_ATTR_LOCATION_MASK, a->attr) == NVA_ATTR_LOCATION_VIDMEM)
		cls = NVA_CLASS_MEMORY_LOCAL_USER;
	else
		cls = NVA_CLASS_MEMORY_SYSTEM;

	mutex_lock(&nvm_rm_lock);
	p->status = nvm_alloc_locked(nvf, p->h_root, p->h_object_parent, &h, cls,
				     &mp, NULL);
	mutex_unlock(&nvm_rm_lock);
	if (p->status)
		return;
	a->h_memory = h;
	a->size = mp.size;
	a->alignment = mp.alignment;
	a->limit = mp.limit;
	a->offset = mp.offset;
	a->attr = mp.attr;
	a->attr2 = mp.attr2;
	a->partition_stride = 256;
	p->total = 0;
	p->free = 0;
}

static void nvm_vidheap_info(struct nvm_file *nvf, struct nva_os32_vidheap *p)
{
	struct nvm_client *c;
	struct nvm_obj *obj;
	struct nvm_gpu *g;
	u32 st;

	mutex_lock(&nvm_rm_lock);
	st = nvm_client_get(nvf, p->h_root, &c);
	if (st)
		goto out;
	obj = nvm_obj_find(c, p->h_object_parent);
	if (!obj || !nvm_is_device(obj)) {
		st = NVA_ERR_INVALID_OBJECT_PARENT;
		goto out;
	}
	g = &nvm_gpus[obj->gpu];
	p->total = g->total;
	p->free = g->total - g->used;
	/* No fragmentation: the free space is one region above the used part. */
	p->data.info.offset = g->used;
	p->data.info.size = g->total - g->used;
	p->data.info.base = 0;
out:
	mutex_unlock(&nvm_rm_lock);
	p->status = st;
}

static int nvm_esc_vidheap(struct nvm_file *nvf, struct nva_os32_vidheap *p)
{
	switch (p->function) {
	case NVA_OS32_FUNC_ALLOC_SIZE:
		nvm_vidheap_alloc(nvf, p);
		break;
	case NVA_OS32_FUNC_FREE:
		if (!(p->data.free.flags & NVA_OS32_FREE_FLAGS_MEMORY_HANDLE_PROVIDED)) {
			p->status = NVA_ERR_INVALID_ARGUMENT;
			break;
		}
		mutex_lock(&nvm_rm_lock);
		p->status = nvm_free_locked(nvf, p->h_root, p->data.free.h_memory);
		mutex_unlock(&nvm_rm_lock);
		break;
	case NVA_OS32_FUNC_INFO:
		nvm_vidheap_info(nvf, p);
		break;
	default:
		p->status = NVA_ERR_NOT_SUPPORTED;
		break;
	}
	return 0;
}

/* ---- ioctl dispatch [2] ------------------------------------------------------ */

/* The 595 size table; -EINVAL for a size the escape does not take. */
static bool nvm_esc_size_ok(u32 nr, u32 size)
{
	switch (nr) {
	case NVA_ESC_RM_ALLOC:
		return size == sizeof(struct nva_os21_alloc) ||
		       size == sizeof(struct nva_os64_alloc);
	case NVA_ESC_RM_FREE:
		return size == sizeof(struct nva_os00_free);
	case NVA_ESC_RM_CONTROL:
		return size == sizeof(struct nva_os54_control);
	case NVA_ESC_RM_DUP_OBJECT:
		return size == sizeof(struct nva_os55_dup);
	case NVA_ESC_RM_SHARE:
		return size == sizeof(struct nva_os57_share);
	case NVA_ESC_RM_VID_HEAP_CONTROL:
		return size == sizeof(struct nva_os32_vidheap);
	case NVA_ESC_RM_ALLOC_MEMORY:
		return size == sizeof(struct nva_os02_with_fd);
	case NVA_ESC_RM_MAP_MEMORY:
		return size == sizeof(struct nva_os33_with_fd);
	case NVA_ESC_CARD_INFO:
		return size && size % sizeof(struct nva_card_info) == 0 &&
		       size / sizeof(struct nva_card_info) <= NVA_CARD_INFO_MAX_ENTRIES;
	case NVA_ESC_REGISTER_FD:
		return size == sizeof(struct nva_register_fd);
	case NVA_ESC_ALLOC_OS_EVENT:
	case NVA_ESC_FREE_OS_EVENT:
		return size == sizeof(struct nva_os_event);
	case NVA_ESC_CHECK_VERSION_STR:
		return size == sizeof(struct nva_rm_api_version);
	case NVA_ESC_ATTACH_GPUS_TO_FD:
		return size && size % sizeof(u32) == 0;
	}
	return false;
}

static bool nvm_esc_ctl_only(u32 nr)
{
	switch (nr) {
	case NVA_ESC_RM_FREE:
	case NVA_ESC_RM_CONTROL:
	case NVA_ESC_RM_DUP_OBJECT:
	case NVA_ESC_RM_SHARE:
	case NVA_ESC_RM_VID_HEAP_CONTROL:
	case NVA_ESC_CARD_INFO:
	case NVA_ESC_CHECK_VERSION_STR:
	case NVA_ESC_ATTACH_GPUS_TO_FD:
		return true;
	}
	return false;
}

static int nvm_dispatch(struct nvm_file *nvf, u32 nr, void *buf, u32 size)
{
	if (!nvm_esc_size_ok(nr, size))
		return -EINVAL;
	if (nvm_esc_ctl_only(nr) && !nvf->ctl)
		return -EINVAL;

	switch (nr) {
	case NVA_ESC_RM_ALLOC:
		return nvm_esc_rm_alloc(nvf, buf, size);
	case NVA_ESC_RM_FREE:
		return nvm_esc_rm_free(nvf, buf);
	case NVA_ESC_RM_CONTROL:
		return nvm_esc_rm_control(nvf, buf);
	case NVA_ESC_RM_DUP_OBJECT:
		return nvm_esc_rm_dup(nvf, buf);
	case NVA_ESC_RM_SHARE:
		return nvm_esc_rm_share(nvf, buf);
	case NVA_ESC_RM_VID_HEAP_CONTROL:
		return nvm_esc_vidheap(nvf, buf);
	case NVA_ESC_RM_ALLOC_MEMORY:
		/* GPU node only; class 0x40 there is not an allocation [4] */
		if (nvf->ctl)
			return -EINVAL;
		((struct nva_os02_with_fd *)buf)->status = NVA_ERR_NOT_SUPPORTED;
		return 0;
	case NVA_ESC_RM_MAP_MEMORY:
		((struct nva_os33_with_fd *)buf)->status = NVA_ERR_NOT_SUPPORTED;
		return 0;
	case NVA_ESC_CARD_INFO:
		return nvm_esc_card_info(nvf, buf, size);
	case NVA_ESC_REGISTER_FD:
		return nvm_esc_register_fd(nvf, buf);
	case NVA_ESC_ALLOC_OS_EVENT:
	case NVA_ESC_FREE_OS_EVENT:
		nvm_esc_os_event(nvf, buf, nr == NVA_ESC_ALLOC_OS_EVENT);
		return 0;
	case NVA_ESC_CHECK_VERSION_STR:
		return nvm_esc_check_version(buf);
	case NVA_ESC_ATTACH_GPUS_TO_FD:
		return nvm_esc_attach_gpus(nvf, buf, size / sizeof(u32));
	}
	return -EINVAL;
}

static noinline __noclone long nvidia_ioctl(struct file *filp, unsigned int cmd,
					    unsigned long arg)
{
	struct nvm_file *nvf = filp->private_data;
	void __user *uarg = (void __user *)arg;
	u32 nr = _IOC_NR(cmd), size = _IOC_SIZE(cmd);
	void *buf;
	int ret;

	if (nr == NVA_ESC_IOCTL_XFER_CMD) {
		struct nva_ioctl_xfer x;

		if (size != sizeof(x))
			return -EINVAL;
		if (copy_from_user(&x, uarg, sizeof(x)))
			return -EFAULT;
		if (x.size > NVA_ABSOLUTE_MAX_IOCTL_SIZE)
			return -EINVAL;
		nr = x.cmd;
		size = x.size;
		uarg = u64_to_user_ptr(x.ptr);
	}

	buf = kmalloc(size ? size : 1, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	if (copy_from_user(buf, uarg, size)) {
		ret = -EFAULT;
		goto out;
	}
	ret = nvm_dispatch(nvf, nr, buf, size);
	if (ret != -EFAULT && copy_to_user(uarg, buf, size))
		ret = -EFAULT;
out:
	kfree(buf);
	return ret;
}

/* ---- file operations ----------------------------------------------------------- */

static noinline int nvidia_open(struct inode *inode, struct file *filp)
{
	unsigned int minor = iminor(inode);
	struct nvm_file *nvf;

	if (minor != NVA_CTL_MINOR && minor >= nvm_num_gpus)
		return -ENODEV;
	nvf = kzalloc(sizeof(*nvf), GFP_KERNEL_ACCOUNT);
	if (!nvf)
		return -ENOMEM;
	nvf->ctl = minor == NVA_CTL_MINOR;
	nvf->minor = minor;
	INIT_LIST_HEAD(&nvf->clients);
	INIT_LIST_HEAD(&nvf->events);
	filp->private_data = nvf;
	return 0;
}

/* Frees every client the fd created (RmFreeUnusedClients) and its events. */
static noinline int nvidia_close(struct inode *inode, struct file *filp)
{
	struct nvm_file *nvf = filp->private_data;
	struct nvm_client *c, *ctmp;
	struct nvm_os_event *ev, *etmp;

	mutex_lock(&nvm_rm_lock);
	list_for_each_entry_safe(c, ctmp, &nvf->clients, file_node)
		nvm_client_free(c);
	list_for_each_entry_safe(ev, etmp, &nvf->events, node) {
		list_del(&ev->node);
		kfree(ev);
	}
	mutex_unlock(&nvm_rm_lock);
	kfree(nvf);
	return 0;
}

static noinline long nvidia_unlocked_ioctl(struct file *filp, unsigned int cmd,
					   unsigned long arg)
{
	return nvidia_ioctl(filp, cmd, arg);
}

/* Global, as in the real driver; nothing here can be mapped (no MAP_MEMORY). */
noinline int nvidia_mmap(struct file *filp, struct vm_area_struct *vma)
{
	return -EINVAL;
}

static noinline __poll_t nvidia_poll(struct file *filp, poll_table *wait)
{
	return 0;
}

/*
 * Not const, like the real one (it lives in .data).  The type is split over
 * two lines so that checkpatch's CONST_STRUCT check, right everywhere else,
 * lets this one be.
 */
static struct
file_operations nvidia_fops = {
	.owner = THIS_MODULE,
	.open = nvidia_open,
	.release = nvidia_close,
	.unlocked_ioctl = nvidia_unlocked_ioctl,
	.compat_ioctl = nvidia_unlocked_ioctl,
	.mmap = nvidia_mmap,
	.poll = nvidia_poll,
	.llseek = noop_llseek,
};

const struct file_operations *nvm_nvidia_fops(void)
{
	return &nvidia_fops;
}

/*
 * Like nv_get_file_private(): an nvidiactl fd is one whose inode is 195:255
 * and, before private_data is trusted, whose f_op is ours.  Returns the
 * nvm_file with a file reference in *filp, or NULL.
 */
struct nvm_file *nvm_get_ctl_file(int fd, struct file **filp)
{
	struct file *f = fget(fd);
	struct inode *inode;

	if (!f)
		return NULL;
	inode = file_inode(f);
	if (MAJOR(inode->i_rdev) != NVA_MAJOR ||
	    MINOR(inode->i_rdev) != NVA_CTL_MINOR ||
	    f->f_op != &nvidia_fops || !f->private_data) {
		fput(f);
		return NULL;
	}
	*filp = f;
	return f->private_data;
}

void nvm_rm_exit(void)
{
	/* Every fd is closed by now, so every client is gone. */
	WARN_ON(!xa_empty(&nvm_clients));
	xa_destroy(&nvm_clients);
}
