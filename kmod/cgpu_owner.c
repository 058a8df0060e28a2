// SPDX-License-Identifier: GPL-2.0
/*
 * Who pays for a call: the owner of the driver fd it is made on.
 *
 * RM ties a client to the fd that made it, and an fd is a thing a process
 * can hand to another (SCM_RIGHTS, fork, pidfd_getfd).  If charges followed
 * the caller alone, a process in a slice could pass its /dev/nvidiactl fd
 * to a process outside any slice, which would then allocate on the slice's
 * client uncharged.  So an fd belongs to the cgroup of the first task in a
 * slice that made a call through it that cgpu looks at, and from then on
 * every such call on it, whoever makes it, is charged to that cgroup's
 * instance on the GPU in question; an fd no slice has touched charges the
 * caller's slice, if it is in one.  The ownership is the open file's
 * (struct file, shared by every copy of the fd), and it ends when the file
 * is released.
 *
 * Owned files sit in an RCU hash keyed by the file's address; while any is
 * owned the hooks stay armed (cgpu_hooks_idle()), so the release of every
 * owned file is seen and no address is reused while still owned.  An owner
 * holds a reference on its cgroup, dropped after a grace period, so readers
 * can walk from it under RCU alone.
 */
#define pr_fmt(fmt) "cgpu: " fmt

#include <linux/cgroup.h>
#include <linux/hash.h>
#include <linux/hashtable.h>
#include <linux/slab.h>

#include "cgpu_priv.h"

struct cgpu_owner {
	struct hlist_node hnode;
	struct file *file;	/* identity only */
	struct cgroup *cgrp;	/* holds a reference */
	struct rcu_head rcu;
};

static DEFINE_SPINLOCK(cgpu_owner_lock);
static DEFINE_HASHTABLE(cgpu_owner_ht, 8);
atomic_t cgpu_nr_owned = ATOMIC_INIT(0);

/* Under rcu_read_lock() or cgpu_owner_lock. */
static struct cgpu_owner *cgpu_owner_find(struct file *f)
{
	struct cgpu_owner *o;

	hash_for_each_possible_rcu(cgpu_owner_ht, o, hnode, (unsigned long)f) {
		if (o->file == f)
			return o;
	}
	return NULL;
}

/* The current task's cgroup owns f (unless someone's already does). */
static int cgpu_owner_claim(struct file *f)
{
	struct cgpu_owner *o;
	struct cgroup *cgrp;
	bool got;

	o = kmalloc(sizeof(*o), GFP_KERNEL);
	if (!o)
		return -ENOMEM;
	rcu_read_lock();
	cgrp = task_dfl_cgroup(current);
	got = css_tryget(&cgrp->self);
	rcu_read_unlock();
	if (!got) {
		/* The task's cgroup is going: it will be asked again. */
		kfree(o);
		return 0;
	}
	o->file = f;
	o->cgrp = cgrp;
	spin_lock(&cgpu_owner_lock);
	if (cgpu_owner_find(f)) {
		spin_unlock(&cgpu_owner_lock);
		cgroup_put(cgrp);
		kfree(o);
		return 0;
	}
	hash_add_rcu(cgpu_owner_ht, &o->hnode, (unsigned long)f);
	atomic_inc(&cgpu_nr_owned);
	spin_unlock(&cgpu_owner_lock);
	return 0;
}

/*
 * The instance a call on f is charged to on GPU gpu (CGPU_NO_GPU: any),
 * with a reference: the owner's, else the caller's (who then owns f).
 * NULL when neither is in a slice; an ERR_PTR when f should have become
 * the caller's and could not: the caller refuses the call (fail closed).
 */
struct cgpu_inst *cgpu_call_inst(struct file *f, u32 gpu)
{
	struct cgpu_inst *inst = NULL;
	struct cgpu_owner *o;
	bool owned = false;

	if (atomic_read(&cgpu_nr_owned)) {
		rcu_read_lock();
		o = cgpu_owner_find(f);
		if (o) {
			owned = true;
			inst = cgpu_cgroup_inst(o->cgrp, gpu);
		}
		rcu_read_unlock();
		if (owned)
			return inst;
	}
	inst = cgpu_current_inst(gpu);
	if (!inst && (gpu == CGPU_NO_GPU || !cgpu_current_attached()))
		return NULL;
	if (cgpu_owner_claim(f)) {
		if (inst)
			cgpu_inst_put(inst);
		return ERR_PTR(-ENOMEM);
	}
	return inst;
}

/* Is a call on f one of a slice's (the owner's, or the caller's)? */
bool cgpu_call_attached(struct file *f)
{
	struct cgpu_inst *inst = cgpu_call_inst(f, CGPU_NO_GPU);

	if (IS_ERR_OR_NULL(inst))
		return !!inst;
	cgpu_inst_put(inst);
	return true;
}

static void cgpu_owner_free(struct rcu_head *rcu)
{
	struct cgpu_owner *o = container_of(rcu, struct cgpu_owner, rcu);

	cgroup_put(o->cgrp);
	kfree(o);
}

/* f's last reference went (the driver's release ran). */
void cgpu_owner_file_closed(struct file *f)
{
	struct cgpu_owner *o;

	if (!atomic_read(&cgpu_nr_owned))
		return;
	spin_lock(&cgpu_owner_lock);
	o = cgpu_owner_find(f);
	if (o) {
		hash_del_rcu(&o->hnode);
		atomic_dec(&cgpu_nr_owned);
	}
	spin_unlock(&cgpu_owner_lock);
	if (!o)
		return;
	call_rcu(&o->rcu, cgpu_owner_free);
	cgpu_hooks_maybe_disarm();
}

/* At unload the hooks are out: no reader is left. */
void cgpu_owner_exit(void)
{
	struct hlist_node *tmp;
	struct cgpu_owner *o;
	int bkt;

	hash_for_each_safe(cgpu_owner_ht, bkt, tmp, o, hnode) {
		hash_del(&o->hnode);
		cgroup_put(o->cgrp);
		kfree(o);
	}
	atomic_set(&cgpu_nr_owned, 0);
}
