// SPDX-License-Identifier: GPL-2.0
/*
 * Hooks on the NVIDIA driver's entry points.
 *
 * Why ftrace with IPMODIFY (the mechanism livepatch uses) rather than a
 * proxy device or a swapped file_operations:
 *  - the files user space opens stay the driver's own: f_op is still
 *    &nvidia_fops / &uvm_fops, the inode is still 195:N or nvidia-uvm's,
 *    so every check the driver makes on fds handed to it (REGISTER_FD,
 *    RM_MAP_MEMORY, UVM_MM_INITIALIZE, nv_match_dev_state, uvm_fops
 *    identity; docs/nvidia-abi.md 8) keeps passing;
 *  - uvm_fops is const and the entry points are static, so there is
 *    nothing to patch but the code itself; ftrace patches the fentry call
 *    every function already has, resolved by name at run time;
 *  - a kprobe would work too, but cannot replace a function: its handler
 *    runs before the original and would have to emulate it to refuse.
 *
 * The ftrace callback sends the call to our wrapper, which calls the
 * original just past its fentry call (so ftrace does not see it again) and
 * inspects or refuses around it.  Symbols are resolved with a disabled
 * kprobe ("module:symbol"; kallsyms_lookup_name is not exported) and each
 * address is checked to be that symbol's first byte in the target module.
 * Symbols are resolved when a target module comes (module notifier, or at
 * our load when it is already there) and forgotten when it goes.  The
 * ftrace ops are registered ("armed") only while something is attached or
 * tracked: the first attachment arms them before it is visible, and a work
 * item disarms them once nothing is attached or tracked any more, so that
 * a node without slices runs the driver's functions untouched.
 *
 * Armed but idle (cgpu_hooks_idle(): the moment before the work runs), the
 * callback does not redirect at all: the driver's function runs behind one
 * trampoline and a few loads.  Otherwise the nvidia.ko
 * ioctl hook asks cgpu_nv_ioctl_wanted() first, from the arguments ftrace
 * saved, so that escapes and controls cgpu would only pass on take no
 * detour either.  The callback needs no saved registers (the ftrace_regs of
 * DYNAMIC_FTRACE_WITH_ARGS carry the arguments and the instruction pointer,
 * as for livepatch), does not sleep (the one user read it may do cannot
 * fault), and cannot recurse (nothing it calls reaches a hooked function),
 * so ftrace calls it directly.
 *
 * Unloading: a call already redirected may still be inside a wrapper.  The
 * callback counts it (per-CPU, this_cpu_inc is preemption safe) before
 * redirecting and the wrapper uncounts it on return; exit removes the
 * hooks, waits for an RCU-tasks grace period (no task is left in a
 * callback, counted or not), for the count to drain, and then for another
 * grace period, which covers a task preempted between the uncount and its
 * return.
 */
#define pr_fmt(fmt) "cgpu: " fmt

#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/ftrace.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/rcupdate_wait.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "cgpu_priv.h"

static char *nv_modules = "nvidia,nvmock";
module_param(nv_modules, charp, 0444);
MODULE_PARM_DESC(nv_modules, "modules providing the nvidia.ko entry points (comma separated)");
static char *uvm_modules = "nvidia_uvm,nvmock";
module_param(uvm_modules, charp, 0444);
MODULE_PARM_DESC(uvm_modules, "modules providing the nvidia-uvm.ko entry points (comma separated)");
static char *nv_ioctl_sym = "nvidia_unlocked_ioctl";
module_param(nv_ioctl_sym, charp, 0444);
MODULE_PARM_DESC(nv_ioctl_sym, "nvidia.ko ioctl entry point (also its compat_ioctl)");
static char *nv_close_sym = "nvidia_close";
module_param(nv_close_sym, charp, 0444);
MODULE_PARM_DESC(nv_close_sym, "nvidia.ko release entry point");
static char *uvm_ioctl_sym = "uvm_unlocked_ioctl_entry";
module_param(uvm_ioctl_sym, charp, 0444);
MODULE_PARM_DESC(uvm_ioctl_sym, "nvidia-uvm.ko ioctl entry point");
static char *uvm_mmap_sym = "uvm_mmap_entry";
module_param(uvm_mmap_sym, charp, 0444);
MODULE_PARM_DESC(uvm_mmap_sym, "nvidia-uvm.ko mmap entry point");
static char *uvm_release_sym = "uvm_release_entry";
module_param(uvm_release_sym, charp, 0444);
MODULE_PARM_DESC(uvm_release_sym, "nvidia-uvm.ko release entry point");

DEFINE_PER_CPU(long, cgpu_inflight);

/* Argument n of the hooked function, from the callback's saved registers. */
#ifdef ftrace_regs_get_argument
#define cgpu_fregs_arg(fregs, n)	ftrace_regs_get_argument(fregs, n)
#else
#define cgpu_fregs_arg(fregs, n)	regs_get_kernel_argument(&(fregs)->regs, n)
#endif

struct cgpu_hook {
	char **sym;		/* module parameter */
	void *wrapper;
	/* ioctl hooks: does the wrapper want this call?  (NULL: always) */
	bool (*wanted)(unsigned int cmd, unsigned long arg);
	void **orig;		/* where the wrapper finds the original */
	struct ftrace_ops ops;
	unsigned long addr;
	bool on;
};

struct cgpu_target {
	const char *what;
	char **modules;		/* module parameter */
	struct cgpu_hook *hooks;
	unsigned int nr_hooks;
	char modname[MODULE_NAME_LEN];	/* where the hooks are, or "" */
	/*
	 * A module of ours that is loaded but cannot be hooked (a symbol of
	 * another driver branch, not an ftrace site): its calls would not be
	 * limited, so no cgroup is attached while it is there.
	 */
	char broken_mod[MODULE_NAME_LEN];
	const char *broken_sym;
};

/* ---- wrappers: what the redirected calls run ------------------------- */

static long cgpu_hook_nv_ioctl(struct file *f, unsigned int cmd,
			       unsigned long arg)
{
	long ret = cgpu_nv_ioctl(f, cmd, arg);

	cgpu_hook_exit();
	return ret;
}

static int cgpu_hook_nv_close(struct inode *inode, struct file *f)
{
	int ret = cgpu_nv_close(inode, f);

	cgpu_hooks_maybe_disarm();
	cgpu_hook_exit();
	return ret;
}

static long cgpu_hook_uvm_ioctl(struct file *f, unsigned int cmd,
				unsigned long arg)
{
	long ret = cgpu_uvm_ioctl(f, cmd, arg);

	cgpu_hook_exit();
	return ret;
}

static int cgpu_hook_uvm_mmap(struct file *f, struct vm_area_struct *vma)
{
	int ret = cgpu_uvm_mmap(f, vma);

	cgpu_hook_exit();
	return ret;
}

static int cgpu_hook_uvm_release(struct inode *inode, struct file *f)
{
	int ret = cgpu_uvm_release(inode, f);

	cgpu_hooks_maybe_disarm();
	cgpu_hook_exit();
	return ret;
}

static struct cgpu_hook cgpu_nv_hooks[] = {
	{ &nv_ioctl_sym, cgpu_hook_nv_ioctl, cgpu_nv_ioctl_wanted,
	  (void **)&cgpu_orig_nv_ioctl },
	{ &nv_close_sym, cgpu_hook_nv_close, NULL, (void **)&cgpu_orig_nv_close },
};

static struct cgpu_hook cgpu_uvm_hooks[] = {
	{ &uvm_ioctl_sym, cgpu_hook_uvm_ioctl, NULL, (void **)&cgpu_orig_uvm_ioctl },
	{ &uvm_mmap_sym, cgpu_hook_uvm_mmap, NULL, (void **)&cgpu_orig_uvm_mmap },
	{ &uvm_release_sym, cgpu_hook_uvm_release, NULL,
	  (void **)&cgpu_orig_uvm_release },
};

static struct cgpu_target cgpu_targets[] = {
	{ "nvidia", &nv_modules, cgpu_nv_hooks, ARRAY_SIZE(cgpu_nv_hooks) },
	{ "nvidia-uvm", &uvm_modules, cgpu_uvm_hooks, ARRAY_SIZE(cgpu_uvm_hooks) },
};

/* Serialises installing and removing hooks (our load, notifier, unload). */
static DEFINE_MUTEX(cgpu_hook_lock);
/*
 * Hooks registered (for targets present and to come); written under
 * cgpu_ctl_lock and this lock, read under either, and without them by
 * cgpu_hooks_maybe_disarm() and the disarm work's wait.
 */
static bool cgpu_armed;
/* Module exit has begun: nothing arms the hooks again (under cgpu_hook_lock). */
static bool cgpu_hooks_dying;

static void notrace cgpu_ftrace_cb(unsigned long ip, unsigned long parent_ip,
				   struct ftrace_ops *ops,
				   struct ftrace_regs *fregs)
{
	struct cgpu_hook *h = container_of(ops, struct cgpu_hook, ops);

	/* Our own call of the original at its entry (IBT kernels only). */
	if (IS_ENABLED(CONFIG_X86_KERNEL_IBT) &&
	    within_module(parent_ip, THIS_MODULE))
		return;
	if (cgpu_hooks_idle())
		return;
	if (h->wanted && !h->wanted(cgpu_fregs_arg(fregs, 1),
				    cgpu_fregs_arg(fregs, 2)))
		return;
	this_cpu_inc(cgpu_inflight);
	ftrace_instruction_pointer_set(fregs, (unsigned long)h->wrapper);
}

/* Too large for the stack together (KASAN kernels have 2 KiB frames). */
struct cgpu_resolve_buf {
	struct kprobe kp;
	char name[MODULE_NAME_LEN + KSYM_NAME_LEN + 2];
	char sym[KSYM_SYMBOL_LEN];
	char want[KSYM_NAME_LEN + 2];
};

/*
 * Where symbol sym of module modname starts.  The kprobe is registered
 * disabled: it only resolves the name, nothing is patched.
 */
static int cgpu_resolve(const char *modname, const char *sym,
			unsigned long *addr, unsigned long *start)
{
	struct cgpu_resolve_buf *b;
	unsigned long off;
	bool ftrace_site;
	size_t len;
	char *p;
	int err;

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	err = -ENAMETOOLONG;
	if (snprintf(b->name, sizeof(b->name), "%s:%s", modname, sym) >= sizeof(b->name))
		goto out;
	b->kp.symbol_name = b->name;
	b->kp.flags = KPROBE_FLAG_DISABLED;
	err = register_kprobe(&b->kp);
	if (err)
		goto out;
	*addr = (unsigned long)b->kp.addr;
	ftrace_site = b->kp.flags & KPROBE_FLAG_FTRACE;
	unregister_kprobe(&b->kp);
	if (!ftrace_site) {
		pr_err("%s:%s is not an ftrace site\n", modname, sym);
		err = -EOPNOTSUPP;
		goto out;
	}
	/* "sym+0x0/0x40 [module]": that symbol, in that module. */
	sprint_symbol(b->sym, *addr);
	snprintf(b->want, sizeof(b->want), "%s+", sym);
	len = strlen(b->sym);
	p = strrchr(b->sym, '[');
	if (strncmp(b->sym, b->want, strlen(b->want)) || !p || len < 2 ||
	    b->sym[len - 1] != ']' || strncmp(p + 1, modname, strlen(modname)) ||
	    p + 1 + strlen(modname) != b->sym + len - 1 ||
	    sscanf(b->sym + strlen(b->want), "0x%lx/", &off) != 1 || off > 16) {
		pr_err("%s:%s resolved to %s, not the target\n", modname, sym, b->sym);
		err = -ENOENT;
		goto out;
	}
	*start = *addr - off;
	err = 0;
out:
	kfree(b);
	return err;
}

/* Finds h's function in modname and where the wrapper calls it. */
static int cgpu_hook_resolve(struct cgpu_hook *h, const char *modname)
{
	unsigned long addr, start;
	int err;

	err = cgpu_resolve(modname, *h->sym, &addr, &start);
	if (err)
		return err;
	/*
	 * Call the original past its fentry, so the call is not traced
	 * again.  With IBT an indirect call must land on the ENDBR at the
	 * symbol's start; the callback then sees our module as the caller
	 * and lets it through.
	 */
	if (IS_ENABLED(CONFIG_X86_KERNEL_IBT))
		*h->orig = (void *)start;
	else
		*h->orig = (void *)(addr + MCOUNT_INSN_SIZE);
	h->addr = addr;
	return 0;
}

static int cgpu_hook_register(struct cgpu_hook *h)
{
	int err;

	memset(&h->ops, 0, sizeof(h->ops));
	h->ops.func = cgpu_ftrace_cb;
	/*
	 * PERMANENT: sysctl ftrace_enabled=0 must not switch enforcement off
	 * behind our back (registration fails instead while it is 0).
	 */
	h->ops.flags = FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_PERMANENT;
	if (!IS_ENABLED(CONFIG_HAVE_DYNAMIC_FTRACE_WITH_ARGS))
		h->ops.flags |= FTRACE_OPS_FL_SAVE_REGS;
	err = ftrace_set_filter_ip(&h->ops, h->addr, 0, 0);
	if (err)
		return err;
	err = register_ftrace_function(&h->ops);
	if (err) {
		ftrace_free_filter(&h->ops);
		return err;
	}
	h->on = true;
	return 0;
}

static void cgpu_hook_unregister(struct cgpu_hook *h)
{
	if (!h->on)
		return;
	/* Waits for RCU-tasks: no task is left in the trampoline after. */
	WARN_ON(unregister_ftrace_function(&h->ops));
	ftrace_free_filter(&h->ops);
	h->on = false;
}

static void cgpu_target_unregister(struct cgpu_target *t)
{
	unsigned int i;

	for (i = 0; i < t->nr_hooks; i++)
		cgpu_hook_unregister(&t->hooks[i]);
}

/* All of a resolved target's hooks or none. */
static int cgpu_target_register(struct cgpu_target *t)
{
	unsigned int i;
	int err = 0;

	lockdep_assert_held(&cgpu_hook_lock);
	for (i = 0; i < t->nr_hooks && !err; i++)
		err = cgpu_hook_register(&t->hooks[i]);
	if (err) {
		cgpu_target_unregister(t);
		pr_err("cannot hook %s in %s (%d): its calls are not limited\n",
		       t->what, t->modname, err);
	}
	return err;
}

static void cgpu_target_remove(struct cgpu_target *t)
{
	lockdep_assert_held(&cgpu_hook_lock);
	if (!t->modname[0])
		return;
	cgpu_target_unregister(t);
	pr_info("%s hooks removed from %s\n", t->what, t->modname);
	t->modname[0] = '\0';
}

/*
 * Resolves a target that came (present: the module is known to be loaded);
 * hooks it at once when armed.  A module counts as loaded when the notifier
 * says so, or when one of the target's symbols resolves in it: then a
 * symbol that does not resolve makes the target broken, not absent.
 */
static int cgpu_target_install(struct cgpu_target *t, const char *modname,
			       bool present)
{
	unsigned int i, found = 0, bad = 0;
	int err = 0, e;

	lockdep_assert_held(&cgpu_hook_lock);
	for (i = 0; i < t->nr_hooks; i++) {
		e = cgpu_hook_resolve(&t->hooks[i], modname);
		if (!e)
			found++;
		else if (!err)
			err = e, bad = i;
	}
	if (err) {
		if (present || found) {
			strscpy(t->broken_mod, modname, sizeof(t->broken_mod));
			t->broken_sym = *t->hooks[bad].sym;
			pr_err("cannot hook %s in %s: %s not found (%d); no cgroup can be attached while it is loaded\n",
			       t->what, modname, t->broken_sym, err);
		}
		return err;
	}
	strscpy(t->modname, modname, sizeof(t->modname));
	if (cgpu_armed && cgpu_target_register(t)) {
		t->modname[0] = '\0';
		strscpy(t->broken_mod, modname, sizeof(t->broken_mod));
		t->broken_sym = "ftrace";
		return -EIO;
	}
	t->broken_mod[0] = '\0';
	pr_info("%s hooks %s in %s\n", t->what,
		cgpu_armed ? "installed" : "ready", modname);
	return 0;
}

/*
 * Arms the hooks of every present target (and of targets that come later),
 * before the first attachment is made visible.  Called under cgpu_ctl_lock.
 */
int cgpu_hooks_arm(void)
{
	struct cgpu_target *t;
	int err = 0;

	lockdep_assert_held(&cgpu_ctl_lock);
	mutex_lock(&cgpu_hook_lock);
	if (cgpu_hooks_dying) {
		err = -ENODEV;
		goto unlock;
	}
	/* Fail closed: every driver module that is loaded is hooked. */
	for (t = cgpu_targets; t < cgpu_targets + ARRAY_SIZE(cgpu_targets); t++) {
		if (t->broken_mod[0]) {
			pr_warn_ratelimited("attach refused: %s in %s cannot be hooked (%s)\n",
					    t->what, t->broken_mod, t->broken_sym);
			err = -ENXIO;
			goto unlock;
		}
	}
	if (cgpu_armed)
		goto unlock;
	for (t = cgpu_targets; t < cgpu_targets + ARRAY_SIZE(cgpu_targets); t++) {
		if (t->modname[0]) {
			err = cgpu_target_register(t);
			if (err)
				break;
		}
	}
	if (err) {
		while (t-- > cgpu_targets)
			cgpu_target_unregister(t);
		goto unlock;
	}
	WRITE_ONCE(cgpu_armed, true);
	pr_info("hooks armed\n");
unlock:
	mutex_unlock(&cgpu_hook_lock);
	return err;
}

static long cgpu_inflight_sum(void)
{
	long inflight = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		inflight += per_cpu(cgpu_inflight, cpu);
	return inflight;
}

/*
 * Nothing attached and nothing tracked: the hooks come out, so that a node
 * where no container has a slice runs the driver exactly as without cgpu.
 * cgpu_ctl_lock keeps attachments from coming while they go.  A call
 * redirected before may still be in the driver, for as long as the driver
 * takes, and may still create tracking: the work waits for such calls
 * without the locks (control requests, and a first attachment that arms
 * the hooks again, are not held up), then checks idleness again and arms
 * the hooks again if it no longer holds.
 */
static void cgpu_disarm_fn(struct work_struct *work)
{
	struct cgpu_target *t;
	bool disarmed = false;

	mutex_lock(&cgpu_ctl_lock);
	mutex_lock(&cgpu_hook_lock);
	if (cgpu_armed && cgpu_hooks_idle()) {
		for (t = cgpu_targets; t < cgpu_targets + ARRAY_SIZE(cgpu_targets); t++)
			cgpu_target_unregister(t);
		WRITE_ONCE(cgpu_armed, false);
		disarmed = true;
	}
	mutex_unlock(&cgpu_hook_lock);
	mutex_unlock(&cgpu_ctl_lock);
	if (!disarmed)
		return;

	/* Armed again meanwhile: the hooks are in, nothing to check. */
	while (cgpu_inflight_sum() && !READ_ONCE(cgpu_armed))
		msleep(20);

	mutex_lock(&cgpu_ctl_lock);
	if (!cgpu_armed) {
		if (cgpu_hooks_idle())
			pr_info("hooks disarmed: nothing attached or tracked\n");
		else if (cgpu_hooks_arm())
			pr_err("cannot arm the hooks again: calls of tasks tracked are not seen\n");
	}
	mutex_unlock(&cgpu_ctl_lock);
}

static DECLARE_WORK(cgpu_disarm_work, cgpu_disarm_fn);

/* After an attachment or tracked object went: disarm soon if idle. */
void cgpu_hooks_maybe_disarm(void)
{
	if (cgpu_hooks_idle() && READ_ONCE(cgpu_armed))
		schedule_work(&cgpu_disarm_work);
}

/* Is name one of the comma-separated list? */
static bool cgpu_name_listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while (p && *p) {
		if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == '\0'))
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

static int cgpu_module_notify(struct notifier_block *nb, unsigned long action,
			      void *data)
{
	struct module *mod = data;
	struct cgpu_target *t;

	mutex_lock(&cgpu_hook_lock);
	for (t = cgpu_targets; t < cgpu_targets + ARRAY_SIZE(cgpu_targets); t++) {
		switch (action) {
		case MODULE_STATE_COMING:
			/*
			 * Before the module's init runs, so no call made
			 * through its devices escapes us.
			 */
		case MODULE_STATE_LIVE:
			if (!cgpu_name_listed(*t->modules, mod->name))
				break;
			/*
			 * The module's own version picks the layouts, read
			 * again once its init ran (a mock sets it there).
			 */
			if (mod->version)
				cgpu_nv_learn_version(mod->version, strlen(mod->version));
			if (t->modname[0] || !strcmp(t->broken_mod, mod->name))
				break;
			cgpu_target_install(t, mod->name, true);
			break;
		case MODULE_STATE_GOING:
			if (!strcmp(t->modname, mod->name))
				cgpu_target_remove(t);
			if (!strcmp(t->broken_mod, mod->name))
				t->broken_mod[0] = '\0';
			break;
		}
	}
	mutex_unlock(&cgpu_hook_lock);
	return NOTIFY_OK;
}

static struct notifier_block cgpu_module_nb = {
	.notifier_call = cgpu_module_notify,
};

void cgpu_hooks_show(struct seq_file *m)
{
	struct cgpu_target *t;

	mutex_lock(&cgpu_hook_lock);
	for (t = cgpu_targets; t < cgpu_targets + ARRAY_SIZE(cgpu_targets); t++) {
		if (t->broken_mod[0])
			seq_printf(m, "%s: - (%s is loaded, %s cannot be hooked: attach refused)\n",
				   t->what, t->broken_mod, t->broken_sym);
		else
			seq_printf(m, "%s: %s\n", t->what,
				   t->modname[0] ? t->modname : "-");
	}
	seq_printf(m, "armed: %s\n", cgpu_armed ? "yes" : "no");
	mutex_unlock(&cgpu_hook_lock);
}

/*
 * A target module loaded before us: its version is in sysfs (the
 * notifier's struct module is not ours to find).  Unreadable, the layouts
 * stay at the newest; nvidia.ko always has one.
 */
static void cgpu_learn_loaded_version(const char *modname)
{
	char path[MODULE_NAME_LEN + 24], buf[64];
	struct file *f;
	loff_t pos = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/module/%s/version", modname);
	f = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(f)) {
		pr_warn("%s: no version (%ld): UVM layouts as of the newest driver\n",
			modname, PTR_ERR(f));
		return;
	}
	n = kernel_read(f, buf, sizeof(buf) - 1, &pos);
	filp_close(f, NULL);
	if (n > 0) {
		buf[n] = '\0';
		cgpu_nv_learn_version(buf, n);
	}
}

int cgpu_hooks_init(void)
{
	char name[MODULE_NAME_LEN];
	char found[ARRAY_SIZE(cgpu_targets)][MODULE_NAME_LEN] = {};
	struct cgpu_target *t;
	const char *p, *end;
	unsigned int i;
	int err;

	err = register_module_notifier(&cgpu_module_nb);
	if (err)
		return err;
	/*
	 * Targets already loaded.  The notifier is in place first, so a target
	 * going away meanwhile is removed again by it (it waits for our lock).
	 */
	mutex_lock(&cgpu_hook_lock);
	for (t = cgpu_targets; t < cgpu_targets + ARRAY_SIZE(cgpu_targets); t++) {
		for (p = *t->modules; p && *p && !t->modname[0]; p = end) {
			end = strchrnul(p, ',');
			if (end - p > 0 && end - p < sizeof(name)) {
				memcpy(name, p, end - p);
				name[end - p] = '\0';
				/* present when any of the symbols resolves */
				if (!cgpu_target_install(t, name, false))
					strscpy(found[t - cgpu_targets], name,
						sizeof(found[0]));
			}
			if (*end)
				end++;
		}
	}
	mutex_unlock(&cgpu_hook_lock);
	/*
	 * Their versions, read without our lock: a sysfs read takes the
	 * seq_file lock, which /proc/cgpu_km/hooks holds when it takes ours.
	 */
	for (i = 0; i < ARRAY_SIZE(found); i++) {
		if (found[i][0])
			cgpu_learn_loaded_version(found[i]);
	}
	return 0;
}

void cgpu_hooks_exit(void)
{
	struct cgpu_target *t;

	unregister_module_notifier(&cgpu_module_nb);
	mutex_lock(&cgpu_hook_lock);
	cgpu_hooks_dying = true;
	for (t = cgpu_targets; t < cgpu_targets + ARRAY_SIZE(cgpu_targets); t++)
		cgpu_target_remove(t);
	mutex_unlock(&cgpu_hook_lock);
	/* Tasks between the trampoline and our count are past it now. */
	synchronize_rcu_tasks();
	while (cgpu_inflight_sum())
		msleep(20);
	/* And those preempted between the uncount and their return. */
	synchronize_rcu_tasks();
	/*
	 * Only now: a call that was still in the driver could queue the
	 * disarm work again on its way out, and the work must not run in a
	 * module that is gone.  Nothing queues it any more.
	 */
	cancel_work_sync(&cgpu_disarm_work);
}
