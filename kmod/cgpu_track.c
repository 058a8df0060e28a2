// SPDX-License-Identifier: GPL-2.0
/*
 * What the hooks learn about RM objects: the clients attached tasks use,
 * their devices and subdevices (to know which GPU memory lands on), and
 * every charged memory handle, so that each charge is credited exactly once
 * whichever way the memory goes:
 *  - RM_FREE of the memory, or of an ancestor (subdevice, device, client):
 *    RM frees descendants with the object [nvidia-abi.md 10.3];
 *  - close of the fd that made the client (RM frees the fd's clients), which
 *    is also what process exit and kill -9 come down to;
 *  - RM_DUP_OBJECT handles share their source's charge (reference count);
 *  - a UVM external mapping holds the memory too (UVM keeps its own
 *    duplicate, nvidia-abi.md 4): the charge stays until the mapping goes
 *    (UVM_FREE of its range, or close of the UVM fd), so RM_FREE of a
 *    mapped handle cannot make room that is still in use.
 *
 * Client handles are global in RM, so a client is found by its handle
 * alone; objects are found by handle within their client.  A tracked
 * allocation costs one cgpu_obj (16 bytes), one cgpu_charge (24 bytes) and
 * its slot in the client's xarray (about 9 bytes with dense handles).
 */
#define pr_fmt(fmt) "cgpu: " fmt

#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "cgpu_priv.h"
#include "nv_abi.h"

enum {
	CGPU_OBJ_DEVICE = 1,
	CGPU_OBJ_SUBDEVICE,
	CGPU_OBJ_MEMORY,
};

#define CGPU_OBJ_DOOMED		0x1

struct cgpu_obj {
	u32 parent;
	u8 type;
	u8 flags;
	u16 gpu;			/* device, subdevice: GPU minor */
	struct cgpu_charge *charge;	/* memory */
};

struct cgpu_client {
	u32 handle;
	struct file *file;	/* the fd that made it; identity only */
	struct xarray objs;	/* handle -> struct cgpu_obj */
};

/* A UVM external mapping of a charged allocation. */
struct cgpu_umap {
	struct list_head node;
	struct file *file;	/* the UVM fd; identity only */
	u64 base;
	struct cgpu_charge *charge;	/* holds a reference */
};

/* Clients, objects, charges' reference counts, UVM mappings. */
static DEFINE_MUTEX(cgpu_track_lock);
static LIST_HEAD(cgpu_umaps);
static struct kmem_cache *cgpu_umap_cache;
atomic_t cgpu_nr_umaps = ATOMIC_INIT(0);
/* client handle -> struct cgpu_client.  Under cgpu_track_lock. */
static DEFINE_XARRAY(cgpu_clients);
static struct kmem_cache *cgpu_obj_cache;
static struct kmem_cache *cgpu_charge_cache;

static struct cgpu_client *cgpu_client_get(struct file *file, u32 h_client)
{
	struct cgpu_client *c;

	lockdep_assert_held(&cgpu_track_lock);
	c = xa_load(&cgpu_clients, h_client);
	if (c) {
		/*
		 * RM only lets the owning fd use a client, so a call that
		 * succeeded through another file means our record outlived
		 * its fd (a close we could not see); follow the driver.
		 */
		c->file = file;
		return c;
	}
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return NULL;
	c->handle = h_client;
	c->file = file;
	xa_init(&c->objs);
	if (xa_err(xa_store(&cgpu_clients, h_client, c, GFP_KERNEL))) {
		kfree(c);
		return NULL;
	}
	atomic_inc(&cgpu_nr_clients);
	return c;
}

/* Credits the charge when its last handle goes. */
static void cgpu_charge_put(struct cgpu_charge *ch)
{
	struct cgpu_proc *p = ch->proc;
	struct cgpu_inst *inst = p->inst;
	bool last_of_proc = false;

	lockdep_assert_held(&cgpu_track_lock);
	if (--ch->refs)
		return;
	spin_lock(&inst->lock);
	inst->used -= ch->size;
	inst->live_allocs--;
	p->bytes -= ch->size;
	if (!--p->nr) {
		list_del(&p->node);
		inst->nr_procs--;
		last_of_proc = true;
	}
	spin_unlock(&inst->lock);
	kmem_cache_free(cgpu_charge_cache, ch);
	if (last_of_proc) {
		kfree(p);
		cgpu_inst_put(inst);
	}
}

static void cgpu_obj_free(struct cgpu_obj *o)
{
	if (o->charge)
		cgpu_charge_put(o->charge);
	kmem_cache_free(cgpu_obj_cache, o);
}

static void cgpu_client_destroy(struct cgpu_client *c)
{
	struct cgpu_obj *o;
	unsigned long idx;

	lockdep_assert_held(&cgpu_track_lock);
	xa_for_each(&c->objs, idx, o) {
		xa_erase(&c->objs, idx);
		cgpu_obj_free(o);
	}
	xa_destroy(&c->objs);
	xa_erase(&cgpu_clients, c->handle);
	atomic_dec(&cgpu_nr_clients);
	kfree(c);
}

/* Stores o at handle h; a stale object there (a free we missed) goes. */
static int cgpu_obj_insert(struct cgpu_client *c, u32 h, struct cgpu_obj *o)
{
	struct cgpu_obj *old;

	old = xa_store(&c->objs, h, o, GFP_KERNEL);
	if (xa_is_err(old))
		return xa_err(old);
	if (old)
		cgpu_obj_free(old);
	return 0;
}

struct cgpu_obj *cgpu_obj_alloc(void)
{
	return kmem_cache_zalloc(cgpu_obj_cache, GFP_KERNEL);
}

void cgpu_obj_release(struct cgpu_obj *o)
{
	if (o)
		kmem_cache_free(cgpu_obj_cache, o);
}

struct cgpu_charge *cgpu_charge_alloc(void)
{
	return kmem_cache_zalloc(cgpu_charge_cache, GFP_KERNEL);
}

void cgpu_charge_release(struct cgpu_charge *ch)
{
	if (ch)
		kmem_cache_free(cgpu_charge_cache, ch);
}

/*
 * Charges actual bytes to the current process in inst, turning a
 * reservation of reserved bytes into use.  May drop inst->lock to allocate
 * the process entry; -ENOMEM leaves everything as it was.
 */
static int cgpu_charge_commit(struct cgpu_inst *inst, struct cgpu_charge *ch,
			      u64 reserved, u64 actual)
{
	struct cgpu_proc *p, *spare = NULL;
	pid_t tgid = task_tgid_nr(current);

	lockdep_assert_held(&cgpu_track_lock);
again:
	spin_lock(&inst->lock);
	list_for_each_entry(p, &inst->procs, node) {
		if (p->tgid == tgid)
			goto found;
	}
	if (!spare) {
		spin_unlock(&inst->lock);
		spare = kzalloc(sizeof(*spare), GFP_KERNEL);
		if (!spare)
			return -ENOMEM;
		goto again;
	}
	p = spare;
	spare = NULL;
	p->tgid = tgid;
	p->inst = inst;
	kref_get(&inst->ref);
	list_add_tail(&p->node, &inst->procs);
	inst->nr_procs++;
found:
	p->nr++;
	p->bytes += actual;
	inst->reserved -= reserved;
	inst->used += actual;
	if (inst->used > inst->peak)
		inst->peak = inst->used;
	inst->allocs++;
	inst->live_allocs++;
	spin_unlock(&inst->lock);
	kfree(spare);
	ch->size = actual;
	ch->proc = p;
	ch->refs = 1;
	return 0;
}

/*
 * Records memory handle h_mem under (h_client, h_parent) and charges it.
 * o and ch are consumed on success; on -ENOMEM the caller still owns them
 * and its reservation.
 */
int cgpu_track_mem(struct file *file, u32 h_client, u32 h_parent, u32 h_mem,
		   struct cgpu_inst *inst, struct cgpu_obj *o,
		   struct cgpu_charge *ch, u64 reserved, u64 actual)
{
	struct cgpu_client *c;
	int err = -ENOMEM;

	mutex_lock(&cgpu_track_lock);
	c = cgpu_client_get(file, h_client);
	if (!c)
		goto unlock;
	/* Reserve the slot first so that the commit below cannot fail after. */
	err = xa_reserve(&c->objs, h_mem, GFP_KERNEL);
	if (err)
		goto unlock;
	err = cgpu_charge_commit(inst, ch, reserved, actual);
	if (err) {
		xa_release(&c->objs, h_mem);
		goto unlock;
	}
	o->parent = h_parent;
	o->type = CGPU_OBJ_MEMORY;
	o->gpu = inst->gpu;
	o->charge = ch;
	/* The slot is reserved: this does not allocate. */
	WARN_ON(cgpu_obj_insert(c, h_mem, o));
unlock:
	mutex_unlock(&cgpu_track_lock);
	return err;
}

/* Is (h_client, h) a charged memory handle? */
bool cgpu_track_is_mem(u32 h_client, u32 h)
{
	struct cgpu_client *c;
	struct cgpu_obj *o;
	bool ret = false;

	mutex_lock(&cgpu_track_lock);
	c = xa_load(&cgpu_clients, h_client);
	if (c) {
		o = xa_load(&c->objs, h);
		ret = o && o->charge;
	}
	mutex_unlock(&cgpu_track_lock);
	return ret;
}

/*
 * RM_DUP_OBJECT succeeded: h_new in h_client shares the charge of h_src in
 * h_client_src.  o is consumed unless -ENOMEM (or -ENOENT: the source is
 * not charged).
 */
int cgpu_track_dup(struct file *file, u32 h_client, u32 h_parent, u32 h_new,
		   u32 h_client_src, u32 h_src, struct cgpu_obj *o)
{
	struct cgpu_client *src, *dst;
	struct cgpu_obj *so;
	int err = -ENOENT;

	mutex_lock(&cgpu_track_lock);
	src = xa_load(&cgpu_clients, h_client_src);
	so = src ? xa_load(&src->objs, h_src) : NULL;
	if (!so || !so->charge)
		goto unlock;
	err = -ENOMEM;
	dst = cgpu_client_get(file, h_client);
	if (!dst)
		goto unlock;
	o->parent = h_parent;
	o->type = CGPU_OBJ_MEMORY;
	o->gpu = so->gpu;
	o->charge = so->charge;
	/* Take the reference first: a replaced stale object may be the source. */
	so->charge->refs++;
	err = cgpu_obj_insert(dst, h_new, o);
	if (err)
		so->charge->refs--;
unlock:
	mutex_unlock(&cgpu_track_lock);
	return err;
}

/* Remembers clients, devices and subdevices made by attached tasks. */
void cgpu_track_object(struct file *file, u32 h_client, u32 h_parent,
		       u32 h_new, u32 cls, u32 device_id)
{
	struct cgpu_client *c;
	struct cgpu_obj *o, *po;

	mutex_lock(&cgpu_track_lock);
	c = cgpu_client_get(file, cls == NVA_CLASS_ROOT_CLIENT ? h_new : h_client);
	if (!c || cls == NVA_CLASS_ROOT_CLIENT)
		goto unlock;
	o = kmem_cache_zalloc(cgpu_obj_cache, GFP_KERNEL);
	if (!o)
		goto unlock;	/* the GPU is then guessed, see cgpu_nv.c */
	o->parent = h_parent;
	if (cls == NVA_CLASS_DEVICE) {
		o->type = CGPU_OBJ_DEVICE;
		o->gpu = cgpu_nv_minor_of_device(device_id);
	} else {
		o->type = CGPU_OBJ_SUBDEVICE;
		po = xa_load(&c->objs, h_parent);
		o->gpu = po ? po->gpu : CGPU_NO_GPU;
	}
	if (cgpu_obj_insert(c, h_new, o))
		kmem_cache_free(cgpu_obj_cache, o);
unlock:
	mutex_unlock(&cgpu_track_lock);
}

/* The GPU minor of a device or subdevice handle, or CGPU_NO_GPU. */
u32 cgpu_track_gpu_of(u32 h_client, u32 h)
{
	struct cgpu_client *c;
	struct cgpu_obj *o;
	u32 gpu = CGPU_NO_GPU;

	mutex_lock(&cgpu_track_lock);
	c = xa_load(&cgpu_clients, h_client);
	o = c ? xa_load(&c->objs, h) : NULL;
	if (o && o->type != CGPU_OBJ_MEMORY)
		gpu = o->gpu;
	mutex_unlock(&cgpu_track_lock);
	return gpu;
}

/* Does o sit below handle h?  RM trees are shallow; stop at 8 levels. */
static bool cgpu_descends(struct cgpu_client *c, struct cgpu_obj *o, u32 h)
{
	u32 p = o->parent;
	int depth;

	for (depth = 0; depth < 8; depth++) {
		if (p == h)
			return true;
		if (p == c->handle)
			return false;
		o = xa_load(&c->objs, p);
		if (!o)
			return false;
		p = o->parent;
	}
	return false;
}

/* RM_FREE (or VID_HEAP FREE) of (h_client, h) succeeded. */
void cgpu_track_free(u32 h_client, u32 h)
{
	struct cgpu_client *c;
	struct cgpu_obj *o, *it;
	unsigned long idx;

	mutex_lock(&cgpu_track_lock);
	c = xa_load(&cgpu_clients, h_client);
	if (!c)
		goto unlock;
	if (h == h_client) {
		cgpu_client_destroy(c);
		goto unlock;
	}
	o = xa_load(&c->objs, h);
	if (!o || o->type != CGPU_OBJ_MEMORY) {
		/*
		 * A parent goes with everything under it, including memory
		 * below a parent made before we were watching (h unknown).
		 * Mark first, erase after: the walk needs the tree intact.
		 */
		xa_for_each(&c->objs, idx, it) {
			if (it != o && cgpu_descends(c, it, h))
				it->flags |= CGPU_OBJ_DOOMED;
		}
		xa_for_each(&c->objs, idx, it) {
			if (it->flags & CGPU_OBJ_DOOMED) {
				xa_erase(&c->objs, idx);
				cgpu_obj_free(it);
			}
		}
	}
	if (o) {
		xa_erase(&c->objs, h);
		cgpu_obj_free(o);
	}
unlock:
	mutex_unlock(&cgpu_track_lock);
}

struct cgpu_umap *cgpu_umap_alloc(void)
{
	return kmem_cache_zalloc(cgpu_umap_cache, GFP_KERNEL);
}

void cgpu_umap_release(struct cgpu_umap *m)
{
	if (m)
		kmem_cache_free(cgpu_umap_cache, m);
}

/* Drops the mappings of UVM fd file at base (all of them if all). */
static void cgpu_umap_drop_locked(struct file *file, bool all, u64 base)
{
	struct cgpu_umap *m, *tmp;

	lockdep_assert_held(&cgpu_track_lock);
	list_for_each_entry_safe(m, tmp, &cgpu_umaps, node) {
		if (m->file != file || (!all && m->base != base))
			continue;
		list_del(&m->node);
		atomic_dec(&cgpu_nr_umaps);
		cgpu_charge_put(m->charge);
		kmem_cache_free(cgpu_umap_cache, m);
	}
}

/*
 * UVM_MAP_EXTERNAL_ALLOCATION of (h_client, h_mem) at base on UVM fd file
 * succeeded.  A mapping already at base is replaced.  m is consumed
 * unless the memory is not charged (returns false).
 */
bool cgpu_track_uvm_map(struct file *file, u64 base, u32 h_client, u32 h_mem,
			struct cgpu_umap *m)
{
	struct cgpu_client *c;
	struct cgpu_obj *o;
	bool used = false;

	mutex_lock(&cgpu_track_lock);
	cgpu_umap_drop_locked(file, false, base);
	c = xa_load(&cgpu_clients, h_client);
	o = c ? xa_load(&c->objs, h_mem) : NULL;
	if (o && o->charge) {
		m->file = file;
		m->base = base;
		m->charge = o->charge;
		o->charge->refs++;
		list_add(&m->node, &cgpu_umaps);
		atomic_inc(&cgpu_nr_umaps);
		used = true;
	}
	mutex_unlock(&cgpu_track_lock);
	return used;
}

/*
 * UVM_FREE of the range at base, or (all) the UVM fd closed.  A mapping
 * at another offset of a range freed by its base is only dropped with the
 * fd: the charge then outlives the memory a little, never the reverse.
 */
void cgpu_track_uvm_unmap(struct file *file, bool all, u64 base)
{
	mutex_lock(&cgpu_track_lock);
	cgpu_umap_drop_locked(file, all, base);
	mutex_unlock(&cgpu_track_lock);
}

/* The fd is gone: RM freed every client it made (RmFreeUnusedClients). */
void cgpu_track_file_closed(struct file *file)
{
	struct cgpu_client *c;
	unsigned long idx;

	mutex_lock(&cgpu_track_lock);
	xa_for_each(&cgpu_clients, idx, c) {
		if (c->file == file)
			cgpu_client_destroy(c);
	}
	mutex_unlock(&cgpu_track_lock);
}

int cgpu_track_init(void)
{
	cgpu_obj_cache = KMEM_CACHE(cgpu_obj, 0);
	cgpu_charge_cache = KMEM_CACHE(cgpu_charge, 0);
	cgpu_umap_cache = KMEM_CACHE(cgpu_umap, 0);
	if (!cgpu_obj_cache || !cgpu_charge_cache || !cgpu_umap_cache) {
		kmem_cache_destroy(cgpu_obj_cache);
		kmem_cache_destroy(cgpu_charge_cache);
		kmem_cache_destroy(cgpu_umap_cache);
		return -ENOMEM;
	}
	return 0;
}

/* At unload no charge is left (each pins an instance, which pins us). */
void cgpu_track_exit(void)
{
	struct cgpu_client *c;
	unsigned long idx;

	mutex_lock(&cgpu_track_lock);
	xa_for_each(&cgpu_clients, idx, c)
		cgpu_client_destroy(c);
	mutex_unlock(&cgpu_track_lock);
	xa_destroy(&cgpu_clients);
	WARN_ON(!list_empty(&cgpu_umaps));
	kmem_cache_destroy(cgpu_obj_cache);
	kmem_cache_destroy(cgpu_charge_cache);
	kmem_cache_destroy(cgpu_umap_cache);
}
