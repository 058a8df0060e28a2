// SPDX-License-Identifier: GPL-2.0
/*
 * Instances, the GPUs they sit on, and their binding to cgroup v2.
 *
 * The hooks ask one question on every NVIDIA call: does the calling task
 * belong to an instance?  Until the first cgroup is attached a static key
 * keeps the answer at a patched-out branch; after that the task's
 * default-hierarchy cgroup and its ancestors are looked up in an RCU hash of
 * attachments (a few loads per level, no lock).
 */
#define pr_fmt(fmt) "cgpu: " fmt

#include <linux/cgroup.h>
#include <linux/ctype.h>
#include <linux/hashtable.h>
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/xarray.h>

#include "cgpu_priv.h"

/* Instances, GPUs, attachments and their procfs entries. */
DEFINE_MUTEX(cgpu_ctl_lock);

/* id -> instance; the entry holds a reference.  Under cgpu_ctl_lock. */
static DEFINE_XARRAY(cgpu_insts);
static u64 cgpu_next_id = 1;
/* GPU minor -> struct cgpu_gpu, kept until unload.  Under cgpu_ctl_lock. */
static DEFINE_XARRAY(cgpu_gpus);

struct cgpu_binding {
	struct hlist_node hnode;	/* in cgpu_attach_ht, RCU */
	struct list_head inode;		/* in inst->attaches */
	u64 cgid;
	struct cgpu_inst *inst;		/* holds a reference */
	struct rcu_head rcu;
};

#define CGPU_ATTACH_BITS	8
static DEFINE_HASHTABLE(cgpu_attach_ht, CGPU_ATTACH_BITS);

static void cgpu_inst_release(struct kref *ref)
{
	struct cgpu_inst *inst = container_of(ref, struct cgpu_inst, ref);

	/* RCU readers may still be looking at it (kref_get_unless_zero). */
	kfree_rcu(inst, rcu);
	/* Each instance pinned the module: rmmod waits for the last one. */
	module_put(THIS_MODULE);
}

void cgpu_inst_put(struct cgpu_inst *inst)
{
	kref_put(&inst->ref, cgpu_inst_release);
}

/* Names become procfs directories: keep them to a safe alphabet. */
static bool cgpu_name_ok(const char *name)
{
	size_t len = strnlen(name, CGPU_NAME_LEN);
	size_t i;

	if (len == 0 || len == CGPU_NAME_LEN)
		return false;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (i = 0; i < len; i++) {
		if (!isalnum(name[i]) && name[i] != '_' && name[i] != '-' &&
		    name[i] != '.')
			return false;
	}
	return true;
}

static struct cgpu_inst *cgpu_inst_find(u64 id)
{
	lockdep_assert_held(&cgpu_ctl_lock);
	if (!id || id > ULONG_MAX)
		return NULL;
	return xa_load(&cgpu_insts, (unsigned long)id);
}

static struct cgpu_gpu *cgpu_gpu_get(u32 minor)
{
	struct cgpu_gpu *g;
	int err;

	lockdep_assert_held(&cgpu_ctl_lock);
	g = xa_load(&cgpu_gpus, minor);
	if (g)
		return g;
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return ERR_PTR(-ENOMEM);
	g->minor = minor;
	g->max_inst = cgpu_max_inst;
	err = xa_err(xa_store(&cgpu_gpus, minor, g, GFP_KERNEL));
	if (err) {
		kfree(g);
		return ERR_PTR(err);
	}
	/* The compat view is best effort: an instance works without it. */
	g->pde = cgpu_proc_gpu_add(g);
	return g;
}

int cgpu_inst_create(const struct cgpu_create *req, u64 *id)
{
	struct cgpu_inst *inst, *it;
	struct cgpu_gpu *g;
	unsigned long idx;
	u32 weight = req->weight ? req->weight : 1;
	int err;

	if (!cgpu_name_ok(req->name) || req->gpu > CGPU_MAX_GPU_MINOR ||
	    !req->mem_limit || req->mem_limit > CGPU_MEM_LIMIT_MAX ||
	    weight > CGPU_MAX_INST_PER_GPU)
		return -EINVAL;

	inst = kzalloc(sizeof(*inst), GFP_KERNEL);
	if (!inst)
		return -ENOMEM;
	kref_init(&inst->ref);
	strscpy(inst->name, req->name, sizeof(inst->name));
	inst->gpu = req->gpu;
	inst->weight = weight;
	inst->limit = req->mem_limit;
	spin_lock_init(&inst->lock);
	INIT_LIST_HEAD(&inst->procs);
	INIT_LIST_HEAD(&inst->attaches);

	mutex_lock(&cgpu_ctl_lock);
	xa_for_each(&cgpu_insts, idx, it) {
		if (!strcmp(it->name, inst->name)) {
			err = -EEXIST;
			goto unlock;
		}
	}
	g = cgpu_gpu_get(inst->gpu);
	if (IS_ERR(g)) {
		err = PTR_ERR(g);
		goto unlock;
	}
	if (g->nr_inst >= g->max_inst || g->weight_sum + weight > g->max_inst) {
		pr_info("Error occurs when creating cGPU instance: GPU %u has %u of %u instances (weights %u+%u)\n",
			g->minor, g->nr_inst, g->max_inst, g->weight_sum, weight);
		err = -ENOSPC;
		goto unlock;
	}
	inst->id = cgpu_next_id;
	err = xa_err(xa_store(&cgpu_insts, (unsigned long)inst->id, inst,
			      GFP_KERNEL));
	if (err)
		goto unlock;
	cgpu_next_id++;
	g->nr_inst++;
	g->weight_sum += weight;
	/* Released in cgpu_inst_release(): rmmod waits for every instance. */
	__module_get(THIS_MODULE);
	inst->pde = cgpu_proc_inst_add(inst, g->pde);
	*id = inst->id;
	mutex_unlock(&cgpu_ctl_lock);
	return 0;

unlock:
	mutex_unlock(&cgpu_ctl_lock);
	kfree(inst);
	return err;
}

static void cgpu_attach_remove(struct cgpu_binding *a)
{
	lockdep_assert_held(&cgpu_ctl_lock);
	hash_del_rcu(&a->hnode);
	list_del(&a->inode);
	a->inst->nr_attaches--;
	static_branch_dec(&cgpu_attached_key);
	cgpu_hooks_maybe_disarm();
	/*
	 * Readers may still hold a: it goes after a grace period.  Its
	 * instance reference goes now (the instance itself is freed with
	 * kfree_rcu, and readers only kref_get_unless_zero it), so that
	 * rmmod works as soon as the last instance is destroyed.
	 */
	cgpu_inst_put(a->inst);
	kfree_rcu(a, rcu);
}

int cgpu_inst_destroy(u64 id, bool force)
{
	struct cgpu_proc *p, *ptmp;
	struct cgpu_binding *a, *tmp;
	LIST_HEAD(emptied);
	struct proc_dir_entry *pde;
	struct cgpu_inst *inst;
	struct cgpu_gpu *g;
	bool busy;

	mutex_lock(&cgpu_ctl_lock);
	inst = cgpu_inst_find(id);
	if (!inst) {
		mutex_unlock(&cgpu_ctl_lock);
		return -ENOENT;
	}
	spin_lock(&inst->lock);
	busy = inst->used || inst->reserved;
	spin_unlock(&inst->lock);
	if (busy && !force) {
		mutex_unlock(&cgpu_ctl_lock);
		return -EBUSY;
	}
	pde = inst->pde;
	inst->pde = NULL;
	list_for_each_entry_safe(a, tmp, &inst->attaches, inode)
		cgpu_attach_remove(a);
	xa_erase(&cgpu_insts, (unsigned long)inst->id);
	inst->dead = true;
	g = xa_load(&cgpu_gpus, inst->gpu);
	if (!WARN_ON(!g)) {
		g->nr_inst--;
		g->weight_sum -= inst->weight;
	}
	mutex_unlock(&cgpu_ctl_lock);
	/*
	 * Waits for procfs readers and writers, who use the instance without a
	 * reference; outside the lock, as a memsize write takes it.
	 */
	proc_remove(pde);
	/*
	 * Emptied process entries go now, each with its reference; from here
	 * on entries go as they empty.  Charges still held (forced destroy)
	 * keep the instance alive through their entries; their frees still
	 * credit it, so accounting stays exact until the last one goes.
	 */
	spin_lock(&inst->lock);
	inst->gone = true;
	list_for_each_entry_safe(p, ptmp, &inst->procs, node) {
		if (!p->nr)
			list_move(&p->node, &emptied);
	}
	spin_unlock(&inst->lock);
	list_for_each_entry_safe(p, ptmp, &emptied, node) {
		kfree(p);
		cgpu_inst_put(inst);
	}
	cgpu_inst_put(inst);
	return 0;
}

int cgpu_inst_attach(u64 id, u64 cgid)
{
	struct cgpu_binding *a, *it;
	struct cgpu_inst *inst;
	struct cgroup *cgrp;
	int err = 0;

	/* Only existing v2 cgroups, and only those the caller can see. */
	cgrp = cgroup_get_from_id(cgid);
	if (IS_ERR(cgrp))
		return -ENOENT;
	cgroup_put(cgrp);

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	mutex_lock(&cgpu_ctl_lock);
	inst = cgpu_inst_find(id);
	if (!inst) {
		err = -ENOENT;
		goto unlock;
	}
	hash_for_each_possible(cgpu_attach_ht, it, hnode, cgid) {
		if (it->cgid == cgid && it->inst->gpu == inst->gpu) {
			err = -EEXIST;
			goto unlock;
		}
	}
	/* The hooks are in before anyone can be found attached. */
	err = cgpu_hooks_arm();
	if (err)
		goto unlock;
	a->cgid = cgid;
	a->inst = inst;
	kref_get(&inst->ref);
	list_add_tail(&a->inode, &inst->attaches);
	inst->nr_attaches++;
	static_branch_inc(&cgpu_attached_key);
	hash_add_rcu(cgpu_attach_ht, &a->hnode, cgid);
	a = NULL;
unlock:
	mutex_unlock(&cgpu_ctl_lock);
	kfree(a);
	return err;
}

int cgpu_inst_detach(u64 id, u64 cgid)
{
	struct cgpu_binding *a;
	struct cgpu_inst *inst;
	int err = -ENOENT;

	mutex_lock(&cgpu_ctl_lock);
	inst = cgpu_inst_find(id);
	if (inst) {
		list_for_each_entry(a, &inst->attaches, inode) {
			if (a->cgid == cgid) {
				cgpu_attach_remove(a);
				err = 0;
				break;
			}
		}
	}
	mutex_unlock(&cgpu_ctl_lock);
	return err;
}

int cgpu_inst_set(u64 id, u32 flags, u64 limit, u32 weight)
{
	struct cgpu_inst *inst;
	struct cgpu_gpu *g;
	int err = 0;

	if (!flags || (flags & ~(CGPU_SET_MEM_LIMIT | CGPU_SET_WEIGHT)))
		return -EINVAL;
	if ((flags & CGPU_SET_MEM_LIMIT) &&
	    (!limit || limit > CGPU_MEM_LIMIT_MAX))
		return -EINVAL;
	if ((flags & CGPU_SET_WEIGHT) &&
	    (!weight || weight > CGPU_MAX_INST_PER_GPU))
		return -EINVAL;

	mutex_lock(&cgpu_ctl_lock);
	inst = cgpu_inst_find(id);
	if (!inst) {
		err = -ENOENT;
		goto unlock;
	}
	g = xa_load(&cgpu_gpus, inst->gpu);
	if ((flags & CGPU_SET_WEIGHT) && g &&
	    g->weight_sum - inst->weight + weight > g->max_inst) {
		err = -ENOSPC;
		goto unlock;
	}
	if (flags & CGPU_SET_MEM_LIMIT) {
		spin_lock(&inst->lock);
		/* Never below what is in use or admitted: nothing is revoked. */
		if (limit < inst->used + inst->reserved)
			err = -EBUSY;
		else
			inst->limit = limit;
		spin_unlock(&inst->lock);
		if (err)
			goto unlock;
	}
	if (flags & CGPU_SET_WEIGHT) {
		if (g)
			g->weight_sum = g->weight_sum - inst->weight + weight;
		inst->weight = weight;
	}
unlock:
	mutex_unlock(&cgpu_ctl_lock);
	return err;
}

int cgpu_inst_stats(struct cgpu_stats *st)
{
	struct cgpu_inst *inst;

	mutex_lock(&cgpu_ctl_lock);
	inst = cgpu_inst_find(st->id);
	if (!inst) {
		mutex_unlock(&cgpu_ctl_lock);
		return -ENOENT;
	}
	strscpy_pad(st->name, inst->name, sizeof(st->name));
	st->gpu = inst->gpu;
	st->weight = inst->weight;
	st->nr_cgroups = inst->nr_attaches;
	spin_lock(&inst->lock);
	st->mem_limit = inst->limit;
	st->mem_used = inst->used;
	st->mem_peak = inst->peak;
	st->allocs = inst->allocs;
	st->live_allocs = inst->live_allocs;
	st->refused_allocs = inst->refused;
	st->refused_managed = inst->refused_managed;
	st->nr_procs = inst->nr_procs;
	spin_unlock(&inst->lock);
	mutex_unlock(&cgpu_ctl_lock);
	return 0;
}

int cgpu_inst_list(u64 *ids, u32 cap, u32 *count)
{
	struct cgpu_inst *inst;
	unsigned long idx;
	u32 n = 0;

	mutex_lock(&cgpu_ctl_lock);
	xa_for_each(&cgpu_insts, idx, inst) {
		if (n < cap)
			ids[n] = inst->id;
		n++;
	}
	mutex_unlock(&cgpu_ctl_lock);
	*count = n;
	return 0;
}

u32 cgpu_inst_count(void)
{
	struct cgpu_inst *inst;
	unsigned long idx;
	u32 n = 0;

	mutex_lock(&cgpu_ctl_lock);
	xa_for_each(&cgpu_insts, idx, inst)
		n++;
	mutex_unlock(&cgpu_ctl_lock);
	return n;
}

/*
 * The instance of cgroup cgrp on GPU gpu (CGPU_NO_GPU: on any GPU), with a
 * reference, or NULL.  The nearest attached ancestor wins.  Under
 * rcu_read_lock(), which keeps cgrp's ancestors and the bindings alive.
 */
struct cgpu_inst *cgpu_cgroup_inst(struct cgroup *cgrp, u32 gpu)
{
	struct cgpu_inst *found = NULL;
	struct cgpu_binding *a;
	u64 cgid;

	if (!static_branch_unlikely(&cgpu_attached_key))
		return NULL;
	for (; cgrp && !found; cgrp = cgroup_parent(cgrp)) {
		cgid = cgroup_id(cgrp);
		hash_for_each_possible_rcu(cgpu_attach_ht, a, hnode, cgid) {
			if (a->cgid != cgid)
				continue;
			if (gpu != CGPU_NO_GPU && a->inst->gpu != gpu)
				continue;
			if (kref_get_unless_zero(&a->inst->ref)) {
				found = a->inst;
				break;
			}
		}
	}
	return found;
}

/* The instance the current task belongs to on GPU gpu; see above. */
struct cgpu_inst *cgpu_current_inst(u32 gpu)
{
	struct cgpu_inst *found;

	if (!static_branch_unlikely(&cgpu_attached_key))
		return NULL;
	rcu_read_lock();
	found = cgpu_cgroup_inst(task_dfl_cgroup(current), gpu);
	rcu_read_unlock();
	return found;
}

bool cgpu_current_attached(void)
{
	struct cgpu_inst *inst = cgpu_current_inst(CGPU_NO_GPU);

	if (!inst)
		return false;
	cgpu_inst_put(inst);
	return true;
}

/*
 * Admission: reserve size bytes unless the instance would go over its
 * limit.  The reservation is what makes check-and-charge atomic: racing
 * allocations each see the others' reservations.
 */
int cgpu_inst_reserve(struct cgpu_inst *inst, u64 size)
{
	int err = 0;

	spin_lock(&inst->lock);
	if (size > inst->limit ||
	    inst->used + inst->reserved > inst->limit - size) {
		inst->refused++;
		err = -ENOSPC;
	} else {
		inst->reserved += size;
	}
	spin_unlock(&inst->lock);
	return err;
}

void cgpu_inst_unreserve(struct cgpu_inst *inst, u64 size)
{
	spin_lock(&inst->lock);
	inst->reserved -= size;
	spin_unlock(&inst->lock);
}

void cgpu_inst_count_refused(struct cgpu_inst *inst)
{
	spin_lock(&inst->lock);
	inst->refused++;
	spin_unlock(&inst->lock);
}

void cgpu_inst_count_managed(struct cgpu_inst *inst)
{
	spin_lock(&inst->lock);
	inst->refused_managed++;
	spin_unlock(&inst->lock);
}

void cgpu_inst_view(struct cgpu_inst *inst, u64 *limit, u64 *used)
{
	spin_lock(&inst->lock);
	*limit = inst->limit;
	*used = inst->used;
	spin_unlock(&inst->lock);
}

int cgpu_gpu_set_max_inst(struct cgpu_gpu *g, u32 max)
{
	int err = 0;

	if (!max || max > CGPU_MAX_INST_PER_GPU)
		return -EINVAL;
	mutex_lock(&cgpu_ctl_lock);
	if (max < g->nr_inst || max < g->weight_sum)
		err = -EBUSY;
	else
		g->max_inst = max;
	mutex_unlock(&cgpu_ctl_lock);
	return err;
}

void cgpu_gpu_read(struct cgpu_gpu *g, u32 *max, u32 *nr, u32 *weight_sum)
{
	mutex_lock(&cgpu_ctl_lock);
	*max = g->max_inst;
	*nr = g->nr_inst;
	*weight_sum = g->weight_sum;
	mutex_unlock(&cgpu_ctl_lock);
}

/* At unload no instance is left (each holds a module reference). */
void cgpu_inst_exit(void)
{
	struct cgpu_gpu *g;
	unsigned long idx;

	WARN_ON(!xa_empty(&cgpu_insts));
	xa_for_each(&cgpu_gpus, idx, g) {
		proc_remove(g->pde);
		kfree(g);
	}
	xa_destroy(&cgpu_gpus);
	xa_destroy(&cgpu_insts);
}
