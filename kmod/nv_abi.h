/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Our own description of the subset of the NVIDIA kernel-driver ABI that cgpu
 * interposes on and that nvmock implements.  Every value here comes from the
 * facts collected in docs/nvidia-abi.md (sections in brackets); nothing is
 * taken from NVIDIA's headers.  Layouts are x86-64, fixed width, with every
 * padding byte named so the compiler adds none; the static asserts at the end
 * pin each size and the offsets an interposer depends on.
 *
 * The header is shared by the kernel modules (cgpu.ko, nvmock.ko) and the
 * user-space test programs, so it only uses <linux/types.h>.
 */
#ifndef CGPU_NV_ABI_H
#define CGPU_NV_ABI_H

#include <linux/types.h>
#ifdef __KERNEL__
#include <linux/build_bug.h>
#else
#include <assert.h>
#endif

/* ---- device nodes [1] ------------------------------------------------- */
#define NVA_MAJOR		195
#define NVA_CTL_MINOR		255
#define NVA_MODESET_MINOR	254
#define NVA_MAX_GPU_MINOR	247
#define NVA_UVM_CHRDEV_NAME	"nvidia-uvm"

/* ---- nvidia.ko ioctl escapes [2] --------------------------------------- */
#define NVA_IOCTL_MAGIC		'F'
#define NVA_ABSOLUTE_MAX_IOCTL_SIZE 16384

#define NVA_ESC_RM_ALLOC_MEMORY		0x27
#define NVA_ESC_RM_ALLOC_OBJECT		0x28
#define NVA_ESC_RM_FREE			0x29
#define NVA_ESC_RM_CONTROL		0x2A
#define NVA_ESC_RM_ALLOC		0x2B
#define NVA_ESC_RM_DUP_OBJECT		0x34
#define NVA_ESC_RM_SHARE		0x35
#define NVA_ESC_RM_VID_HEAP_CONTROL	0x4A
#define NVA_ESC_RM_MAP_MEMORY		0x4E
#define NVA_ESC_RM_UNMAP_MEMORY		0x4F

#define NVA_ESC_CARD_INFO		200
#define NVA_ESC_REGISTER_FD		201
#define NVA_ESC_ALLOC_OS_EVENT		206
#define NVA_ESC_FREE_OS_EVENT		207
#define NVA_ESC_STATUS_CODE		209
#define NVA_ESC_CHECK_VERSION_STR	210
#define NVA_ESC_IOCTL_XFER_CMD		211
#define NVA_ESC_ATTACH_GPUS_TO_FD	212

/* ---- RM status codes [6] [10.1] [10.3] --------------------------------- */
#define NVA_OK				0x00
#define NVA_ERR_BUSY_RETRY		0x03
#define NVA_ERR_ILLEGAL_ACTION		0x16
#define NVA_ERR_IN_USE			0x17
#define NVA_ERR_INSERT_DUPLICATE_NAME	0x19
#define NVA_ERR_INSUFFICIENT_RESOURCES	0x1A
#define NVA_ERR_INSUFFICIENT_PERMISSIONS 0x1B
#define NVA_ERR_INVALID_ARGUMENT	0x1F
#define NVA_ERR_INVALID_CLASS		0x22
#define NVA_ERR_INVALID_CLIENT		0x23
#define NVA_ERR_INVALID_COMMAND		0x24
#define NVA_ERR_INVALID_DEVICE		0x26
#define NVA_ERR_INVALID_OBJECT_HANDLE	0x33
#define NVA_ERR_INVALID_PARAM_STRUCT	0x3A
#define NVA_ERR_INVALID_STATE		0x40
#define NVA_ERR_NO_MEMORY		0x51
#define NVA_ERR_NOT_SUPPORTED		0x56
#define NVA_ERR_OBJECT_NOT_FOUND	0x57
#define NVA_ERR_GENERIC			0xFFFF
/* Further codes nvmock answers with (nvstatuscodes values). */
#define NVA_ERR_INVALID_ADDRESS		0x1E
#define NVA_ERR_INVALID_EVENT		0x28
#define NVA_ERR_INVALID_FUNCTION	0x2A
#define NVA_ERR_INVALID_OBJECT_PARENT	0x36
#define NVA_ERR_INVALID_OFFSET		0x37
#define NVA_ERR_INVALID_POINTER		0x3D
#define NVA_ERR_UVM_ADDRESS_IN_USE	0x68

/* ---- classes [4] -------------------------------------------------------- */
#define NVA_CLASS_ROOT			0x00
#define NVA_CLASS_ROOT_NON_PRIV		0x01
#define NVA_CLASS_ROOT_CLIENT		0x41
#define NVA_CLASS_DEVICE		0x80
#define NVA_CLASS_SUBDEVICE		0x2080
#define NVA_CLASS_VASPACE		0x90F1
#define NVA_CLASS_MEMORY_SYSTEM		0x3E
#define NVA_CLASS_MEMORY_LOCAL_PRIV	0x3F
#define NVA_CLASS_MEMORY_LOCAL_USER	0x40
#define NVA_CLASS_MEMORY_VIRTUAL_SYS	0x70
#define NVA_CLASS_MEMORY_OS_DESCRIPTOR	0x71
#define NVA_CLASS_EVENT_OS_EVENT	0x79
#define NVA_CLASS_MEMORY_LOCAL_PHYS	0xC2
#define NVA_CLASS_MEMORY_FABRIC		0xF8
#define NVA_CLASS_MEMORY_MC_FABRIC	0xFD
#define NVA_CLASS_MEMORY_VIRTUAL	0x50A0

/* ---- control commands [5] [10.2] [10.9] -------------------------------- */
#define NVA_CTRL_GPU_GET_ATTACHED_IDS	0x00000201
#define NVA_CTRL_GPU_GET_ID_INFO_V2	0x00000205
#define NVA_CTRL_FB_GET_INFO		0x20801301
#define NVA_CTRL_FB_GET_INFO_V2		0x20801303

#define NVA_FB_INFO_BAR1_SIZE		0x05
#define NVA_FB_INFO_RAM_SIZE		0x07
#define NVA_FB_INFO_TOTAL_RAM_SIZE	0x08
#define NVA_FB_INFO_HEAP_SIZE		0x09
#define NVA_FB_INFO_MAPPABLE_HEAP_SIZE	0x0A
#define NVA_FB_INFO_HEAP_FREE		0x16
#define NVA_FB_INFO_HEAP_START		0x1E
#define NVA_FB_INFO_USABLE_RAM_SIZE	0x20
#define NVA_FB_INFO_MAX			0x3B

/*
 * FB_GET_INFO_V2's list length [10.9]: RM accepts only its own branch's
 * size (4 + 8 * length bytes).
 */
#define NVA_FB_INFO_MAX_LIST		128	/* 580 and later */
#define NVA_FB_INFO_MAX_LIST_560	57	/* 560 to 575 */
#define NVA_FB_INFO_MAX_LIST_545	55	/* 545 to 555 */
#define NVA_FB_INFO_MAX_LIST_535	54	/* 535 and earlier */

/* RM control flags, RM_ALLOC (NVOS64) flags */
#define NVA_CTRL_FLAGS_FINN_SERIALIZED	0x4
#define NVA_ALLOC_FLAGS_FINN_SERIALIZED	0x1

/* ---- NV_MEMORY_ALLOCATION_PARAMS bits [4] [10.11] ---------------------- */
#define NVA_ATTR_LOCATION_SHIFT		25
#define NVA_ATTR_LOCATION_MASK		(0x3u << NVA_ATTR_LOCATION_SHIFT)
#define NVA_ATTR_LOCATION_VIDMEM	0x0u
#define NVA_ATTR_LOCATION_PCI		0x1u
#define NVA_ATTR_LOCATION_ANY		0x3u
#define NVA_ATTR_PAGE_SIZE_SHIFT	23
#define NVA_ATTR_PAGE_SIZE_MASK		(0x3u << NVA_ATTR_PAGE_SIZE_SHIFT)
#define NVA_ATTR_PAGE_SIZE_DEFAULT	0x0u
#define NVA_ATTR_PAGE_SIZE_4KB		0x1u
#define NVA_ATTR_PAGE_SIZE_BIG		0x2u
#define NVA_ATTR_PAGE_SIZE_HUGE		0x3u
#define NVA_ATTR2_PAGE_SIZE_HUGE_SHIFT	20
#define NVA_ATTR2_PAGE_SIZE_HUGE_MASK	(0x3u << NVA_ATTR2_PAGE_SIZE_HUGE_SHIFT)
#define NVA_ATTR2_PAGE_SIZE_HUGE_2MB	0x1u
#define NVA_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED 0x4000u
#define NVA_ALLOC_FLAGS_VIRTUAL		0x80000u

#define NVA_PAGE_4K			0x1000ull
#define NVA_PAGE_BIG			0x10000ull	/* 64 KiB */
#define NVA_PAGE_HUGE			0x200000ull	/* 2 MiB */

/*
 * [10.11] The page size an allocation of size bytes gets: attr's PAGE_SIZE
 * field, DEFAULT resolved to 2 MiB from 2 MiB up and 64 KiB below (4 KiB
 * for system memory).  Returns NVA_ATTR_PAGE_SIZE_4KB, _BIG or _HUGE; the
 * size is then rounded up to nva_page_bytes() of it (nva_alloc_size()).
 */
static inline __u32 nva_page_size_attr(__u32 attr, __u64 size, int sysmem)
{
	__u32 pg = (attr & NVA_ATTR_PAGE_SIZE_MASK) >> NVA_ATTR_PAGE_SIZE_SHIFT;

	if (pg != NVA_ATTR_PAGE_SIZE_DEFAULT)
		return pg;
	if (sysmem)
		return NVA_ATTR_PAGE_SIZE_4KB;
	return size >= NVA_PAGE_HUGE ? NVA_ATTR_PAGE_SIZE_HUGE :
				       NVA_ATTR_PAGE_SIZE_BIG;
}

static inline __u64 nva_page_bytes(__u32 page_size_attr)
{
	switch (page_size_attr) {
	case NVA_ATTR_PAGE_SIZE_4KB:
		return NVA_PAGE_4K;
	case NVA_ATTR_PAGE_SIZE_BIG:
		return NVA_PAGE_BIG;
	default:
		return NVA_PAGE_HUGE;
	}
}

/*
 * [10.11] The size an allocation of size bytes gets: rounded up to its page
 * (nva_page_size_attr()).  The one rounding of cgpu's admission and of
 * nvmock's allocator, so that both charge alike.  Callers bound size first
 * (both to at most 2^48), so the sum cannot wrap.
 */
static inline __u64 nva_alloc_size(__u32 attr, __u64 size, int sysmem)
{
	__u64 page = nva_page_bytes(nva_page_size_attr(attr, size, sysmem));

	return (size + page - 1) & ~(page - 1);
}

/* NVOS32 functions [3] */
#define NVA_OS32_FUNC_ALLOC_SIZE	2
#define NVA_OS32_FUNC_FREE		3
#define NVA_OS32_FUNC_INFO		5
#define NVA_OS32_FUNC_ALLOC_SIZE_RANGE	14
#define NVA_OS32_FUNC_ALLOC_OS_DESC	27
#define NVA_OS32_FREE_FLAGS_MEMORY_HANDLE_PROVIDED 0x1u

/* CHECK_VERSION_STR [10.5] */
#define NVA_RM_API_VERSION_CMD_STRICT	0x00
#define NVA_RM_API_VERSION_CMD_RELAXED	0x31
#define NVA_RM_API_VERSION_CMD_QUERY	0x32
#define NVA_RM_API_VERSION_REPLY_UNRECOGNIZED 0
#define NVA_RM_API_VERSION_REPLY_RECOGNIZED 1
#define NVA_RM_API_VERSION_STRING_LEN	64

/* ---- nvidia.ko parameter structs [3] [10] ------------------------------ */

/* NV_ESC_RM_FREE: NVOS00, 16 B */
struct nva_os00_free {
	__u32 h_root;
	__u32 h_object_parent;
	__u32 h_object_old;
	__u32 status;
};

/* NV_ESC_RM_ALLOC, short form: NVOS21, 32 B */
struct nva_os21_alloc {
	__u32 h_root;
	__u32 h_object_parent;
	__u32 h_object_new;
	__u32 h_class;
	__u64 p_alloc_parms;		/* user pointer */
	__u32 params_size;		/* not used by RM to size the copy */
	__u32 status;
};

/* NV_ESC_RM_ALLOC, long form: NVOS64, 48 B */
struct nva_os64_alloc {
	__u32 h_root;
	__u32 h_object_parent;
	__u32 h_object_new;
	__u32 h_class;
	__u64 p_alloc_parms;		/* user pointer */
	__u64 p_rights_requested;	/* user pointer */
	__u32 params_size;
	__u32 flags;
	__u32 status;
	__u32 _pad44;
};

/* NV_ESC_RM_CONTROL: NVOS54, 32 B */
struct nva_os54_control {
	__u32 h_client;
	__u32 h_object;
	__u32 cmd;
	__u32 flags;
	__u64 params;			/* user pointer */
	__u32 params_size;
	__u32 status;
};

/* NV_ESC_RM_DUP_OBJECT: NVOS55, 28 B */
struct nva_os55_dup {
	__u32 h_client;
	__u32 h_parent;
	__u32 h_object;			/* IN/OUT: 0 asks RM to pick one */
	__u32 h_client_src;
	__u32 h_object_src;
	__u32 flags;
	__u32 status;
};

/* NV_ESC_RM_SHARE: NVOS57, 24 B */
struct nva_os57_share {
	__u32 h_client;
	__u32 h_object;
	__u32 share_target;
	__u32 share_access_mask;
	__u16 share_type;
	__u8 share_action;
	__u8 _pad19;
	__u32 status;
};

/* AllocSize member of the NVOS32 union; offsets below are within NVOS32 */
struct nva_os32_alloc_size {
	__u32 owner;			/* 40 */
	__u32 h_memory;			/* 44 */
	__u32 type;			/* 48 */
	__u32 flags;			/* 52 */
	__u32 attr;			/* 56 */
	__u32 format;			/* 60 */
	__u32 compr_covg;		/* 64 */
	__u32 zcull_covg;		/* 68 */
	__u32 partition_stride;		/* 72 */
	__u32 width;			/* 76 */
	__u32 height;			/* 80 */
	__u32 _pad84;
	__u64 size;			/* 88 */
	__u64 alignment;		/* 96 */
	__u64 offset;			/* 104 */
	__u64 limit;			/* 112 */
	__u64 address;			/* 120, user pointer */
	__u64 range_begin;		/* 128 */
	__u64 range_end;		/* 136 */
	__u32 attr2;			/* 144 */
	__u32 ctag_offset;		/* 148 */
	__s32 numa_node;		/* 152, absent in 535 */
	__u32 _pad156;
};

struct nva_os32_free {
	__u32 owner;			/* 40 */
	__u32 h_memory;			/* 44 */
	__u32 flags;			/* 48 */
};

struct nva_os32_info {
	__u32 attr;			/* 40 */
	__u32 _pad44;
	__u64 offset;			/* 48: base of the largest free region */
	__u64 size;			/* 56: size of the largest free region */
	__u64 base;			/* 64: heap base */
};

/* NV_ESC_RM_VID_HEAP_CONTROL: NVOS32, 184 B */
struct nva_os32_vidheap {
	__u32 h_root;
	__u32 h_object_parent;
	__u32 function;
	__u32 h_va_space;
	__s16 ivc_heap_number;
	__u16 _pad18;
	__u32 status;			/* 20 */
	__u64 total;			/* 24 */
	__u64 free;			/* 32 */
	union {
		struct nva_os32_alloc_size alloc_size;
		struct nva_os32_free free;
		struct nva_os32_info info;
		__u8 raw[144];
	} data;				/* 40 */
};

/* NVOS02 inside nv_ioctl_nvos02_parameters_with_fd, 56 B */
struct nva_os02_with_fd {
	__u32 h_root;
	__u32 h_object_parent;
	__u32 h_object_new;
	__u32 h_class;
	__u32 flags;
	__u32 _pad20;
	__u64 p_memory;
	__u64 limit;
	__u32 status;
	__u32 _pad44;
	__s32 fd;
	__u32 _pad52;
};

/* NVOS33 inside nv_ioctl_nvos33_parameters_with_fd, 56 B */
struct nva_os33_with_fd {
	__u32 h_client;
	__u32 h_device;
	__u32 h_memory;
	__u32 _pad12;
	__u64 offset;
	__u64 length;
	__u64 p_linear_address;
	__u32 status;
	__u32 flags;
	__s32 fd;
	__u32 _pad52;
};

/* NV_ESC_CARD_INFO: one entry, 72 B; userspace passes N of them */
struct nva_card_info {
	__u8 valid;
	__u8 _pad1[3];
	__u32 pci_domain;		/* 4 */
	__u8 pci_bus;			/* 8 */
	__u8 pci_slot;			/* 9 */
	__u8 pci_function;		/* 10, never filled by the driver */
	__u8 _pad11;
	__u16 pci_vendor_id;		/* 12 */
	__u16 pci_device_id;		/* 14 */
	__u32 gpu_id;			/* 16 */
	__u16 interrupt_line;		/* 20 */
	__u16 _pad22;
	__u64 reg_address;		/* 24 */
	__u64 reg_size;			/* 32 */
	__u64 fb_address;		/* 40 */
	__u64 fb_size;			/* 48 */
	__u32 minor_number;		/* 56 */
	__u8 dev_name[10];		/* 60, never filled by the driver */
	__u8 _pad70[2];
};

#define NVA_CARD_INFO_MAX_ENTRIES	227

/* NV_ESC_CHECK_VERSION_STR: 72 B */
struct nva_rm_api_version {
	__u32 cmd;
	__u32 reply;
	char version_string[NVA_RM_API_VERSION_STRING_LEN];
};

/* NV_ESC_REGISTER_FD: 4 B */
struct nva_register_fd {
	__s32 ctl_fd;
};

/* NV_ESC_ALLOC_OS_EVENT / FREE_OS_EVENT: 16 B */
struct nva_os_event {
	__u32 h_client;
	__u32 h_device;
	__u32 fd;
	__u32 status;
};

/* NV_ESC_IOCTL_XFER_CMD: 16 B */
struct nva_ioctl_xfer {
	__u32 cmd;
	__u32 size;
	__u64 ptr;			/* user pointer */
};

/* NV_MEMORY_ALLOCATION_PARAMS: 128 B from 545, 120 B in 525/535 */
struct nva_memory_alloc_params {
	__u32 owner;
	__u32 type;
	__u32 flags;
	__u32 width;
	__u32 height;
	__s32 pitch;
	__u32 attr;
	__u32 attr2;
	__u32 format;
	__u32 compr_covg;
	__u32 zcull_covg;
	__u32 _pad44;
	__u64 range_lo;			/* 48 */
	__u64 range_hi;			/* 56 */
	__u64 size;			/* 64: IN/OUT, actual size written back */
	__u64 alignment;		/* 72 */
	__u64 offset;			/* 80 */
	__u64 limit;			/* 88 */
	__u64 address;			/* 96, user pointer */
	__u32 ctag_offset;		/* 104 */
	__u32 h_va_space;		/* 108 */
	__u32 internal_flags;		/* 112 */
	__u32 tag;			/* 116 */
	__s32 numa_node;		/* 120, 545 and later only */
	__u32 _pad124;
};

#define NVA_MEMORY_ALLOC_PARAMS_SIZE		128
#define NVA_MEMORY_ALLOC_PARAMS_SIZE_535	120

/* NV0080_ALLOC_PARAMETERS: 56 B */
struct nva_device_alloc_params {
	__u32 device_id;		/* RM device instance, 0..31 */
	__u32 h_client_share;
	__u32 h_target_client;
	__u32 h_target_device;
	__u32 flags;
	__u32 _pad20;
	__u64 va_space_size;
	__u64 va_start_internal;
	__u64 va_limit_internal;
	__u32 va_mode;
	__u32 _pad52;
};

#define NVA_MAX_DEVICE_INSTANCES	32

/* NV2080_ALLOC_PARAMETERS: 4 B */
struct nva_subdevice_alloc_params {
	__u32 sub_device_id;
};

/* NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2 params: 32 B */
/*
 * NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS (ctrl0000gpu.h), on the root
 * client: the gpu_ids of the attached GPUs, unused entries
 * NVA_GPU_INVALID_ID.  cgpu passes it through untouched.
 */
#define NVA_MAX_ATTACHED_GPUS		32
#define NVA_GPU_INVALID_ID		0xffffffffu

struct nva_gpu_get_attached_ids {
	__u32 gpu_ids[NVA_MAX_ATTACHED_GPUS];	/* OUT */
};

struct nva_gpu_get_id_info_v2 {
	__u32 gpu_id;			/* IN */
	__u32 _r4;
	__u32 device_instance;		/* 8 */
	__u32 sub_device_instance;	/* 12 */
	__u32 _r16[4];
};

struct nva_fb_info {
	__u32 index;
	__u32 data;			/* KiB for the sizes */
};

/* NV2080_CTRL_CMD_FB_GET_INFO_V2: 1028 B (436 B in 535) */
struct nva_fb_get_info_v2 {
	__u32 fb_info_list_size;
	struct nva_fb_info fb_info_list[NVA_FB_INFO_MAX_LIST];
};

#define NVA_FB_GET_INFO_V2_SIZE(n)	(4 + (n) * 8)
#define NVA_FB_GET_INFO_V2_SIZE_535	NVA_FB_GET_INFO_V2_SIZE(NVA_FB_INFO_MAX_LIST_535)

/* ---- layouts by driver version [10.9] ----------------------------------- */

/* "550.163.01" -> {550, 163, 1}; 0 when it starts major.minor. */
static inline int nva_version_parse(const char *s, unsigned long len,
				    __u32 v[3])
{
	unsigned long i = 0;
	int part = 0;

	v[0] = 0;
	v[1] = 0;
	v[2] = 0;
	for (; i < len && s[i] && part < 3; i++) {
		if (s[i] == '.') {
			part++;
			continue;
		}
		if (s[i] < '0' || s[i] > '9' || v[part] > 99999)
			break;
		v[part] = v[part] * 10 + (__u32)(s[i] - '0');
	}
	return v[0] && part >= 1 ? 0 : -1;
}

/* FB_GET_INFO_V2's list length for a driver of this major version. */
static inline __u32 nva_fb_info_max_list(__u32 major)
{
	if (major < 545)
		return NVA_FB_INFO_MAX_LIST_535;
	if (major < 560)
		return NVA_FB_INFO_MAX_LIST_545;
	if (major < 580)
		return NVA_FB_INFO_MAX_LIST_560;
	return NVA_FB_INFO_MAX_LIST;
}

/* Is size FB_GET_INFO_V2's params size in some branch? */
static inline int nva_fb_info_v2_size_known(__u32 size)
{
	return size == NVA_FB_GET_INFO_V2_SIZE(NVA_FB_INFO_MAX_LIST_535) ||
	       size == NVA_FB_GET_INFO_V2_SIZE(NVA_FB_INFO_MAX_LIST_545) ||
	       size == NVA_FB_GET_INFO_V2_SIZE(NVA_FB_INFO_MAX_LIST_560) ||
	       size == NVA_FB_GET_INFO_V2_SIZE(NVA_FB_INFO_MAX_LIST);
}

/*
 * UVM's per-GPU arrays grew from 32 to 256 entries in 550.40.53 (not at a
 * branch): MAP_EXTERNAL_ALLOCATION and ALLOC_SEMAPHORE_POOL change size.
 */
static inline int nva_uvm_v2_layout(const __u32 v[3])
{
	if (v[0] != 550)
		return v[0] > 550;
	return v[1] > 40 || (v[1] == 40 && v[2] >= 53);
}

/* NV2080_CTRL_CMD_FB_GET_INFO (deprecated, embedded pointer): 16 B */
struct nva_fb_get_info {
	__u32 fb_info_list_size;
	__u32 _pad4;
	__u64 fb_info_list;		/* user pointer to nva_fb_info[] */
};

/* ---- nvidia-uvm.ko [7] [10.7] ------------------------------------------ */
/* Plain integers, no _IOC bits. */
#define NVA_UVM_INITIALIZE		0x30000001u
#define NVA_UVM_DEINITIALIZE		0x30000002u
#define NVA_UVM_RESERVE_VA		1
#define NVA_UVM_CREATE_RANGE_GROUP	23
#define NVA_UVM_DESTROY_RANGE_GROUP	24
#define NVA_UVM_REGISTER_GPU_VASPACE	25
#define NVA_UVM_REGISTER_CHANNEL	27
#define NVA_UVM_ENABLE_PEER_ACCESS	29
#define NVA_UVM_MAP_EXTERNAL_ALLOCATION	33
#define NVA_UVM_FREE			34
#define NVA_UVM_REGISTER_GPU		37
#define NVA_UVM_PAGEABLE_MEM_ACCESS	39
#define NVA_UVM_SET_PREFERRED_LOCATION	42
#define NVA_UVM_DISABLE_READ_DUPLICATION 45
#define NVA_UVM_MIGRATE			51
#define NVA_UVM_ALLOC_SEMAPHORE_POOL	68
#define NVA_UVM_VALIDATE_VA_RANGE	72
#define NVA_UVM_CREATE_EXTERNAL_RANGE	73
#define NVA_UVM_MM_INITIALIZE		75
#define NVA_UVM_ALLOC_DEVICE_P2P	78

#define NVA_UVM_MAX_GPUS		256	/* 550.40.53 and later */
#define NVA_UVM_MAX_GPUS_OLD		32	/* before 550.40.53 */
#define NVA_UUID_LEN			16

struct nva_uvm_initialize {
	__u64 flags;
	__u32 rm_status;
	__u32 _pad12;
};

struct nva_uvm_mm_initialize {
	__s32 uvm_fd;
	__u32 rm_status;
};

struct nva_uvm_register_gpu {
	__u8 gpu_uuid[NVA_UUID_LEN];	/* IN/OUT */
	__u8 numa_enabled;		/* 16 */
	__u8 _pad17[3];
	__s32 numa_node_id;		/* 20 */
	__s32 rm_ctrl_fd;		/* 24 */
	__u32 h_client;			/* 28 */
	__u32 h_smc_part_ref;		/* 32 */
	__u32 rm_status;		/* 36 */
};

struct nva_uvm_register_gpu_vaspace {
	__u8 gpu_uuid[NVA_UUID_LEN];
	__s32 rm_ctrl_fd;		/* 16 */
	__u32 h_client;			/* 20 */
	__u32 h_va_space;		/* 24 */
	__u32 rm_status;		/* 28 */
};

struct nva_uvm_create_range_group {
	__u64 range_group_id;		/* OUT */
	__u32 rm_status;
	__u32 _pad12;
};

struct nva_uvm_pageable_mem_access {
	__u8 pageable_mem_access;
	__u8 _pad1[3];
	__u32 rm_status;
};

struct nva_uvm_create_external_range {
	__u64 base;
	__u64 length;
	__u32 rm_status;
	__u32 _pad20;
};

struct nva_uvm_gpu_mapping_attrs {
	__u8 gpu_uuid[NVA_UUID_LEN];
	__u32 gpu_mapping_type;
	__u32 gpu_caching_type;
	__u32 gpu_format_type;
	__u32 gpu_element_bits;
	__u32 gpu_compression_type;
};

/* 550.40.53 and later: 9264 B.  Before: 1200 B (32 GPUs, tail shifted). */
struct nva_uvm_map_external_allocation {
	__u64 base;
	__u64 length;
	__u64 offset;
	struct nva_uvm_gpu_mapping_attrs per_gpu_attributes[NVA_UVM_MAX_GPUS];
	__u64 gpu_attributes_count;	/* 9240 */
	__s32 rm_ctrl_fd;		/* 9248 */
	__u32 h_client;			/* 9252 */
	__u32 h_memory;			/* 9256 */
	__u32 rm_status;		/* 9260 */
};

#define NVA_UVM_MAP_EXTERNAL_ALLOCATION_SIZE_OLD 1200
#define NVA_UVM_MAP_EXT_OLD_OFF_COUNT	1176
#define NVA_UVM_MAP_EXT_OLD_OFF_FD	1184
#define NVA_UVM_MAP_EXT_OLD_OFF_CLIENT	1188
#define NVA_UVM_MAP_EXT_OLD_OFF_MEMORY	1192
#define NVA_UVM_MAP_EXT_OLD_OFF_STATUS	1196

/* 590 and later: 16 B */
struct nva_uvm_free {
	__u64 base;
	__u32 rm_status;
	__u32 _pad12;
};

/* 580 and earlier: 24 B */
struct nva_uvm_free_old {
	__u64 base;
	__u64 length;
	__u32 rm_status;
	__u32 _pad20;
};

/* 550.40.53 and later: 9248 B.  Before: 1184 B. */
struct nva_uvm_alloc_semaphore_pool {
	__u64 base;
	__u64 length;
	struct nva_uvm_gpu_mapping_attrs per_gpu_attributes[NVA_UVM_MAX_GPUS];
	__u64 gpu_attributes_count;	/* 9232 */
	__u32 rm_status;		/* 9240 */
	__u32 _pad9244;
};

#define NVA_UVM_ALLOC_SEMAPHORE_POOL_SIZE_OLD 1184
#define NVA_UVM_SEM_POOL_OLD_OFF_COUNT	1168
#define NVA_UVM_SEM_POOL_OLD_OFF_STATUS	1176

/* ---- layout pins -------------------------------------------------------- */
#define NVA_ASSERT_SIZE(t, n) \
	static_assert(sizeof(struct t) == (n), #t " must be " #n " bytes")
#define NVA_ASSERT_OFF(t, f, n) \
	static_assert(__builtin_offsetof(struct t, f) == (n), #t "." #f " must be at " #n)

NVA_ASSERT_SIZE(nva_os00_free, 16);
NVA_ASSERT_SIZE(nva_os21_alloc, 32);
NVA_ASSERT_SIZE(nva_os64_alloc, 48);
NVA_ASSERT_OFF(nva_os64_alloc, status, 40);
NVA_ASSERT_SIZE(nva_os54_control, 32);
NVA_ASSERT_SIZE(nva_os55_dup, 28);
NVA_ASSERT_SIZE(nva_os57_share, 24);
NVA_ASSERT_SIZE(nva_os32_vidheap, 184);
NVA_ASSERT_OFF(nva_os32_vidheap, status, 20);
NVA_ASSERT_OFF(nva_os32_vidheap, data, 40);
NVA_ASSERT_OFF(nva_os32_vidheap, data.alloc_size.size, 88);
NVA_ASSERT_OFF(nva_os32_vidheap, data.alloc_size.address, 120);
NVA_ASSERT_OFF(nva_os32_vidheap, data.alloc_size.attr2, 144);
NVA_ASSERT_OFF(nva_os32_vidheap, data.alloc_size.numa_node, 152);
NVA_ASSERT_OFF(nva_os32_vidheap, data.info.offset, 48);
NVA_ASSERT_OFF(nva_os32_vidheap, data.info.base, 64);
NVA_ASSERT_OFF(nva_os32_vidheap, data.free.flags, 48);
NVA_ASSERT_SIZE(nva_os02_with_fd, 56);
NVA_ASSERT_SIZE(nva_os33_with_fd, 56);
NVA_ASSERT_OFF(nva_os33_with_fd, fd, 48);
NVA_ASSERT_SIZE(nva_card_info, 72);
NVA_ASSERT_OFF(nva_card_info, gpu_id, 16);
NVA_ASSERT_OFF(nva_card_info, fb_size, 48);
NVA_ASSERT_OFF(nva_card_info, minor_number, 56);
NVA_ASSERT_SIZE(nva_rm_api_version, 72);
NVA_ASSERT_SIZE(nva_register_fd, 4);
NVA_ASSERT_SIZE(nva_os_event, 16);
NVA_ASSERT_SIZE(nva_ioctl_xfer, 16);
NVA_ASSERT_SIZE(nva_memory_alloc_params, 128);
NVA_ASSERT_OFF(nva_memory_alloc_params, size, 64);
NVA_ASSERT_OFF(nva_memory_alloc_params, numa_node, 120);
NVA_ASSERT_SIZE(nva_device_alloc_params, 56);
NVA_ASSERT_OFF(nva_device_alloc_params, va_mode, 48);
NVA_ASSERT_SIZE(nva_subdevice_alloc_params, 4);
NVA_ASSERT_SIZE(nva_gpu_get_id_info_v2, 32);
NVA_ASSERT_SIZE(nva_fb_get_info_v2, 1028);
NVA_ASSERT_SIZE(nva_fb_get_info, 16);
NVA_ASSERT_SIZE(nva_uvm_initialize, 16);
NVA_ASSERT_SIZE(nva_uvm_mm_initialize, 8);
NVA_ASSERT_SIZE(nva_uvm_register_gpu, 40);
NVA_ASSERT_SIZE(nva_uvm_register_gpu_vaspace, 32);
NVA_ASSERT_SIZE(nva_uvm_create_range_group, 16);
NVA_ASSERT_SIZE(nva_uvm_pageable_mem_access, 8);
NVA_ASSERT_SIZE(nva_uvm_create_external_range, 24);
NVA_ASSERT_SIZE(nva_uvm_gpu_mapping_attrs, 36);
NVA_ASSERT_SIZE(nva_uvm_map_external_allocation, 9264);
NVA_ASSERT_OFF(nva_uvm_map_external_allocation, gpu_attributes_count, 9240);
NVA_ASSERT_OFF(nva_uvm_map_external_allocation, rm_status, 9260);
NVA_ASSERT_SIZE(nva_uvm_free, 16);
NVA_ASSERT_SIZE(nva_uvm_free_old, 24);
NVA_ASSERT_SIZE(nva_uvm_alloc_semaphore_pool, 9248);
NVA_ASSERT_OFF(nva_uvm_alloc_semaphore_pool, rm_status, 9240);

/*
 * Every size that depends on the driver's version, from its full version
 * string [10.9]: one table for nvmock, the test clients and cgpu.ko.
 */
struct nva_layout {
	__u32 mem_params;	/* NV_MEMORY_ALLOCATION_PARAMS: 120, 128 from 545 */
	__u32 fb_info_v2;	/* FB_GET_INFO_V2 params */
	__u32 fb_info_max;	/* entries in its list */
	__u32 uvm_map_ext;	/* UVM_MAP_EXTERNAL_ALLOCATION */
	__u32 uvm_sem_pool;	/* UVM_ALLOC_SEMAPHORE_POOL */
	__u32 uvm_max_gpus;	/* entries in their per-GPU arrays */
	__u32 uvm_free;		/* UVM_FREE: 24 B to 580, 16 B after */
};

static inline void nva_layout_of(const __u32 v[3], struct nva_layout *l)
{
	int uvm2 = nva_uvm_v2_layout(v);

	l->mem_params = v[0] < 545 ? NVA_MEMORY_ALLOC_PARAMS_SIZE_535 :
				     NVA_MEMORY_ALLOC_PARAMS_SIZE;
	l->fb_info_max = nva_fb_info_max_list(v[0]);
	l->fb_info_v2 = NVA_FB_GET_INFO_V2_SIZE(l->fb_info_max);
	l->uvm_map_ext = uvm2 ? sizeof(struct nva_uvm_map_external_allocation) :
				NVA_UVM_MAP_EXTERNAL_ALLOCATION_SIZE_OLD;
	l->uvm_sem_pool = uvm2 ? sizeof(struct nva_uvm_alloc_semaphore_pool) :
				 NVA_UVM_ALLOC_SEMAPHORE_POOL_SIZE_OLD;
	l->uvm_max_gpus = uvm2 ? NVA_UVM_MAX_GPUS : NVA_UVM_MAX_GPUS_OLD;
	l->uvm_free = v[0] <= 580 ? sizeof(struct nva_uvm_free_old) :
				    sizeof(struct nva_uvm_free);
}

#endif /* CGPU_NV_ABI_H */
