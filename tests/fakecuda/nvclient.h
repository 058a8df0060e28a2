/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * A minimal user-space client of the NVIDIA kernel driver ABI, as libcuda
 * drives it (docs/nvidia-abi.md).  Shared by fakecuda and nvhostile.
 * Layouts come from kmod/nv_abi.h; the version-dependent ones are picked
 * from /proc/driver/nvidia/version like a libcuda of that version would.
 */
#ifndef FAKECUDA_NVCLIENT_H
#define FAKECUDA_NVCLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "nv_abi.h"

/* Userspace encodes every escape as _IOWR('F', nr, size) [2]. */
#define NV_IOWR(nr, size) \
	_IOC(_IOC_READ | _IOC_WRITE, NVA_IOCTL_MAGIC, (nr), (size))

#define NV_CTL_PATH	"/dev/nvidiactl"
#define NV_UVM_PATH	"/dev/nvidia-uvm"
#define NV_PROC_DIR	"/proc/driver/nvidia"

/* The outcome of one driver call: errno of the syscall, else the RM status. */
struct nvres {
	int err;		/* errno when the syscall failed, else 0 */
	uint32_t status;	/* RM status when the syscall succeeded */
};

static inline int nvres_ok(struct nvres r)
{
	return r.err == 0 && r.status == NVA_OK;
}

/* Layouts that depend on the driver version [4] [10.7] [10.9]. */
struct nvlayout {
	char version[64];	/* e.g. "595.45.04" */
	int major;
	struct nva_layout t;	/* the sizes of that version (nv_abi.h) */
};

struct nvclient {
	struct nvlayout lay;
	int use_nvos21;		/* RM_ALLOC form: NVOS21 (32 B) or NVOS64 */
	int auto_handles;	/* pass hObjectNew = 0 for memory objects */
	int ctl_fd;
	int gpu_fd;
	int uvm_fd;		/* the initialised UVM fd */
	int uvm_mm_fd;		/* the second one, MM_INITIALIZE'd */
	unsigned gpu_index;
	uint32_t gpu_id;
	uint32_t minor;
	uint8_t uuid[NVA_UUID_LEN];
	char uuid_str[48];
	uint32_t h_client;
	uint32_t h_device;
	uint32_t h_subdevice;
	uint32_t h_vaspace;
	uint32_t device_instance;
	char errbuf[256];	/* why init failed */
};

/* Names for messages. */
const char *nv_status_name(uint32_t status);
const char *cuda_error_name(struct nvres r);
void nvres_describe(struct nvres r, char *buf, size_t len);

/* Version and layouts. */
int nvlayout_from_string(struct nvlayout *lay, const char *version);
int nvlayout_from_proc(struct nvlayout *lay);

/*
 * Non-zero: RM escapes (ALLOC, FREE, CONTROL, DUP_OBJECT, VID_HEAP_CONTROL)
 * go wrapped in NV_ESC_IOCTL_XFER_CMD [2], as libcuda sends large ones.
 */
extern int nv_xfer;

/* Raw calls: all return the syscall errno and RM status, never abort. */
struct nvres nv_ioctl_raw(int fd, unsigned nr, void *arg, size_t size);
struct nvres nv_uvm_call(int fd, unsigned long cmd, void *arg,
			 size_t status_off);

struct nvres nv_rm_alloc(struct nvclient *c, uint32_t h_root, uint32_t parent,
			 uint32_t *h_new, uint32_t h_class, void *params,
			 uint32_t params_size);
struct nvres nv_rm_free(struct nvclient *c, uint32_t h_root, uint32_t parent,
			uint32_t h_object);
struct nvres nv_rm_control(struct nvclient *c, uint32_t h_client,
			   uint32_t h_object, uint32_t cmd, void *params,
			   uint32_t params_size);

/* Handles for objects we name ourselves, unique within the process. */
uint32_t nv_new_handle(void);

/* The init sequence of section 1 of the brief (libcuda's cuInit). */
void nvclient_defaults(struct nvclient *c);
int nvclient_init(struct nvclient *c, unsigned gpu_index);
void nvclient_close(struct nvclient *c);

/* Reads the UUID of the GPU with this minor from /proc; 0 on success. */
int nv_proc_gpu_uuid(uint32_t minor, unsigned index, uint8_t uuid[16],
		     char *str, size_t len);

/* Memory: RM_ALLOC class 0x40 with NV_MEMORY_ALLOCATION_PARAMS. */
struct nvres nv_alloc_vidmem(struct nvclient *c, uint64_t size,
			     uint32_t *h_mem, uint64_t *actual);
/* UVM: CREATE_EXTERNAL_RANGE + MAP_EXTERNAL_ALLOCATION of h_mem at va. */
struct nvres nv_uvm_map_external(struct nvclient *c, uint64_t va,
				 uint64_t len, uint32_t h_mem);
struct nvres nv_uvm_free_va(struct nvclient *c, uint64_t va, uint64_t len);
struct nvres nv_fb_info(struct nvclient *c, uint64_t *total_kib,
			uint64_t *heap_kib, uint64_t *free_kib);
/* GPU_GET_ATTACHED_IDS on the client: a control cgpu passes through. */
struct nvres nv_attached_ids(struct nvclient *c, uint32_t *ids, unsigned max,
			     unsigned *n);

/* Parses "64K", "1G", "3M", "100KiB", "4096"; 0 on success. */
int parse_size(const char *s, uint64_t *out);

#endif /* FAKECUDA_NVCLIENT_H */
