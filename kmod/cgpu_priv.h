/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgpu.ko internals shared between its files.
 *
 * Lock order, outermost first (nothing here is ever held while calling into
 * the NVIDIA driver or touching user memory, so the driver's own locks and
 * mmap_lock never nest inside ours, except where noted):
 *   cgpu_ctl_lock (mutex)    instances, GPUs, attachments, procfs entries
 *   cgpu_track_lock (mutex)  RM clients and objects seen by the hooks
 *   inst->lock (spinlock)    an instance's counters and process list
 *   cgpu_pool_lock (spinlock) UVM semaphore pools; taken under mmap_lock
 *                            by the mmap hook, so it nests inside it
 * Readers of the attachment table use RCU only.
 */
#ifndef CGPU_PRIV_H
#define CGPU_PRIV_H

#include <linux/fs.h>
#include <linux/mm_types.h>
#include <linux/jump_label.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/math.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include "include/uapi/cgpu.h"

/* Packaged builds pass the release (kmod/VERSION, see Kbuild). */
#ifndef CGPU_VERSION
#define CGPU_VERSION	"1.0.0"
#endif
#define CGPU_NO_GPU	0xffffu

/*
 * Charges are kept in 4 KiB units (a u32 in each allocation's record, so
 * one allocation may be up to 16 TiB).  The driver's sizes are whole pages
 * [docs/nvidia-abi.md 10.11], so this is exact; a size that is not a whole
 * unit is charged rounded up, and a larger one is not admitted.
 */
#define CGPU_CHARGE_SHIFT	12
#define CGPU_CHARGE_MAX		((u64)U32_MAX << CGPU_CHARGE_SHIFT)

/* bytes as charged (at most CGPU_CHARGE_MAX: callers check for more) */
static inline u64 cgpu_charge_round(u64 bytes)
{
	if (bytes > CGPU_CHARGE_MAX)
		return CGPU_CHARGE_MAX;
	return round_up(bytes, 1ULL << CGPU_CHARGE_SHIFT);
}

static inline u64 cgpu_charge_bytes(u32 units)
{
	return (u64)units << CGPU_CHARGE_SHIFT;
}

/* An instance: a memory limit on one GPU, bound to cgroups. */
struct cgpu_inst {
	struct kref ref;
	u64 id;
	char name[CGPU_NAME_LEN];
	u32 gpu;
	u32 weight;		/* under cgpu_ctl_lock */

	spinlock_t lock;	/* protects the counters and procs below */
	u64 limit;
	u64 used;
	u64 reserved;		/* admitted, not yet answered by the driver */
	u64 peak;
	u64 allocs;
	u64 live_allocs;
	u64 refused;
	u64 refused_managed;
	/* struct cgpu_proc; emptied ones stay for reuse until destroy */
	struct list_head procs;
	u32 nr_procs;		/* entries holding memory */
	bool gone;		/* destroyed: emptied entries go at once */

	/* under cgpu_ctl_lock */
	struct list_head attaches;
	u32 nr_attaches;
	bool dead;
	struct proc_dir_entry *pde;
	struct rcu_head rcu;
};

/* Per-GPU settings, made when the first instance on the GPU is. */
struct cgpu_gpu {
	u32 minor;
	u32 max_inst;		/* under cgpu_ctl_lock */
	u32 nr_inst;
	u32 weight_sum;
	struct proc_dir_entry *pde;
};

/*
 * Memory one process holds in one instance (for meminfo and stats).  An
 * entry whose charges are all gone (nr == 0) stays listed, still holding
 * its reference, and is reused by the next process to allocate there: the
 * entries never outnumber the processes that held memory at once, and the
 * instance's destroy frees them.
 */
struct cgpu_proc {
	struct list_head node;
	struct cgpu_inst *inst;	/* holds a reference */
	pid_t tgid;
	u32 nr;			/* charges pointing here */
	u64 bytes;
};

/* cgpu_main.c */
extern unsigned int cgpu_max_inst;
DECLARE_STATIC_KEY_FALSE(cgpu_attached_key);
DECLARE_PER_CPU(long, cgpu_inflight);
extern atomic_t cgpu_nr_clients;

static inline void cgpu_hook_exit(void)
{
	this_cpu_dec(cgpu_inflight);
}

/* cgpu_inst.c */
extern struct mutex cgpu_ctl_lock;
int cgpu_inst_create(const struct cgpu_create *req, u64 *id);
int cgpu_inst_destroy(u64 id, bool force);
int cgpu_inst_attach(u64 id, u64 cgid);
int cgpu_inst_detach(u64 id, u64 cgid);
int cgpu_inst_set(u64 id, u32 flags, u64 limit, u32 weight);
int cgpu_inst_stats(struct cgpu_stats *st);
int cgpu_inst_list(u64 *ids, u32 cap, u32 *count);
u32 cgpu_inst_count(void);
void cgpu_inst_put(struct cgpu_inst *inst);
struct cgroup;
struct cgpu_inst *cgpu_cgroup_inst(struct cgroup *cgrp, u32 gpu);
struct cgpu_inst *cgpu_current_inst(u32 gpu);
bool cgpu_current_attached(void);

/* cgpu_owner.c: who pays for a call on a driver fd */
extern atomic_t cgpu_nr_owned;
struct cgpu_inst *cgpu_call_inst(struct file *f, u32 gpu);
bool cgpu_call_attached(struct file *f);
void cgpu_owner_file_closed(struct file *f);
void cgpu_owner_exit(void);
int cgpu_inst_reserve(struct cgpu_inst *inst, u64 size);
void cgpu_inst_unreserve(struct cgpu_inst *inst, u64 size);
void cgpu_inst_count_refused(struct cgpu_inst *inst);
void cgpu_inst_count_managed(struct cgpu_inst *inst);
void cgpu_inst_view(struct cgpu_inst *inst, u64 *limit, u64 *used);
int cgpu_gpu_set_max_inst(struct cgpu_gpu *g, u32 max);
void cgpu_gpu_read(struct cgpu_gpu *g, u32 *max, u32 *nr, u32 *weight_sum);
void cgpu_inst_exit(void);

/* cgpu_track.c */
struct cgpu_mem;
struct cgpu_dup;
struct cgpu_umap;
struct cgpu_mem *cgpu_mem_alloc(void);
void cgpu_mem_release(struct cgpu_mem *m);
struct cgpu_dup *cgpu_dup_alloc(void);
void cgpu_dup_release(struct cgpu_dup *d);
struct cgpu_umap *cgpu_umap_alloc(void);
void cgpu_umap_release(struct cgpu_umap *u);
int cgpu_track_mem(struct file *file, u32 h_client, u32 h_parent, u32 h_mem,
		   struct cgpu_inst *inst, struct cgpu_mem *m, u64 reserved,
		   u64 actual);
struct cgpu_mem *cgpu_track_pin(u32 h_client, u32 h);
void cgpu_track_unpin(struct cgpu_mem *m);
int cgpu_track_dup(struct file *file, u32 h_client, u32 h_parent, u32 h_new,
		   struct cgpu_mem *m, struct cgpu_dup *d);
void cgpu_track_object(struct file *file, u32 h_client, u32 h_parent,
		       u32 h_new, u32 cls, u32 device_id);
u32 cgpu_track_gpu_of(u32 h_client, u32 h);
void cgpu_track_free(u32 h_client, u32 h);
void cgpu_track_file_closed(struct file *file);
bool cgpu_track_uvm_map(struct file *file, u64 base, struct cgpu_mem *m,
			struct cgpu_umap *u);
void cgpu_track_uvm_unmap(struct file *file, bool all, u64 base);
extern atomic_t cgpu_nr_umaps;
int cgpu_track_init(void);
void cgpu_track_exit(void);

/*
 * The nvidia.ko entry points and what they mean, one job a file:
 *   cgpu_nv.c       the ioctl and close wrappers: decode, route
 *   cgpu_admit.c    device memory: admission and accounting
 *   cgpu_vidheap.c  VID_HEAP_CONTROL
 *   cgpu_meminfo.c  the memory the card reports
 *   cgpu_gpumap.c   what the driver tells us about its GPUs and itself
 */
struct nva_os54_control;

/* One escape as the driver will see it. */
struct cgpu_call {
	struct file *f;
	unsigned int cmd;
	unsigned long arg;
	u32 nr;
	u32 size;
	void __user *uarg;	/* the escape's parameters */
};

/* cgpu_nv.c */
bool cgpu_nv_ioctl_wanted(unsigned int cmd, unsigned long arg);
long cgpu_nv_ioctl(struct file *f, unsigned int cmd, unsigned long arg);
int cgpu_nv_close(struct inode *inode, struct file *f);
extern long (*cgpu_orig_nv_ioctl)(struct file *f, unsigned int cmd,
				  unsigned long arg);
extern int (*cgpu_orig_nv_close)(struct inode *inode, struct file *f);
unsigned int cgpu_nv_cmd(u32 nr, u32 size);
long cgpu_nv_refuse(struct cgpu_call *c, size_t status_off, u32 status);

static inline long cgpu_nv_orig(struct cgpu_call *c)
{
	return cgpu_orig_nv_ioctl(c->f, c->cmd, c->arg);
}

/* cgpu_admit.c */
/* A vidmem allocation about to be made, and how to read its outcome. */
struct cgpu_memreq {
	u32 h_root;
	u32 h_parent;
	u64 size;
	u32 attr;
	size_t status_off;
	bool is64;		/* RM_ALLOC: NVOS64, not NVOS21 */
	/* reads the write-back: 0 and the outcome, or -EFAULT */
	int (*outcome)(struct cgpu_call *c, struct cgpu_memreq *r, u32 *status,
		       u32 *h_mem, u64 *actual, bool *vidmem);
	void __user *uparams;	/* RM_ALLOC: the NV_MEMORY_ALLOCATION_PARAMS */
};

long cgpu_nv_vidmem(struct cgpu_call *c, struct cgpu_memreq *r,
		    struct cgpu_inst *inst);
long cgpu_nv_alloc(struct cgpu_call *c);
long cgpu_nv_free(struct cgpu_call *c);
long cgpu_nv_dup(struct cgpu_call *c);

/* cgpu_vidheap.c */
long cgpu_nv_vidheap(struct cgpu_call *c);

/* cgpu_meminfo.c */
long cgpu_nv_fb_info(struct cgpu_call *c, const struct nva_os54_control *ctl);

/* cgpu_gpumap.c */
long cgpu_nv_gpu_id_info(struct cgpu_call *c,
			 const struct nva_os54_control *ctl);
long cgpu_nv_card_info(struct cgpu_call *c);
void cgpu_nv_learn_version(const char *s, size_t len);
u32 cgpu_nv_minor_of_device(u32 device_id);
extern bool cgpu_uvm_new_layout;

/* cgpu_uvm.c: the nvidia-uvm.ko entry points */
long cgpu_uvm_ioctl(struct file *f, unsigned int cmd, unsigned long arg);
int cgpu_uvm_mmap(struct file *f, struct vm_area_struct *vma);
int cgpu_uvm_release(struct inode *inode, struct file *f);
extern long (*cgpu_orig_uvm_ioctl)(struct file *f, unsigned int cmd,
				   unsigned long arg);
extern int (*cgpu_orig_uvm_mmap)(struct file *f, struct vm_area_struct *vma);
extern int (*cgpu_orig_uvm_release)(struct inode *inode, struct file *f);
void cgpu_uvm_exit(void);
extern unsigned int cgpu_nr_pools;

/*
 * Nothing attached, no RM client, UVM mapping, semaphore pool or owned fd
 * tracked:
 * no hook has anything to do.  Read on every hooked call, without locks: a
 * call racing the first attach may pass unseen, as it would a moment
 * earlier.
 */
static inline bool cgpu_hooks_idle(void)
{
	return !static_branch_unlikely(&cgpu_attached_key) &&
	       !atomic_read(&cgpu_nr_clients) &&
	       !atomic_read(&cgpu_nr_umaps) && !READ_ONCE(cgpu_nr_pools) &&
	       !atomic_read(&cgpu_nr_owned);
}

/* cgpu_hook.c */
struct seq_file;
int cgpu_hooks_init(void);
int cgpu_hooks_arm(void);
void cgpu_hooks_maybe_disarm(void);
void cgpu_hooks_show(struct seq_file *m);
void cgpu_hooks_exit(void);

/* cgpu_ctl.c */
int cgpu_ctl_init(void);
void cgpu_ctl_exit(void);

/* cgpu_proc.c */
int cgpu_proc_init(void);
void cgpu_proc_exit(void);
struct proc_dir_entry *cgpu_proc_gpu_add(struct cgpu_gpu *g);
struct proc_dir_entry *cgpu_proc_inst_add(struct cgpu_inst *inst,
					  struct proc_dir_entry *parent);

#endif /* CGPU_PRIV_H */
