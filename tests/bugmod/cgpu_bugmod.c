// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only module for the VM harness's negative check: each parameter plants
 * one bug at load time that a debug-kernel detector must report. With no
 * parameter it loads and unloads cleanly.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/slab.h>

static bool uaf;
module_param(uaf, bool, 0444);
MODULE_PARM_DESC(uaf, "read freed memory at load (KASAN use-after-free)");

static bool lockinv;
module_param(lockinv, bool, 0444);
MODULE_PARM_DESC(lockinv, "take two mutexes in both orders (lockdep)");

static bool leak;
module_param(leak, bool, 0444);
MODULE_PARM_DESC(leak, "allocate and drop a buffer (kmemleak)");

static bool warn;
module_param(warn, bool, 0444);
MODULE_PARM_DESC(warn, "WARN at load (any kernel: checks the harness's log check)");

static DEFINE_MUTEX(bugmod_a);
static DEFINE_MUTEX(bugmod_b);

/* Written with WRITE_ONCE so the compiler cannot drop the store. */
static void *bugmod_sink;

static int plant_uaf(void)
{
	char *p = kmalloc(64, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	p[0] = 'x';
	kfree(p);
	pr_info("read %d from a freed buffer\n", READ_ONCE(p[0]));
	return 0;
}

static void plant_lockinv(void)
{
	/* One thread, A then B, later B then A: an inversion that never blocks. */
	mutex_lock(&bugmod_a);
	mutex_lock(&bugmod_b);
	mutex_unlock(&bugmod_b);
	mutex_unlock(&bugmod_a);

	mutex_lock(&bugmod_b);
	mutex_lock(&bugmod_a);
	mutex_unlock(&bugmod_a);
	mutex_unlock(&bugmod_b);
	pr_info("took two mutexes in both orders\n");
}

static int plant_leak(void)
{
	void *p = kmalloc(128, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	memset(p, 0x5a, 128);
	/* The only reference goes away at once: kmemleak's next scan finds it. */
	WRITE_ONCE(bugmod_sink, p);
	WRITE_ONCE(bugmod_sink, NULL);
	pr_info("dropped the only pointer to a 128-byte buffer\n");
	return 0;
}

static int __init bugmod_init(void)
{
	int ret = 0;

	if (uaf)
		ret = plant_uaf();
	if (!ret && lockinv)
		plant_lockinv();
	if (!ret && leak)
		ret = plant_leak();
	if (!ret)
		WARN(warn, "cgpu_bugmod: planted warning\n");
	if (!ret)
		pr_info("loaded (uaf=%d lockinv=%d leak=%d warn=%d)\n",
			uaf, lockinv, leak, warn);
	return ret;
}

static void __exit bugmod_exit(void)
{
	pr_info("unloaded\n");
}

module_init(bugmod_init);
module_exit(bugmod_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("cgpu test-only module that plants bugs for the VM harness");
