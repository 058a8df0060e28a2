// SPDX-License-Identifier: GPL-2.0
/*
 * cgpu.ko: per-container GPU memory partitioning for the NVIDIA driver.
 *
 * cgpu_ctl.c    /dev/cgpu, the control ABI (include/uapi/cgpu.h)
 * cgpu_inst.c   instances and their cgroup v2 attachments
 * cgpu_hook.c   ftrace hooks on the driver's entry points
 * cgpu_nv.c     nvidia.ko calls: decoded and routed to
 *   cgpu_admit.c    device memory: admission and accounting
 *   cgpu_vidheap.c  VID_HEAP_CONTROL
 *   cgpu_meminfo.c  the memory the card reports
 *   cgpu_gpumap.c   the driver's GPUs (deviceId -> minor) and version
 * cgpu_uvm.c    nvidia-uvm.ko calls: no managed memory in a slice
 * cgpu_track.c  the RM objects behind each charge
 * cgpu_proc.c   the /proc/cgpu_km compat view
 */
#define pr_fmt(fmt) "cgpu: " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>

#include "cgpu_priv.h"

/* On while any cgroup is attached: the hooks' fast path tests it. */
DEFINE_STATIC_KEY_FALSE(cgpu_attached_key);
/* RM clients tracked: frees and closes matter while there are any. */
atomic_t cgpu_nr_clients = ATOMIC_INIT(0);

unsigned int cgpu_max_inst = CGPU_MAX_INST_PER_GPU;

static int cgpu_max_inst_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int err = kstrtouint(val, 0, &v);

	if (err)
		return err;
	if (!v || v > CGPU_MAX_INST_PER_GPU)
		return -EINVAL;
	return param_set_uint(val, kp);
}

static const struct kernel_param_ops cgpu_max_inst_ops = {
	.set = cgpu_max_inst_set,
	.get = param_get_uint,
};

module_param_cb(max_inst, &cgpu_max_inst_ops, &cgpu_max_inst, 0444);
MODULE_PARM_DESC(max_inst, "instances per GPU, 1..20 (default 20); per GPU in /proc/cgpu_km/<gpu>/max_inst");

static int __init cgpu_init(void)
{
	int err;

	err = cgpu_track_init();
	if (err)
		return err;
	err = cgpu_proc_init();
	if (err)
		goto track_exit;
	err = cgpu_ctl_init();
	if (err)
		goto proc_exit;
	err = cgpu_hooks_init();
	if (err)
		goto ctl_exit;
	pr_info("version %s loaded (max_inst %u)\n", CGPU_VERSION, cgpu_max_inst);
	return 0;

ctl_exit:
	cgpu_ctl_exit();
proc_exit:
	cgpu_proc_exit();
track_exit:
	cgpu_track_exit();
	return err;
}

static void __exit cgpu_exit(void)
{
	cgpu_ctl_exit();
	cgpu_hooks_exit();
	cgpu_owner_exit();
	cgpu_track_exit();
	cgpu_uvm_exit();
	cgpu_inst_exit();
	cgpu_proc_exit();
	/* Nothing of ours may still wait for a grace period. */
	rcu_barrier();
	pr_info("unloaded\n");
}

module_init(cgpu_init);
module_exit(cgpu_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Per-container GPU memory partitioning for the NVIDIA driver");
MODULE_VERSION(CGPU_VERSION);
