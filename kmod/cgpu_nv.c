// SPDX-License-Identifier: GPL-2.0
/*
 * The nvidia.ko entry points (docs/nvidia-abi.md, in brackets): the ioctl
 * wrapper decodes an escape (unwrapping IOCTL_XFER_CMD) and routes the
 * ones cgpu looks into to the file that does that job:
 *   cgpu_admit.c    RM_ALLOC, RM_FREE, RM_DUP_OBJECT: admission, accounting
 *   cgpu_vidheap.c  VID_HEAP_CONTROL
 *   cgpu_meminfo.c  the FB_GET_INFO controls: the memory the card reports
 *   cgpu_gpumap.c   GPU_GET_ID_INFO_V2, CARD_INFO
 * Everything else goes to the driver untouched, and most of it not even
 * through the wrapper (cgpu_nv_ioctl_wanted()).
 */
#include <linux/ioctl.h>
#include <linux/uaccess.h>

#include "cgpu_priv.h"
#include "nv_abi.h"

long (*cgpu_orig_nv_ioctl)(struct file *f, unsigned int cmd, unsigned long arg);
int (*cgpu_orig_nv_close)(struct inode *inode, struct file *f);

unsigned int cgpu_nv_cmd(u32 nr, u32 size)
{
	return _IOC(_IOC_READ | _IOC_WRITE, NVA_IOCTL_MAGIC, nr, size);
}

/* Answers for the driver: status in the struct, syscall return 0. */
long cgpu_nv_refuse(struct cgpu_call *c, size_t status_off, u32 status)
{
	if (put_user(status, (u32 __user *)(c->uarg + status_off)))
		return -EFAULT;
	return 0;
}

/* The controls cgpu looks into [5] [10.2]. */
static __always_inline bool cgpu_nv_control_ours(u32 cmd)
{
	return cmd == NVA_CTRL_GPU_GET_ID_INFO_V2 ||
	       cmd == NVA_CTRL_FB_GET_INFO_V2 || cmd == NVA_CTRL_FB_GET_INFO;
}

/* NV_ESC_RM_CONTROL [5] [10.2]. */
static long cgpu_nv_control(struct cgpu_call *c)
{
	struct nva_os54_control ctl;
	u32 cmd;

	/* Most controls are none of ours: one word decides. */
	if (get_user(cmd, (u32 __user *)(c->uarg +
					offsetof(struct nva_os54_control, cmd))))
		return -EFAULT;
	if (!cgpu_nv_control_ours(cmd))
		return cgpu_nv_orig(c);
	if (copy_from_user(&ctl, c->uarg, sizeof(ctl)))
		return -EFAULT;
	switch (ctl.cmd) {
	case NVA_CTRL_GPU_GET_ID_INFO_V2:
		return cgpu_nv_gpu_id_info(c, &ctl);
	case NVA_CTRL_FB_GET_INFO_V2:
	case NVA_CTRL_FB_GET_INFO:
		return cgpu_nv_fb_info(c, &ctl);
	}
	return cgpu_nv_orig(c);
}

static long cgpu_nv_dispatch(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct cgpu_call c = {
		.f = f,
		.cmd = cmd,
		.arg = arg,
		.nr = _IOC_NR(cmd),
		.size = _IOC_SIZE(cmd),
		.uarg = (void __user *)arg,
	};
	struct nva_ioctl_xfer x;

	if (c.nr == NVA_ESC_IOCTL_XFER_CMD) {
		/* [2]: the driver reads the wrapped command; a bad wrapper is its to reject */
		if (c.size != sizeof(x) || copy_from_user(&x, c.uarg, sizeof(x)) ||
		    x.size > NVA_ABSOLUTE_MAX_IOCTL_SIZE)
			return cgpu_nv_orig(&c);
		c.nr = x.cmd;
		c.size = x.size;
		c.uarg = u64_to_user_ptr(x.ptr);
		/*
		 * Hand the driver the command we inspect as a plain ioctl, so
		 * that the wrapper cannot be changed between our read and its.
		 */
		if (c.size <= _IOC_SIZEMASK && c.nr <= _IOC_NRMASK) {
			c.cmd = cgpu_nv_cmd(c.nr, c.size);
			c.arg = (unsigned long)c.uarg;
		}
	}

	switch (c.nr) {
	case NVA_ESC_RM_ALLOC:
		if (c.size == sizeof(struct nva_os21_alloc) ||
		    c.size == sizeof(struct nva_os64_alloc))
			return cgpu_nv_alloc(&c);
		break;
	case NVA_ESC_RM_FREE:
		if (c.size == sizeof(struct nva_os00_free) &&
		    atomic_read(&cgpu_nr_clients))
			return cgpu_nv_free(&c);
		break;
	case NVA_ESC_RM_DUP_OBJECT:
		if (c.size == sizeof(struct nva_os55_dup) &&
		    atomic_read(&cgpu_nr_clients))
			return cgpu_nv_dup(&c);
		break;
	case NVA_ESC_RM_VID_HEAP_CONTROL:
		if (c.size == sizeof(struct nva_os32_vidheap))
			return cgpu_nv_vidheap(&c);
		break;
	case NVA_ESC_RM_CONTROL:
		if (c.size == sizeof(struct nva_os54_control) &&
		    static_branch_unlikely(&cgpu_attached_key))
			return cgpu_nv_control(&c);
		break;
	case NVA_ESC_CARD_INFO:
		if (c.size && c.size % sizeof(struct nva_card_info) == 0)
			return cgpu_nv_card_info(&c);
		break;
	}
	return cgpu_nv_orig(&c);
}

/*
 * Called by the ftrace callback before it redirects a call of the ioctl
 * entry point: false for the calls cgpu_nv_dispatch() would only pass on,
 * which then reach the driver with no detour.  Most controls are not ours,
 * and a control's command is one word of the user's argument: it is read
 * here without faulting (the callback must not sleep); a word that cannot
 * be read so is left to the wrapper.  Reading it twice (here, then in the
 * wrapper) is no new race: the driver reads the buffer itself anyway.
 */
bool notrace cgpu_nv_ioctl_wanted(unsigned int cmd, unsigned long arg)
{
	u32 __user *uctl;
	u32 ctl;
	int err;

	switch (_IOC_NR(cmd)) {
	case NVA_ESC_RM_CONTROL:
		if (_IOC_SIZE(cmd) != sizeof(struct nva_os54_control))
			return false;
		uctl = (u32 __user *)(arg + offsetof(struct nva_os54_control, cmd));
		if (!access_ok(uctl, sizeof(*uctl)))
			return true;
		/* One load; a fault is fixed up, not handled (no sleep). */
		pagefault_disable();
		err = __get_user(ctl, uctl);
		pagefault_enable();
		return err || cgpu_nv_control_ours(ctl);
	case NVA_ESC_RM_ALLOC:
	case NVA_ESC_RM_FREE:
	case NVA_ESC_RM_DUP_OBJECT:
	case NVA_ESC_RM_VID_HEAP_CONTROL:
	case NVA_ESC_CARD_INFO:
	case NVA_ESC_IOCTL_XFER_CMD:
		return true;
	}
	return false;
}

long cgpu_nv_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	/* Nobody attached and nothing tracked: the driver's own path. */
	if (!static_branch_unlikely(&cgpu_attached_key) &&
	    !atomic_read(&cgpu_nr_clients) && !atomic_read(&cgpu_nr_owned))
		return cgpu_orig_nv_ioctl(f, cmd, arg);
	return cgpu_nv_dispatch(f, cmd, arg);
}

int cgpu_nv_close(struct inode *inode, struct file *f)
{
	int ret = cgpu_orig_nv_close(inode, f);

	/* RM freed the fd's clients whatever close returned. */
	if (atomic_read(&cgpu_nr_clients))
		cgpu_track_file_closed(f);
	cgpu_owner_file_closed(f);
	return ret;
}
