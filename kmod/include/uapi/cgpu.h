/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * cgpu control ABI: the ioctls of /dev/cgpu (root only).
 *
 * Rules every structure here follows, so that a mirror in another language
 * (the daemon's Go package) can be checked field by field:
 *  - fixed-width fields only, naturally aligned, no implicit padding; every
 *    structure's size is a multiple of 8 and is pinned by the comments below;
 *  - "in" fields are read by the kernel, "out" fields are written by it, and
 *    the whole structure is copied back on success;
 *  - reserved fields must be zero on input (else -EINVAL) and are zero on
 *    output;
 *  - pointers travel as __u64;
 *  - a changed structure gets a new command; the version command tells what
 *    the module speaks.
 *
 * Errors (besides the per-command ones listed with each command):
 *  -ENOTTY  unknown command (including a known number with another size);
 *  -EFAULT  the argument or an embedded pointer is not accessible;
 *  -EINVAL  a reserved field or flag is set, or a value is out of range;
 *  -EPERM   the caller lacks CAP_SYS_ADMIN.
 */
#ifndef _UAPI_LINUX_CGPU_H
#define _UAPI_LINUX_CGPU_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define CGPU_DEVICE_PATH	"/dev/cgpu"

#define CGPU_ABI_MAJOR		1
#define CGPU_ABI_MINOR		0

/* Instance names: 1..63 characters of [A-Za-z0-9_.-], NUL terminated. */
#define CGPU_NAME_LEN		64
/* At most this many instances per GPU (the module parameter max_inst). */
#define CGPU_MAX_INST_PER_GPU	20
/* GPU minors are those of /dev/nvidiaN: 0..247. */
#define CGPU_MAX_GPU_MINOR	247
/* Largest memory limit accepted, 2^48 bytes. */
#define CGPU_MEM_LIMIT_MAX	0x1000000000000ULL

#define CGPU_IOC_MAGIC		'C'

/* CGPU_IOC_VERSION: what the module speaks. 48 bytes. */
struct cgpu_version {
	__u32 abi_major;	/* out: CGPU_ABI_MAJOR */
	__u32 abi_minor;	/* out: CGPU_ABI_MINOR */
	__u32 max_inst;		/* out: the max_inst module parameter */
	__u32 name_len;		/* out: CGPU_NAME_LEN */
	__u64 reserved[4];	/* in: zero */
};

/*
 * CGPU_IOC_CREATE: make an instance: a memory limit on one GPU.  128 bytes.
 *  -EEXIST  the name is taken;
 *  -ENOSPC  the GPU already has max_inst instances, or their weights would
 *           exceed max_inst.
 */
struct cgpu_create {
	char name[CGPU_NAME_LEN];	/* in */
	__u64 mem_limit;		/* in: bytes, 1..CGPU_MEM_LIMIT_MAX */
	__u32 gpu;			/* in: GPU minor */
	__u32 weight;			/* in: compute weight, 1..max_inst; 0 = 1 */
	__u32 flags;			/* in: zero */
	__u32 reserved0;		/* in: zero */
	__u64 id;			/* out: instance id, never 0 */
	__u64 reserved[4];		/* in: zero */
};

/* Destroy even when processes still hold memory in the instance. */
#define CGPU_DESTROY_FORCE	0x1U

/*
 * CGPU_IOC_DESTROY: 32 bytes.
 *  -ENOENT  no such instance;
 *  -EBUSY   the instance holds memory and CGPU_DESTROY_FORCE is not set.
 * A forced destroy detaches every cgroup at once; memory still held stays
 * accounted (and visible to nothing) until its owners free it.
 */
struct cgpu_destroy {
	__u64 id;		/* in */
	__u32 flags;		/* in: CGPU_DESTROY_* */
	__u32 reserved0;	/* in: zero */
	__u64 reserved[2];	/* in: zero */
};

/*
 * CGPU_IOC_ATTACH and CGPU_IOC_DETACH: bind a cgroup v2 to an instance, or
 * unbind it.  A task belongs to the instance when its cgroup, or an
 * ancestor, is bound.  A cgroup has at most one instance per GPU.  40 bytes.
 *  -ENOENT  no such instance, or (attach) no such cgroup, or (detach) not
 *           attached;
 *  -EEXIST  (attach) the cgroup already has an instance on that GPU;
 *  -ENXIO   (attach) a driver module is loaded whose entry points cgpu
 *           cannot hook (another driver branch's names): its calls would
 *           not be limited; /proc/cgpu_km/hooks names the module and symbol.
 */
struct cgpu_attach {
	__u64 id;		/* in: instance */
	__u64 cgroup_id;	/* in: cgroup v2 id, the inode number of its directory */
	__u32 flags;		/* in: zero */
	__u32 reserved0;	/* in: zero */
	__u64 reserved[2];	/* in: zero */
};

#define CGPU_SET_MEM_LIMIT	0x1U
#define CGPU_SET_WEIGHT		0x2U

/*
 * CGPU_IOC_SET: change a live instance's limit and/or weight.  40 bytes.
 *  -ENOENT  no such instance;
 *  -EBUSY   the new limit is below the memory in use (nothing changed);
 *  -ENOSPC  the new weight would make the GPU's weights exceed max_inst.
 */
struct cgpu_set {
	__u64 id;		/* in */
	__u64 mem_limit;	/* in: with CGPU_SET_MEM_LIMIT */
	__u32 weight;		/* in: with CGPU_SET_WEIGHT */
	__u32 flags;		/* in: CGPU_SET_*, at least one */
	__u64 reserved[2];	/* in: zero */
};

/*
 * CGPU_IOC_STATS: one instance.  176 bytes.
 *  -ENOENT  no such instance.
 */
struct cgpu_stats {
	__u64 id;			/* in */
	__u64 reserved_in;		/* in: zero */
	char name[CGPU_NAME_LEN];	/* out */
	__u64 mem_limit;		/* out: bytes */
	__u64 mem_used;			/* out: bytes charged now */
	__u64 mem_peak;			/* out: highest mem_used */
	__u64 allocs;			/* out: allocations charged, ever */
	__u64 refused_allocs;		/* out: allocations refused, ever */
	__u64 refused_managed;		/* out: managed mappings refused, ever */
	__u32 gpu;			/* out */
	__u32 weight;			/* out */
	__u32 nr_procs;			/* out: processes holding memory */
	__u32 nr_cgroups;		/* out: cgroups attached */
	__u64 live_allocs;		/* out: allocations charged now */
	__u64 reserved[3];		/* out: zero */
};

/*
 * CGPU_IOC_LIST: the ids of all instances, ascending.  32 bytes.
 * ids points to capacity __u64s; the first min(capacity, count) are
 * written.  count is set to the number of instances.  capacity may be 0
 * (ids is then not touched) and is at most 65536.
 */
struct cgpu_list {
	__u64 ids;		/* in: user pointer to __u64[capacity] */
	__u32 capacity;		/* in */
	__u32 count;		/* out */
	__u64 reserved[2];	/* in: zero */
};

#define CGPU_LIST_MAX_CAPACITY	65536

#define CGPU_IOC_VERSION	_IOWR(CGPU_IOC_MAGIC, 0x01, struct cgpu_version)
#define CGPU_IOC_CREATE		_IOWR(CGPU_IOC_MAGIC, 0x02, struct cgpu_create)
#define CGPU_IOC_DESTROY	_IOWR(CGPU_IOC_MAGIC, 0x03, struct cgpu_destroy)
#define CGPU_IOC_ATTACH		_IOWR(CGPU_IOC_MAGIC, 0x04, struct cgpu_attach)
#define CGPU_IOC_DETACH		_IOWR(CGPU_IOC_MAGIC, 0x05, struct cgpu_attach)
#define CGPU_IOC_SET		_IOWR(CGPU_IOC_MAGIC, 0x06, struct cgpu_set)
#define CGPU_IOC_STATS		_IOWR(CGPU_IOC_MAGIC, 0x07, struct cgpu_stats)
#define CGPU_IOC_LIST		_IOWR(CGPU_IOC_MAGIC, 0x08, struct cgpu_list)

#endif /* _UAPI_LINUX_CGPU_H */
