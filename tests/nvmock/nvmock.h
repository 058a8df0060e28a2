/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nvmock: shared state of the mock NVIDIA driver (nvidia.ko + nvidia-uvm.ko).
 */
#ifndef NVMOCK_H
#define NVMOCK_H

#include <linux/fs.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/types.h>
#include <linux/xarray.h>

#include "nv_abi.h"

#define NVM_MAX_GPUS		8
#define NVM_NAME_LEN		64
#define NVM_UUID_STR_LEN	41	/* "GPU-" + 36 + NUL */
#define NVM_PCI_VENDOR		0x10de
#define NVM_PCI_DEVICE		0x2330

struct nvm_gpu {
	unsigned int index;
	u64 total;			/* bytes */
	u64 used;			/* bytes, under nvm_rm_lock */
	u64 live_allocs;		/* under nvm_rm_lock */
	u32 gpu_id;
	u8 bus;
	u8 uuid[NVA_UUID_LEN];
	char uuid_str[NVM_UUID_STR_LEN];
	char name[NVM_NAME_LEN];
};

extern unsigned int nvm_num_gpus;
extern struct nvm_gpu nvm_gpus[NVM_MAX_GPUS];
/* The sizes of the version nvmock plays (nva_layout_of in nv_abi.h). */
extern struct nva_layout nvm_layout;
extern char nvm_version[NVA_RM_API_VERSION_STRING_LEN];

/* Counters shown in debugfs. */
extern atomic_t nvm_stat_clients;
extern atomic64_t nvm_stat_managed_ranges;
extern atomic_t nvm_stat_live_managed;

/* Serialises the RM object tree and the frame-buffer accounting. */
extern struct mutex nvm_rm_lock;

/* An allocation; RM handles and UVM external mappings hold references. */
struct nvm_mem {
	refcount_t refs;		/* changed under nvm_rm_lock */
	u32 cls;
	int gpu;			/* -1 when not charged to a GPU */
	u64 size;
};

struct nvm_file;

/* nvm_rm.c */
const struct file_operations *nvm_nvidia_fops(void);
int nvidia_mmap(struct file *filp, struct vm_area_struct *vma);
struct nvm_file *nvm_get_ctl_file(int fd, struct file **filp);
u32 nvm_rm_check_client(struct nvm_file *nvf, u32 h_client);
u32 nvm_rm_check_vaspace(struct nvm_file *nvf, u32 h_client, u32 h_va_space,
			 int gpu);
u32 nvm_rm_get_mem(struct nvm_file *nvf, u32 h_client, u32 h_memory,
		   struct nvm_mem **out);
void nvm_mem_put(struct nvm_mem *mem);
void nvm_rm_exit(void);

/* nvm_uvm.c */
const struct file_operations *nvm_uvm_fops(void);
const struct file_operations *nvm_uvm_tools_fops(void);

/* nvm_main.c */
int nvm_gpu_by_uuid(const u8 *uuid);

#endif /* NVMOCK_H */
