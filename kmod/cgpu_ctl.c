// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/cgpu: the control device the daemon drives (include/uapi/cgpu.h).
 * Root only: the node is 0600 and every command wants CAP_SYS_ADMIN, as
 * an fd passed to an unprivileged process must not carry the power along.
 */
#define pr_fmt(fmt) "cgpu: " fmt

#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "cgpu_priv.h"

/* The layout a mirror of the ABI checks against. */
static_assert(sizeof(struct cgpu_version) == 48);
static_assert(sizeof(struct cgpu_create) == 128);
static_assert(offsetof(struct cgpu_create, mem_limit) == 64);
static_assert(offsetof(struct cgpu_create, id) == 88);
static_assert(sizeof(struct cgpu_destroy) == 32);
static_assert(sizeof(struct cgpu_attach) == 40);
static_assert(sizeof(struct cgpu_set) == 40);
static_assert(sizeof(struct cgpu_stats) == 176);
static_assert(offsetof(struct cgpu_stats, mem_limit) == 80);
static_assert(offsetof(struct cgpu_stats, gpu) == 128);
static_assert(offsetof(struct cgpu_stats, live_allocs) == 144);
static_assert(sizeof(struct cgpu_list) == 32);

static bool cgpu_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

static long cgpu_ioc_version(void __user *up)
{
	struct cgpu_version v;

	if (copy_from_user(&v, up, sizeof(v)))
		return -EFAULT;
	if (!cgpu_zero(v.reserved, sizeof(v.reserved)))
		return -EINVAL;
	memset(&v, 0, sizeof(v));
	v.abi_major = CGPU_ABI_MAJOR;
	v.abi_minor = CGPU_ABI_MINOR;
	v.max_inst = cgpu_max_inst;
	v.name_len = CGPU_NAME_LEN;
	return copy_to_user(up, &v, sizeof(v)) ? -EFAULT : 0;
}

static long cgpu_ioc_create(void __user *up)
{
	struct cgpu_create c;
	long err;

	if (copy_from_user(&c, up, sizeof(c)))
		return -EFAULT;
	if (c.flags || c.reserved0 ||
	    !cgpu_zero(c.reserved, sizeof(c.reserved)))
		return -EINVAL;
	err = cgpu_inst_create(&c, &c.id);
	if (err)
		return err;
	/* The instance exists now; the caller learns its id from list if this fails. */
	return put_user(c.id, (u64 __user *)(up + offsetof(struct cgpu_create, id)));
}

static long cgpu_ioc_destroy(void __user *up)
{
	struct cgpu_destroy d;

	if (copy_from_user(&d, up, sizeof(d)))
		return -EFAULT;
	if ((d.flags & ~CGPU_DESTROY_FORCE) || d.reserved0 ||
	    !cgpu_zero(d.reserved, sizeof(d.reserved)))
		return -EINVAL;
	return cgpu_inst_destroy(d.id, d.flags & CGPU_DESTROY_FORCE);
}

static long cgpu_ioc_attach(void __user *up, bool attach)
{
	struct cgpu_attach a;

	if (copy_from_user(&a, up, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved0 || !cgpu_zero(a.reserved, sizeof(a.reserved)))
		return -EINVAL;
	if (attach)
		return cgpu_inst_attach(a.id, a.cgroup_id);
	return cgpu_inst_detach(a.id, a.cgroup_id);
}

static long cgpu_ioc_set(void __user *up)
{
	struct cgpu_set s;

	if (copy_from_user(&s, up, sizeof(s)))
		return -EFAULT;
	if (!cgpu_zero(s.reserved, sizeof(s.reserved)))
		return -EINVAL;
	return cgpu_inst_set(s.id, s.flags, s.mem_limit, s.weight);
}

static long cgpu_ioc_stats(void __user *up)
{
	struct cgpu_stats st;
	u64 id;
	long err;

	if (copy_from_user(&st, up, sizeof(st)))
		return -EFAULT;
	if (st.reserved_in)
		return -EINVAL;
	id = st.id;
	memset(&st, 0, sizeof(st));
	st.id = id;
	err = cgpu_inst_stats(&st);
	if (err)
		return err;
	return copy_to_user(up, &st, sizeof(st)) ? -EFAULT : 0;
}

static long cgpu_ioc_list(void __user *up)
{
	struct cgpu_list l;
	u64 *ids = NULL;
	u32 count, n;
	long err;

	if (copy_from_user(&l, up, sizeof(l)))
		return -EFAULT;
	if (!cgpu_zero(l.reserved, sizeof(l.reserved)) ||
	    l.capacity > CGPU_LIST_MAX_CAPACITY || (l.capacity && !l.ids))
		return -EINVAL;
	if (l.capacity) {
		ids = kvcalloc(l.capacity, sizeof(*ids), GFP_KERNEL);
		if (!ids)
			return -ENOMEM;
	}
	cgpu_inst_list(ids, l.capacity, &count);
	n = min(count, l.capacity);
	err = 0;
	if (n && copy_to_user(u64_to_user_ptr(l.ids), ids, n * sizeof(*ids)))
		err = -EFAULT;
	kvfree(ids);
	if (err)
		return err;
	return put_user(count, (u32 __user *)(up + offsetof(struct cgpu_list, count)));
}

static long cgpu_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	void __user *up = (void __user *)arg;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	switch (cmd) {
	case CGPU_IOC_VERSION:
		return cgpu_ioc_version(up);
	case CGPU_IOC_CREATE:
		return cgpu_ioc_create(up);
	case CGPU_IOC_DESTROY:
		return cgpu_ioc_destroy(up);
	case CGPU_IOC_ATTACH:
		return cgpu_ioc_attach(up, true);
	case CGPU_IOC_DETACH:
		return cgpu_ioc_attach(up, false);
	case CGPU_IOC_SET:
		return cgpu_ioc_set(up);
	case CGPU_IOC_STATS:
		return cgpu_ioc_stats(up);
	case CGPU_IOC_LIST:
		return cgpu_ioc_list(up);
	}
	return -ENOTTY;
}

static const struct file_operations cgpu_ctl_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = cgpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice cgpu_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "cgpu",
	.fops = &cgpu_ctl_fops,
	.mode = 0600,
};

int cgpu_ctl_init(void)
{
	return misc_register(&cgpu_misc);
}

void cgpu_ctl_exit(void)
{
	misc_deregister(&cgpu_misc);
}
