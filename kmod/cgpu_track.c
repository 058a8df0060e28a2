// SPDX-License-Identifier: GPL-2.0
/*
 * What the hooks learn about RM objects: the clients attached tasks use,
 * their devices and subdevices (to know which GPU memory lands on), and
 * every charged memory handle, so that each charge is credited exactly once
 * whichever way the memory goes:
 *  - RM_FREE of the memory, or of an ancestor (subdevice, device, client):
 *    RM frees descendants with the object [docs/nvidia-abi.md 10.3];
 *  - close of the fd that made the client (RM frees the fd's clients), which
 *    is also what process exit and kill -9 come down to;
 *  - RM_DUP_OBJECT handles share their source's charge (reference count);
 *  - a UVM external mapping holds the memory too (UVM keeps its own
 *    duplicate, docs/nvidia-abi.md 4): the charge stays until the mapping
 *    goes (UVM_FREE of its range, or close of the UVM fd), so RM_FREE of a
 *    mapped handle cannot make room that is still in use.
 *
 * Client handles are global in RM, so a client is found by its handle
 * alone (a small RCU hash table); objects are found by handle within their
 * client, in the client's own chained hash table, grown and shrunk with
 * its population.  Not an xarray: RM hands out handles in increasing order,
 * so an allocation freed at once (the common short-lived buffer) would
 * make and free xarray nodes on every call, which costs more than the
 * driver's own work (kmod/README.md, The hot path).
 *
 * One allocation is one 56-byte record (struct cgpu_mem): the object, its
 * charge and the first UVM mapping of it, which is how CUDA uses memory
 * (cuMemAlloc maps each allocation once).  Mapped records are chained in
 * one hash table keyed by (UVM fd, base), at most four to a bucket on
 * average.  Duplicated handles (32 bytes) point at the record; further
 * mappings of a mapped record are rare and sit in a list.
 */
#define pr_fmt(fmt) "cgpu: " fmt

#include <linux/hash.h>
#include <linux/hashtable.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "cgpu_priv.h"
#include "nv_abi.h"

enum {
	CGPU_OBJ_DEVICE = 1,
	CGPU_OBJ_SUBDEVICE,
	CGPU_OBJ_MEMORY,	/* struct cgpu_mem */
	CGPU_OBJ_DUP,		/* struct cgpu_dup */
};

#define CGPU_OBJ_DOOMED		0x1

/* What a client's table holds: every record starts with one. */
struct cgpu_obj {
	struct cgpu_obj *next;	/* chain in the client's table */
	u32 handle;
	u32 parent;
	u8 type;
	u8 flags;
	union {
		u16 gpu;	/* device, subdevice: GPU minor */
		u16 refs;	/* memory: its handle, dups and UVM mappings */
	};
	u32 pages;		/* memory: the charge, in CGPU_CHARGE_UNITs */
};

/* An allocation: its handle, its charge, its first UVM mapping. */
struct cgpu_mem {
	struct cgpu_obj obj;
	struct cgpu_proc *proc;
	struct cgpu_mem *map_next;	/* chain in cgpu_map_ht */
	struct file *map_file;		/* the UVM fd (identity), or NULL */
	u64 map_base;
};

/* A handle made by RM_DUP_OBJECT: it holds a reference on the memory. */
struct cgpu_dup {
	struct cgpu_obj obj;
	struct cgpu_mem *mem;
};

/* A further UVM mapping of an already mapped allocation. */
struct cgpu_umap {
	struct list_head node;
	struct file *file;	/* the UVM fd; identity only */
	u64 base;
	struct cgpu_mem *mem;	/* holds a reference */
};

struct cgpu_client {
	struct hlist_node hnode;	/* in cgpu_client_ht */
	u32 handle;
	u32 bits;		/* objs has 1 << bits chains, or is NULL */
	struct file *file;	/* the fd that made it; identity only */
	struct cgpu_obj **objs;
	unsigned long nr;	/* objects in objs */
	/*
	 * The last device or subdevice asked about, read without the lock:
	 * handle << 32 | GPU minor, or 0.  Allocations name the same parent
	 * again and again.
	 */
	u64 gpu_hint;
	struct rcu_head rcu;
};

/*
 * Clients, objects, references, UVM mappings: everything below is under
 * cgpu_track_lock.
 */
static DEFINE_MUTEX(cgpu_track_lock);
/* client handle -> struct cgpu_client; readers of gpu_hint use RCU */
static DEFINE_HASHTABLE(cgpu_client_ht, 6);
static struct kmem_cache *cgpu_obj_cache;
static struct kmem_cache *cgpu_mem_cache;
static struct kmem_cache *cgpu_dup_cache;
static struct kmem_cache *cgpu_umap_cache;
/* Mapped records by (UVM fd, base); grown to keep chains short. */
static struct cgpu_mem **cgpu_map_ht;
static unsigned int cgpu_map_bits;
static unsigned long cgpu_map_nr;
static LIST_HEAD(cgpu_umaps);
/* UVM mappings of charged memory, embedded and listed. */
atomic_t cgpu_nr_umaps = ATOMIC_INIT(0);

#define CGPU_MAP_MIN_BITS	6
#define CGPU_MAP_MAX_BITS	24
#define CGPU_MAP_LOAD		4

/*
 * A client's object table: 16 chains to start, doubled past eight objects
 * a chain on average, halved under one (but never below 16).
 */
#define CGPU_OBJ_MIN_BITS	4
#define CGPU_OBJ_MAX_BITS	22
#define CGPU_OBJ_LOAD		8

/*
 * Takes cgpu_track_lock.  Uncontended, a trylock takes it without
 * mutex_lock()'s voluntary preemption point, which under TCG cost more than
 * all the bookkeeping done under the lock (kmod/README.md, The hot path);
 * contended, it sleeps as mutex_lock() does.  The calls it serves are
 * short, and the sleeping path still reschedules.
 */
static void cgpu_track_lock_take(void)
{
	if (!mutex_trylock(&cgpu_track_lock))
		mutex_lock(&cgpu_track_lock);
}

static struct cgpu_client *cgpu_client_find(u32 h_client)
{
	struct cgpu_client *c;

	hash_for_each_possible_rcu(cgpu_client_ht, c, hnode, h_client,
				   lockdep_is_held(&cgpu_track_lock)) {
		if (c->handle == h_client)
			return c;
	}
	return NULL;
}

static struct cgpu_obj **cgpu_obj_chain(struct cgpu_client *c, u32 h)
{
	return &c->objs[hash_32(h, c->bits)];
}

static struct cgpu_obj *cgpu_obj_find(struct cgpu_client *c, u32 h)
{
	struct cgpu_obj *o;

	lockdep_assert_held(&cgpu_track_lock);
	if (!c->objs)
		return NULL;
	for (o = *cgpu_obj_chain(c, h); o; o = o->next) {
		if (o->handle == h)
			return o;
	}
	return NULL;
}

/* Rehashes c's objects into 1 << bits chains; on failure nothing changes. */
static void cgpu_obj_resize(struct cgpu_client *c, u32 bits)
{
	struct cgpu_obj **old = c->objs, **tbl, *o, *next, **chain;
	u32 old_bits = c->bits;
	unsigned long i;

	tbl = kvcalloc(1UL << bits, sizeof(*tbl), GFP_KERNEL);
	if (!tbl)
		return;
	c->objs = tbl;
	c->bits = bits;
	for (i = 0; old && i < (1UL << old_bits); i++) {
		for (o = old[i]; o; o = next) {
			next = o->next;
			chain = cgpu_obj_chain(c, o->handle);
			o->next = *chain;
			*chain = o;
		}
	}
	kvfree(old);
}

/* Adds o (not in the table); -ENOMEM only when there is no table at all. */
static int cgpu_obj_add(struct cgpu_client *c, struct cgpu_obj *o)
{
	struct cgpu_obj **chain;

	lockdep_assert_held(&cgpu_track_lock);
	if (!c->objs)
		cgpu_obj_resize(c, CGPU_OBJ_MIN_BITS);
	else if (c->nr >= (CGPU_OBJ_LOAD << c->bits) &&
		 c->bits < CGPU_OBJ_MAX_BITS)
		cgpu_obj_resize(c, c->bits + 1);	/* or longer chains */
	if (!c->objs)
		return -ENOMEM;
	chain = cgpu_obj_chain(c, o->handle);
	o->next = *chain;
	*chain = o;
	c->nr++;
	return 0;
}

/* Unlinks o, which is in c's table. */
static void cgpu_obj_unlink(struct cgpu_client *c, struct cgpu_obj *o)
{
	struct cgpu_obj **p;

	lockdep_assert_held(&cgpu_track_lock);
	for (p = cgpu_obj_chain(c, o->handle); *p; p = &(*p)->next) {
		if (*p == o) {
			*p = o->next;
			o->next = NULL;
			c->nr--;
			return;
		}
	}
	WARN_ON_ONCE(1);
}

/* After removals (never during a walk of the table). */
static void cgpu_obj_shrink(struct cgpu_client *c)
{
	if (c->bits > CGPU_OBJ_MIN_BITS && c->nr < (1UL << c->bits))
		cgpu_obj_resize(c, c->bits - 1);
}

static struct cgpu_client *cgpu_client_get(struct file *file, u32 h_client)
{
	struct cgpu_client *c;

	lockdep_assert_held(&cgpu_track_lock);
	c = cgpu_client_find(h_client);
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
	hash_add_rcu(cgpu_client_ht, &c->hnode, h_client);
	atomic_inc(&cgpu_nr_clients);
	return c;
}

/* Drops a reference; the last one credits the charge. */
static void cgpu_mem_put(struct cgpu_mem *m)
{
	struct cgpu_proc *p = m->proc;
	struct cgpu_inst *inst = p->inst;
	struct cgpu_proc *gone = NULL;

	lockdep_assert_held(&cgpu_track_lock);
	if (--m->obj.refs)
		return;
	WARN_ON_ONCE(m->map_file);
	spin_lock(&inst->lock);
	inst->used -= cgpu_charge_bytes(m->obj.pages);
	inst->live_allocs--;
	p->bytes -= cgpu_charge_bytes(m->obj.pages);
	if (!--p->nr) {
		inst->nr_procs--;
		/*
		 * An emptied entry stays listed, holding its reference, for
		 * the process's next allocation or another process's first
		 * (see cgpu_charge_commit()); a destroyed instance's go.
		 */
		if (inst->gone) {
			list_del(&p->node);
			gone = p;
		}
	}
	spin_unlock(&inst->lock);
	cgpu_mem_release(m);
	if (!gone)
		return;
	kfree(gone);
	cgpu_inst_put(inst);
}

static void cgpu_obj_free(struct cgpu_obj *o)
{
	struct cgpu_dup *d;

	switch (o->type) {
	case CGPU_OBJ_MEMORY:
		cgpu_mem_put(container_of(o, struct cgpu_mem, obj));
		break;
	case CGPU_OBJ_DUP:
		d = container_of(o, struct cgpu_dup, obj);
		cgpu_mem_put(d->mem);
		kmem_cache_free(cgpu_dup_cache, d);
		break;
	default:
		kmem_cache_free(cgpu_obj_cache, o);
	}
}

/* The allocation behind a memory or dup handle, or NULL. */
static struct cgpu_mem *cgpu_obj_mem(struct cgpu_obj *o)
{
	if (!o)
		return NULL;
	if (o->type == CGPU_OBJ_MEMORY)
		return container_of(o, struct cgpu_mem, obj);
	if (o->type == CGPU_OBJ_DUP)
		return container_of(o, struct cgpu_dup, obj)->mem;
	return NULL;
}

static void cgpu_client_destroy(struct cgpu_client *c)
{
	struct cgpu_obj *o, *next;
	unsigned long i;

	lockdep_assert_held(&cgpu_track_lock);
	/* Nobody else sees the table: free the records, then the table. */
	for (i = 0; c->objs && i < (1UL << c->bits); i++) {
		for (o = c->objs[i]; o; o = next) {
			next = o->next;
			cgpu_obj_free(o);
		}
	}
	kvfree(c->objs);
	hash_del_rcu(&c->hnode);
	atomic_dec(&cgpu_nr_clients);
	kfree_rcu(c, rcu);
}

/* Handle h changes meaning: the hint must not outlive it. */
static void cgpu_hint_forget(struct cgpu_client *c, u32 h)
{
	if (READ_ONCE(c->gpu_hint) >> 32 == h)
		WRITE_ONCE(c->gpu_hint, 0);
}

/* Stores o at handle h; a stale object there (a free we missed) goes. */
static int cgpu_obj_insert(struct cgpu_client *c, u32 h, struct cgpu_obj *o)
{
	struct cgpu_obj *old = cgpu_obj_find(c, h);
	int err;

	o->handle = h;
	if (old)
		cgpu_obj_unlink(c, old);
	/* With old gone a table exists: this cannot fail then. */
	err = cgpu_obj_add(c, o);
	if (err)
		return err;
	if (old) {
		cgpu_hint_forget(c, h);
		cgpu_obj_free(old);
	}
	return 0;
}

/*
 * One freed record is kept per CPU for the next allocation: a buffer freed
 * soon after it was made (the common short-lived allocation) then costs no
 * trip through the slab allocator, whose zeroing and freelist hardening
 * cost more than the rest of the bookkeeping.  Every field is set before
 * use.  The spares are freed at unload.  Not under KASAN: there every
 * record goes back to the slab, so that a use after free is reported.
 */
#define CGPU_MEM_SPARE	(!IS_ENABLED(CONFIG_KASAN))
static DEFINE_PER_CPU(struct cgpu_mem *, cgpu_mem_spare);

struct cgpu_mem *cgpu_mem_alloc(void)
{
	struct cgpu_mem *m = NULL;

	if (CGPU_MEM_SPARE)
		m = this_cpu_xchg(cgpu_mem_spare, NULL);
	return m ?: kmem_cache_alloc(cgpu_mem_cache, GFP_KERNEL);
}

void cgpu_mem_release(struct cgpu_mem *m)
{
	if (m && CGPU_MEM_SPARE)
		m = this_cpu_xchg(cgpu_mem_spare, m);
	if (m)
		kmem_cache_free(cgpu_mem_cache, m);
}

struct cgpu_dup *cgpu_dup_alloc(void)
{
	return kmem_cache_alloc(cgpu_dup_cache, GFP_KERNEL);
}

void cgpu_dup_release(struct cgpu_dup *d)
{
	if (d)
		kmem_cache_free(cgpu_dup_cache, d);
}

/*
 * Charges actual bytes (whole charge units, see cgpu_charge_round()) to the
 * current process in inst, turning a reservation of reserved bytes into
 * use.  May drop inst->lock to allocate
 * the process entry; -ENOMEM leaves everything as it was.
 */
static int cgpu_charge_commit(struct cgpu_inst *inst, struct cgpu_mem *m,
			      u64 reserved, u64 actual)
{
	struct cgpu_proc *p, *empty = NULL, *fresh = NULL;
	pid_t tgid = task_tgid_nr(current);

	lockdep_assert_held(&cgpu_track_lock);
	if (WARN_ON_ONCE(actual != cgpu_charge_round(actual)))
		return -EINVAL;
again:
	spin_lock(&inst->lock);
	list_for_each_entry(p, &inst->procs, node) {
		if (p->tgid == tgid)
			goto found;
		if (!p->nr && !empty)
			empty = p;
	}
	if (empty) {
		/* An emptied entry of a process done here: it holds a reference. */
		p = empty;
		p->tgid = tgid;
		p->bytes = 0;
		goto found;
	}
	if (!fresh) {
		spin_unlock(&inst->lock);
		fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
		if (!fresh)
			return -ENOMEM;
		goto again;
	}
	p = fresh;
	fresh = NULL;
	p->tgid = tgid;
	p->inst = inst;
	kref_get(&inst->ref);
	/* The busiest process is looked for first. */
	list_add(&p->node, &inst->procs);
found:
	if (!p->nr++)
		inst->nr_procs++;
	p->bytes += actual;
	inst->reserved -= reserved;
	inst->used += actual;
	if (inst->used > inst->peak)
		inst->peak = inst->used;
	inst->allocs++;
	inst->live_allocs++;
	spin_unlock(&inst->lock);
	kfree(fresh);
	m->obj.pages = actual >> CGPU_CHARGE_SHIFT;
	m->proc = p;
	return 0;
}

/*
 * Records memory handle h_mem under (h_client, h_parent) and charges it.
 * m is consumed on success; on -ENOMEM the caller still owns it and its
 * reservation.
 */
int cgpu_track_mem(struct file *file, u32 h_client, u32 h_parent, u32 h_mem,
		   struct cgpu_inst *inst, struct cgpu_mem *m, u64 reserved,
		   u64 actual)
{
	struct cgpu_client *c;
	int err = -ENOMEM;

	m->obj.parent = h_parent;
	m->obj.type = CGPU_OBJ_MEMORY;
	m->obj.flags = 0;
	m->obj.refs = 1;
	m->map_next = NULL;
	m->map_file = NULL;
	m->map_base = 0;
	cgpu_track_lock_take();
	c = cgpu_client_get(file, h_client);
	if (!c)
		goto unlock;
	err = cgpu_obj_insert(c, h_mem, &m->obj);
	if (err)
		goto unlock;
	/* Nobody can see m before the lock goes: undo is an erase. */
	err = cgpu_charge_commit(inst, m, reserved, actual);
	if (err)
		cgpu_obj_unlink(c, &m->obj);
unlock:
	mutex_unlock(&cgpu_track_lock);
	return err;
}

/*
 * A reference on the allocation behind memory handle (h_client, h), for a
 * call about to duplicate or map it: NULL when it is not charged,
 * ERR_PTR(-EMLINK) when it has as many references as it can count.
 */
struct cgpu_mem *cgpu_track_pin(u32 h_client, u32 h)
{
	struct cgpu_client *c;
	struct cgpu_mem *m;

	cgpu_track_lock_take();
	c = cgpu_client_find(h_client);
	m = c ? cgpu_obj_mem(cgpu_obj_find(c, h)) : NULL;
	if (m) {
		if (m->obj.refs == U16_MAX)
			m = ERR_PTR(-EMLINK);
		else
			m->obj.refs++;
	}
	mutex_unlock(&cgpu_track_lock);
	return m;
}

void cgpu_track_unpin(struct cgpu_mem *m)
{
	cgpu_track_lock_take();
	cgpu_mem_put(m);
	mutex_unlock(&cgpu_track_lock);
}

/*
 * RM_DUP_OBJECT succeeded: h_new in h_client shares the allocation m,
 * pinned by cgpu_track_pin().  The pin and d are consumed unless -ENOMEM.
 */
int cgpu_track_dup(struct file *file, u32 h_client, u32 h_parent, u32 h_new,
		   struct cgpu_mem *m, struct cgpu_dup *d)
{
	struct cgpu_client *dst;
	int err = -ENOMEM;

	d->obj.parent = h_parent;
	d->obj.type = CGPU_OBJ_DUP;
	d->obj.flags = 0;
	d->obj.gpu = CGPU_NO_GPU;
	d->mem = m;
	cgpu_track_lock_take();
	dst = cgpu_client_get(file, h_client);
	if (dst)
		err = cgpu_obj_insert(dst, h_new, &d->obj);
	mutex_unlock(&cgpu_track_lock);
	return err;
}

/* Remembers clients, devices and subdevices made by attached tasks. */
void cgpu_track_object(struct file *file, u32 h_client, u32 h_parent,
		       u32 h_new, u32 cls, u32 device_id)
{
	struct cgpu_client *c;
	struct cgpu_obj *o, *po;

	cgpu_track_lock_take();
	c = cgpu_client_get(file, cls == NVA_CLASS_ROOT_CLIENT ? h_new : h_client);
	if (!c || cls == NVA_CLASS_ROOT_CLIENT)
		goto unlock;
	o = kmem_cache_zalloc(cgpu_obj_cache, GFP_KERNEL);
	if (!o)
		goto unlock;	/* the GPU is then guessed, see cgpu_admit.c */
	o->parent = h_parent;
	if (cls == NVA_CLASS_DEVICE) {
		o->type = CGPU_OBJ_DEVICE;
		o->gpu = cgpu_nv_minor_of_device(device_id);
	} else {
		o->type = CGPU_OBJ_SUBDEVICE;
		po = cgpu_obj_find(c, h_parent);
		o->gpu = po && (po->type == CGPU_OBJ_DEVICE ||
				po->type == CGPU_OBJ_SUBDEVICE) ?
			 po->gpu : CGPU_NO_GPU;
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
	u64 hint = 0;

	rcu_read_lock();
	c = cgpu_client_find(h_client);
	if (c)
		hint = READ_ONCE(c->gpu_hint);
	rcu_read_unlock();
	if (h && hint >> 32 == h)
		return (u16)hint;

	cgpu_track_lock_take();
	c = cgpu_client_find(h_client);
	o = c ? cgpu_obj_find(c, h) : NULL;
	if (o && (o->type == CGPU_OBJ_DEVICE || o->type == CGPU_OBJ_SUBDEVICE)) {
		gpu = o->gpu;
		WRITE_ONCE(c->gpu_hint, (u64)h << 32 | gpu);
	}
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
		o = cgpu_obj_find(c, p);
		if (!o)
			return false;
		p = o->parent;
	}
	return false;
}

/* RM_FREE (or VID_HEAP FREE) of (h_client, h) succeeded. */
void cgpu_track_free(u32 h_client, u32 h)
{
	struct cgpu_obj *o, *it, **p;
	struct cgpu_client *c;
	unsigned long i;

	/* Most frees by untracked clients are decided without the lock. */
	rcu_read_lock();
	c = cgpu_client_find(h_client);
	rcu_read_unlock();
	if (!c)
		return;

	cgpu_track_lock_take();
	c = cgpu_client_find(h_client);
	if (!c)
		goto unlock;
	if (h == h_client) {
		cgpu_client_destroy(c);
		goto unlock;
	}
	o = cgpu_obj_find(c, h);
	if (!o || (o->type != CGPU_OBJ_MEMORY && o->type != CGPU_OBJ_DUP)) {
		/* Parents go: no hint may name one of them (it is one slot). */
		WRITE_ONCE(c->gpu_hint, 0);
		/*
		 * A parent goes with everything under it, including memory
		 * below a parent made before we were watching (h unknown).
		 * Mark first, unlink after: the walk needs the tree intact.
		 */
		for (i = 0; c->objs && i < (1UL << c->bits); i++) {
			for (it = c->objs[i]; it; it = it->next) {
				if (it != o && cgpu_descends(c, it, h))
					it->flags |= CGPU_OBJ_DOOMED;
			}
		}
		for (i = 0; c->objs && i < (1UL << c->bits); i++) {
			for (p = &c->objs[i]; *p;) {
				it = *p;
				if (!(it->flags & CGPU_OBJ_DOOMED)) {
					p = &it->next;
					continue;
				}
				*p = it->next;
				c->nr--;
				cgpu_obj_free(it);
			}
		}
	}
	if (o) {
		cgpu_obj_unlink(c, o);
		cgpu_obj_free(o);
	}
	cgpu_obj_shrink(c);
unlock:
	mutex_unlock(&cgpu_track_lock);
}

/* ---- UVM mappings ---------------------------------------------------------- */

static struct cgpu_mem **cgpu_map_bucket(struct file *file, u64 base)
{
	return &cgpu_map_ht[hash_64(base ^ (u64)(uintptr_t)file, cgpu_map_bits)];
}

/* Keeps the load under CGPU_MAP_LOAD; on failure chains just grow. */
static void cgpu_map_grow(void)
{
	unsigned int bits = cgpu_map_ht ? cgpu_map_bits + 1 : CGPU_MAP_MIN_BITS;
	struct cgpu_mem **old = cgpu_map_ht, **ht, *m, *next;
	unsigned int old_bits = cgpu_map_bits;
	unsigned long i;

	lockdep_assert_held(&cgpu_track_lock);
	if (bits > CGPU_MAP_MAX_BITS)
		return;
	ht = kvcalloc(1UL << bits, sizeof(*ht), GFP_KERNEL);
	if (!ht)
		return;
	cgpu_map_ht = ht;
	cgpu_map_bits = bits;
	for (i = 0; old && i < (1UL << old_bits); i++) {
		for (m = old[i]; m; m = next) {
			struct cgpu_mem **b = cgpu_map_bucket(m->map_file,
							      m->map_base);

			next = m->map_next;
			m->map_next = *b;
			*b = m;
		}
	}
	kvfree(old);
}

static void cgpu_map_insert(struct cgpu_mem *m, struct file *file, u64 base)
{
	struct cgpu_mem **b;

	lockdep_assert_held(&cgpu_track_lock);
	if (!cgpu_map_ht || cgpu_map_nr >= (CGPU_MAP_LOAD << cgpu_map_bits))
		cgpu_map_grow();
	m->map_file = file;
	m->map_base = base;
	b = cgpu_map_bucket(file, base);
	m->map_next = *b;
	*b = m;
	cgpu_map_nr++;
	atomic_inc(&cgpu_nr_umaps);
}

/* Unlinks *pm (a bucket's link); the caller drops the reference. */
static struct cgpu_mem *cgpu_map_unlink(struct cgpu_mem **pm)
{
	struct cgpu_mem *m = *pm;

	*pm = m->map_next;
	m->map_next = NULL;
	m->map_file = NULL;
	cgpu_map_nr--;
	atomic_dec(&cgpu_nr_umaps);
	return m;
}

/* Nothing mapped: the table goes, so an idle module holds nothing. */
static void cgpu_map_shrink(void)
{
	if (!cgpu_map_nr && cgpu_map_ht) {
		kvfree(cgpu_map_ht);
		cgpu_map_ht = NULL;
		cgpu_map_bits = 0;
	}
}

struct cgpu_umap *cgpu_umap_alloc(void)
{
	return kmem_cache_alloc(cgpu_umap_cache, GFP_KERNEL);
}

void cgpu_umap_release(struct cgpu_umap *u)
{
	if (u)
		kmem_cache_free(cgpu_umap_cache, u);
}

/* Drops the mappings of UVM fd file at base (all of them if all). */
static void cgpu_umap_drop_locked(struct file *file, bool all, u64 base)
{
	struct cgpu_umap *u, *tmp;
	struct cgpu_mem **pm;
	unsigned long i;

	lockdep_assert_held(&cgpu_track_lock);
	if (cgpu_map_ht && !all) {
		for (pm = cgpu_map_bucket(file, base); *pm;) {
			if ((*pm)->map_file == file && (*pm)->map_base == base)
				cgpu_mem_put(cgpu_map_unlink(pm));
			else
				pm = &(*pm)->map_next;
		}
	} else if (cgpu_map_ht) {
		for (i = 0; i < (1UL << cgpu_map_bits); i++) {
			for (pm = &cgpu_map_ht[i]; *pm;) {
				if ((*pm)->map_file == file)
					cgpu_mem_put(cgpu_map_unlink(pm));
				else
					pm = &(*pm)->map_next;
			}
		}
	}
	list_for_each_entry_safe(u, tmp, &cgpu_umaps, node) {
		if (u->file != file || (!all && u->base != base))
			continue;
		list_del(&u->node);
		atomic_dec(&cgpu_nr_umaps);
		cgpu_mem_put(u->mem);
		kmem_cache_free(cgpu_umap_cache, u);
	}
	cgpu_map_shrink();
}

/*
 * UVM_MAP_EXTERNAL_ALLOCATION of m (pinned by cgpu_track_pin()) at base on
 * UVM fd file succeeded: the pin becomes the mapping's reference.  A
 * mapping already at base is replaced.  u is consumed when used (returns
 * true); without it a second mapping of m keeps the pin unrecorded, so
 * the charge stays until the allocation goes (the safe side).
 */
bool cgpu_track_uvm_map(struct file *file, u64 base, struct cgpu_mem *m,
			struct cgpu_umap *u)
{
	bool used = false;

	cgpu_track_lock_take();
	cgpu_umap_drop_locked(file, false, base);
	if (!m->map_file) {
		cgpu_map_insert(m, file, base);
	} else if (u) {
		u->file = file;
		u->base = base;
		u->mem = m;
		list_add(&u->node, &cgpu_umaps);
		atomic_inc(&cgpu_nr_umaps);
		used = true;
	} else {
		pr_warn_ratelimited("a UVM mapping could not be recorded: its memory stays charged\n");
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
	cgpu_track_lock_take();
	cgpu_umap_drop_locked(file, all, base);
	mutex_unlock(&cgpu_track_lock);
}

/* The fd is gone: RM freed every client it made (RmFreeUnusedClients). */
void cgpu_track_file_closed(struct file *file)
{
	struct cgpu_client *c;
	struct hlist_node *tmp;
	int bkt;

	cgpu_track_lock_take();
	hash_for_each_safe(cgpu_client_ht, bkt, tmp, c, hnode) {
		if (c->file == file)
			cgpu_client_destroy(c);
	}
	mutex_unlock(&cgpu_track_lock);
}

int cgpu_track_init(void)
{
	cgpu_obj_cache = KMEM_CACHE(cgpu_obj, 0);
	cgpu_mem_cache = KMEM_CACHE(cgpu_mem, 0);
	cgpu_dup_cache = KMEM_CACHE(cgpu_dup, 0);
	cgpu_umap_cache = KMEM_CACHE(cgpu_umap, 0);
	if (!cgpu_obj_cache || !cgpu_mem_cache || !cgpu_dup_cache ||
	    !cgpu_umap_cache) {
		kmem_cache_destroy(cgpu_obj_cache);
		kmem_cache_destroy(cgpu_mem_cache);
		kmem_cache_destroy(cgpu_dup_cache);
		kmem_cache_destroy(cgpu_umap_cache);
		return -ENOMEM;
	}
	return 0;
}

/* At unload no charge is left (each pins an instance, which pins us). */
void cgpu_track_exit(void)
{
	struct cgpu_client *c;
	struct hlist_node *tmp;
	int bkt, cpu;

	cgpu_track_lock_take();
	hash_for_each_safe(cgpu_client_ht, bkt, tmp, c, hnode)
		cgpu_client_destroy(c);
	WARN_ON(cgpu_map_nr || !list_empty(&cgpu_umaps));
	kvfree(cgpu_map_ht);
	cgpu_map_ht = NULL;
	mutex_unlock(&cgpu_track_lock);
	for_each_possible_cpu(cpu) {
		if (per_cpu(cgpu_mem_spare, cpu))
			kmem_cache_free(cgpu_mem_cache, per_cpu(cgpu_mem_spare, cpu));
		per_cpu(cgpu_mem_spare, cpu) = NULL;
	}
	kmem_cache_destroy(cgpu_obj_cache);
	kmem_cache_destroy(cgpu_mem_cache);
	kmem_cache_destroy(cgpu_dup_cache);
	kmem_cache_destroy(cgpu_umap_cache);
}
