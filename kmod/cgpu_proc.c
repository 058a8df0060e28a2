// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/cgpu_km: the view Alibaba cGPU's users know (docs/design.md):
 *   version, hooks (ours: which module each hook set sits in)
 *   <gpu>/policy, <gpu>/max_inst (root may write 1..20), <gpu>/free_weight
 *   <gpu>/<instance>/id, memsize (bytes; root may write: the limit),
 *   meminfo ("Free: <bytes>", then "PID: <pid> Mem: <bytes>" lines), weight
 * Everything else is read-only; the daemon uses /dev/cgpu, not this.
 *
 * /proc/cgpu_km is visible in every procfs, a container's too, and uid 0
 * in a container is the default of most images.  So a file's mode is not
 * the rule: a write needs CAP_SYS_ADMIN in the initial user namespace, of
 * the task that opened the file and of the one writing, and is refused to
 * a task inside a slice whatever its capabilities (a privileged container
 * must not raise its own limit).  meminfo names host processes and their
 * usage: it is for such an admin, or for a task of that very instance,
 * which sees only the processes its own pid namespace can see, by the
 * numbers it knows them by.
 */
#define pr_fmt(fmt) "cgpu: " fmt

#include <linux/capability.h>
#include <linux/pid_namespace.h>
#include <linux/proc_fs.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "cgpu_priv.h"

static struct proc_dir_entry *cgpu_proc_root;

/* A node admin: CAP_SYS_ADMIN in the initial user namespace, in no slice. */
static bool cgpu_proc_admin(struct file *f)
{
	return file_ns_capable(f, &init_user_ns, CAP_SYS_ADMIN) &&
	       capable(CAP_SYS_ADMIN) && !cgpu_current_attached();
}

static int cgpu_proc_version_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%s\n", CGPU_VERSION);
	return 0;
}

static int cgpu_proc_hooks_show(struct seq_file *m, void *v)
{
	cgpu_hooks_show(m);
	return 0;
}

/* ---- per GPU ------------------------------------------------------------ */

static int cgpu_proc_policy_show(struct seq_file *m, void *v)
{
	u32 max, nr, wsum;

	cgpu_gpu_read(m->private, &max, &nr, &wsum);
	/* cGPU's numbers: 0 equal share, 2 weighted share */
	seq_printf(m, "%u\n", wsum > nr ? 2 : 0);
	return 0;
}

static int cgpu_proc_free_weight_show(struct seq_file *m, void *v)
{
	u32 max, nr, wsum;

	cgpu_gpu_read(m->private, &max, &nr, &wsum);
	seq_printf(m, "%u\n", max > wsum ? max - wsum : 0);
	return 0;
}

static int cgpu_proc_max_inst_show(struct seq_file *m, void *v)
{
	u32 max, nr, wsum;

	cgpu_gpu_read(m->private, &max, &nr, &wsum);
	seq_printf(m, "%u\n", max);
	return 0;
}

static int cgpu_proc_max_inst_open(struct inode *inode, struct file *f)
{
	return single_open(f, cgpu_proc_max_inst_show, pde_data(inode));
}

static ssize_t cgpu_proc_max_inst_write(struct file *f, const char __user *ubuf,
					size_t len, loff_t *off)
{
	u32 v;
	int err;

	if (!cgpu_proc_admin(f))
		return -EPERM;
	err = kstrtou32_from_user(ubuf, len, 0, &v);
	if (err)
		return err;
	err = cgpu_gpu_set_max_inst(pde_data(file_inode(f)), v);
	return err ? err : len;
}

static const struct proc_ops cgpu_proc_max_inst_ops = {
	.proc_open = cgpu_proc_max_inst_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
	.proc_write = cgpu_proc_max_inst_write,
};

struct proc_dir_entry *cgpu_proc_gpu_add(struct cgpu_gpu *g)
{
	struct proc_dir_entry *d;
	char name[16];

	if (!cgpu_proc_root)
		return NULL;
	snprintf(name, sizeof(name), "%u", g->minor);
	d = proc_mkdir(name, cgpu_proc_root);
	if (!d)
		return NULL;
	if (!proc_create_single_data("policy", 0444, d, cgpu_proc_policy_show, g) ||
	    !proc_create_single_data("free_weight", 0444, d,
				     cgpu_proc_free_weight_show, g) ||
	    !proc_create_data("max_inst", 0644, d, &cgpu_proc_max_inst_ops, g)) {
		proc_remove(d);
		return NULL;
	}
	return d;
}

/* ---- per instance --------------------------------------------------------- */

static int cgpu_proc_id_show(struct seq_file *m, void *v)
{
	struct cgpu_inst *inst = m->private;

	seq_printf(m, "%llu\n", inst->id);
	return 0;
}

static int cgpu_proc_weight_show(struct seq_file *m, void *v)
{
	struct cgpu_inst *inst = m->private;

	seq_printf(m, "%u\n", READ_ONCE(inst->weight));
	return 0;
}

/*
 * Processes by their number in the reader's pid namespace; one that
 * namespace cannot see is left out (tgid is the number in the initial one).
 */
static int cgpu_proc_meminfo_show(struct seq_file *m, void *v)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	struct cgpu_inst *inst = m->private;
	struct cgpu_proc *p;
	pid_t nr;

	spin_lock(&inst->lock);
	seq_printf(m, "Free: %llu\n",
		   inst->limit > inst->used ? inst->limit - inst->used : 0);
	rcu_read_lock();
	list_for_each_entry(p, &inst->procs, node) {
		if (!p->nr)
			continue;
		nr = pid_nr_ns(find_pid_ns(p->tgid, &init_pid_ns), ns);
		if (nr)
			seq_printf(m, "PID: %d Mem: %llu\n", nr, p->bytes);
	}
	rcu_read_unlock();
	spin_unlock(&inst->lock);
	return 0;
}

/* For a node admin, or a task of this instance (see the top of the file). */
static int cgpu_proc_meminfo_open(struct inode *inode, struct file *f)
{
	struct cgpu_inst *inst = pde_data(inode);
	struct cgpu_inst *mine;

	if (!cgpu_proc_admin(f)) {
		mine = cgpu_current_inst(inst->gpu);
		if (mine)
			cgpu_inst_put(mine);
		if (mine != inst)
			return -EACCES;
	}
	return single_open(f, cgpu_proc_meminfo_show, inst);
}

static const struct proc_ops cgpu_proc_meminfo_ops = {
	.proc_open = cgpu_proc_meminfo_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

static int cgpu_proc_memsize_show(struct seq_file *m, void *v)
{
	struct cgpu_inst *inst = m->private;
	u64 limit, used;

	cgpu_inst_view(inst, &limit, &used);
	seq_printf(m, "%llu\n", limit);
	return 0;
}

static int cgpu_proc_memsize_open(struct inode *inode, struct file *f)
{
	return single_open(f, cgpu_proc_memsize_show, pde_data(inode));
}

static ssize_t cgpu_proc_memsize_write(struct file *f, const char __user *ubuf,
				       size_t len, loff_t *off)
{
	struct cgpu_inst *inst = pde_data(file_inode(f));
	u64 v;
	int err;

	if (!cgpu_proc_admin(f))
		return -EPERM;
	err = kstrtou64_from_user(ubuf, len, 0, &v);
	if (err)
		return err;
	err = cgpu_inst_set(inst->id, CGPU_SET_MEM_LIMIT, v, 0);
	return err ? err : len;
}

static const struct proc_ops cgpu_proc_memsize_ops = {
	.proc_open = cgpu_proc_memsize_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
	.proc_write = cgpu_proc_memsize_write,
};

/*
 * The files use the instance without a reference: the directory is removed
 * (which waits for open files' callers) before the instance can go.
 */
struct proc_dir_entry *cgpu_proc_inst_add(struct cgpu_inst *inst,
					  struct proc_dir_entry *parent)
{
	struct proc_dir_entry *d;

	if (!parent)
		return NULL;
	d = proc_mkdir(inst->name, parent);
	if (!d)
		return NULL;
	if (!proc_create_single_data("id", 0444, d, cgpu_proc_id_show, inst) ||
	    !proc_create_single_data("weight", 0444, d, cgpu_proc_weight_show, inst) ||
	    !proc_create_data("meminfo", 0444, d, &cgpu_proc_meminfo_ops, inst) ||
	    !proc_create_data("memsize", 0644, d, &cgpu_proc_memsize_ops, inst)) {
		proc_remove(d);
		return NULL;
	}
	return d;
}

int cgpu_proc_init(void)
{
	cgpu_proc_root = proc_mkdir("cgpu_km", NULL);
	if (!cgpu_proc_root)
		return -ENOMEM;
	if (!proc_create_single("version", 0444, cgpu_proc_root,
				cgpu_proc_version_show) ||
	    !proc_create_single("hooks", 0444, cgpu_proc_root,
				cgpu_proc_hooks_show)) {
		proc_remove(cgpu_proc_root);
		cgpu_proc_root = NULL;
		return -ENOMEM;
	}
	return 0;
}

void cgpu_proc_exit(void)
{
	proc_remove(cgpu_proc_root);
	cgpu_proc_root = NULL;
}
