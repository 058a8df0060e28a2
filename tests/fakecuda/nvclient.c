// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The driver calls libcuda makes, one function each; see nvclient.h.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvclient.h"

const char *nv_status_name(uint32_t status)
{
	switch (status) {
	case NVA_OK: return "NV_OK";
	case NVA_ERR_BUSY_RETRY: return "NV_ERR_BUSY_RETRY";
	case NVA_ERR_ILLEGAL_ACTION: return "NV_ERR_ILLEGAL_ACTION";
	case NVA_ERR_IN_USE: return "NV_ERR_IN_USE";
	case NVA_ERR_INSERT_DUPLICATE_NAME: return "NV_ERR_INSERT_DUPLICATE_NAME";
	case NVA_ERR_INSUFFICIENT_RESOURCES: return "NV_ERR_INSUFFICIENT_RESOURCES";
	case NVA_ERR_INSUFFICIENT_PERMISSIONS: return "NV_ERR_INSUFFICIENT_PERMISSIONS";
	case NVA_ERR_INVALID_ARGUMENT: return "NV_ERR_INVALID_ARGUMENT";
	case NVA_ERR_INVALID_CLASS: return "NV_ERR_INVALID_CLASS";
	case NVA_ERR_INVALID_CLIENT: return "NV_ERR_INVALID_CLIENT";
	case NVA_ERR_INVALID_COMMAND: return "NV_ERR_INVALID_COMMAND";
	case NVA_ERR_INVALID_DEVICE: return "NV_ERR_INVALID_DEVICE";
	case NVA_ERR_INVALID_OBJECT_HANDLE: return "NV_ERR_INVALID_OBJECT_HANDLE";
	case NVA_ERR_INVALID_PARAM_STRUCT: return "NV_ERR_INVALID_PARAM_STRUCT";
	case NVA_ERR_INVALID_STATE: return "NV_ERR_INVALID_STATE";
	case NVA_ERR_NO_MEMORY: return "NV_ERR_NO_MEMORY";
	case NVA_ERR_NOT_SUPPORTED: return "NV_ERR_NOT_SUPPORTED";
	case NVA_ERR_OBJECT_NOT_FOUND: return "NV_ERR_OBJECT_NOT_FOUND";
	case NVA_ERR_GENERIC: return "NV_ERR_GENERIC";
	default: return "NV_ERR_?";
	}
}

/* The CUDA error a libcuda would surface for this driver outcome. */
const char *cuda_error_name(struct nvres r)
{
	if (r.err) {
		switch (r.err) {
		case ENOMEM: return "CUDA_ERROR_OUT_OF_MEMORY";
		case EPERM:
		case EACCES: return "CUDA_ERROR_NOT_PERMITTED";
		case ENODEV:
		case ENXIO:
		case ENOENT: return "CUDA_ERROR_NO_DEVICE";
		default: return "CUDA_ERROR_UNKNOWN";
		}
	}
	switch (r.status) {
	case NVA_OK: return "CUDA_SUCCESS";
	case NVA_ERR_NO_MEMORY:
	case NVA_ERR_INSUFFICIENT_RESOURCES: return "CUDA_ERROR_OUT_OF_MEMORY";
	case NVA_ERR_INVALID_ARGUMENT:
	case NVA_ERR_INVALID_PARAM_STRUCT: return "CUDA_ERROR_INVALID_VALUE";
	case NVA_ERR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
	case NVA_ERR_INSUFFICIENT_PERMISSIONS: return "CUDA_ERROR_NOT_PERMITTED";
	case NVA_ERR_INVALID_OBJECT_HANDLE:
	case NVA_ERR_OBJECT_NOT_FOUND: return "CUDA_ERROR_INVALID_HANDLE";
	case NVA_ERR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
	default: return "CUDA_ERROR_UNKNOWN";
	}
}

void nvres_describe(struct nvres r, char *buf, size_t len)
{
	if (r.err)
		snprintf(buf, len, "errno %d %s", r.err, strerror(r.err));
	else
		snprintf(buf, len, "status 0x%x %s", r.status,
			 nv_status_name(r.status));
}

int nvlayout_from_string(struct nvlayout *lay, const char *version)
{
	__u32 v[3];

	if (nva_version_parse(version, strlen(version), v))
		return -1;
	memset(lay, 0, sizeof(*lay));
	snprintf(lay->version, sizeof(lay->version), "%s", version);
	lay->major = (int)v[0];
	nva_layout_of(v, &lay->t);
	return 0;
}

/* The first "N.N[.N]" token of /proc/driver/nvidia/version [10.8]. */
int nvlayout_from_proc(struct nvlayout *lay)
{
	char line[512], *tok, *save = NULL;
	FILE *f = fopen(NV_PROC_DIR "/version", "r");

	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	for (tok = strtok_r(line, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		if (isdigit((unsigned char)tok[0]) && strchr(tok, '.') &&
		    strspn(tok, "0123456789.") == strlen(tok))
			return nvlayout_from_string(lay, tok);
	}
	return -1;
}

int nv_xfer;

static int nv_xfer_wraps(unsigned nr)
{
	switch (nr) {
	case NVA_ESC_RM_ALLOC:
	case NVA_ESC_RM_FREE:
	case NVA_ESC_RM_CONTROL:
	case NVA_ESC_RM_DUP_OBJECT:
	case NVA_ESC_RM_VID_HEAP_CONTROL:
		return 1;
	}
	return 0;
}

struct nvres nv_ioctl_raw(int fd, unsigned nr, void *arg, size_t size)
{
	struct nvres r = { 0, 0 };

	if (nv_xfer && nv_xfer_wraps(nr)) {
		struct nva_ioctl_xfer x = {
			.cmd = nr, .size = (uint32_t)size,
			.ptr = (uintptr_t)arg,
		};

		if (ioctl(fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD, sizeof(x)), &x) < 0)
			r.err = errno;
		return r;
	}
	if (ioctl(fd, NV_IOWR(nr, size), arg) < 0)
		r.err = errno;
	return r;
}

/* UVM commands are plain integers; the status sits at status_off. */
struct nvres nv_uvm_call(int fd, unsigned long cmd, void *arg,
			 size_t status_off)
{
	struct nvres r = { 0, 0 };

	if (ioctl(fd, cmd, arg) < 0)
		r.err = errno;
	else
		memcpy(&r.status, (char *)arg + status_off, sizeof(r.status));
	return r;
}

struct nvres nv_rm_alloc(struct nvclient *c, uint32_t h_root, uint32_t parent,
			 uint32_t *h_new, uint32_t h_class, void *params,
			 uint32_t params_size)
{
	struct nvres r;

	if (c->use_nvos21) {
		struct nva_os21_alloc a = {
			.h_root = h_root, .h_object_parent = parent,
			.h_object_new = *h_new, .h_class = h_class,
			.p_alloc_parms = (uintptr_t)params,
			.params_size = params_size,
		};
		r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_ALLOC, &a, sizeof(a));
		if (!r.err) {
			r.status = a.status;
			*h_new = a.h_object_new;
		}
	} else {
		struct nva_os64_alloc a = {
			.h_root = h_root, .h_object_parent = parent,
			.h_object_new = *h_new, .h_class = h_class,
			.p_alloc_parms = (uintptr_t)params,
			.params_size = params_size,
		};
		r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_ALLOC, &a, sizeof(a));
		if (!r.err) {
			r.status = a.status;
			*h_new = a.h_object_new;
		}
	}
	return r;
}

struct nvres nv_rm_free(struct nvclient *c, uint32_t h_root, uint32_t parent,
			uint32_t h_object)
{
	struct nva_os00_free f = {
		.h_root = h_root, .h_object_parent = parent,
		.h_object_old = h_object,
	};
	struct nvres r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_FREE, &f, sizeof(f));

	if (!r.err)
		r.status = f.status;
	return r;
}

struct nvres nv_rm_control(struct nvclient *c, uint32_t h_client,
			   uint32_t h_object, uint32_t cmd, void *params,
			   uint32_t params_size)
{
	struct nva_os54_control ctl = {
		.h_client = h_client, .h_object = h_object, .cmd = cmd,
		.params = (uintptr_t)params, .params_size = params_size,
	};
	struct nvres r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_CONTROL, &ctl,
				      sizeof(ctl));

	if (!r.err)
		r.status = ctl.status;
	return r;
}

uint32_t nv_new_handle(void)
{
	static uint32_t next = 0xcf000001u;

	return __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
}

void nvclient_defaults(struct nvclient *c)
{
	memset(c, 0, sizeof(*c));
	c->ctl_fd = c->gpu_fd = c->uvm_fd = c->uvm_mm_fd = -1;
}

static int fail(struct nvclient *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->errbuf, sizeof(c->errbuf), fmt, ap);
	va_end(ap);
	return -1;
}

static int fail_res(struct nvclient *c, const char *what, struct nvres r)
{
	char d[96];

	nvres_describe(r, d, sizeof(d));
	return fail(c, "%s: %s", what, d);
}

static int parse_uuid(const char *s, uint8_t out[16])
{
	unsigned n = 0;

	if (strncmp(s, "GPU-", 4) == 0)
		s += 4;
	for (; *s && n < 32; s++) {
		int v;

		if (*s == '-')
			continue;
		if (!isxdigit((unsigned char)*s))
			break;
		v = isdigit((unsigned char)*s) ? *s - '0' :
						 tolower((unsigned char)*s) - 'a' + 10;
		if (n % 2 == 0)
			out[n / 2] = (uint8_t)(v << 4);
		else
			out[n / 2] |= (uint8_t)v;
		n++;
	}
	return n == 32 ? 0 : -1;
}

static int dir_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int dir_filter(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/*
 * gpus/<bus>/information: take the directory whose "Device Minor" is ours;
 * failing that, the index-th directory in bus order [10.8].
 */
int nv_proc_gpu_uuid(uint32_t minor, unsigned index, uint8_t uuid[16],
		     char *str, size_t len)
{
	struct dirent **ents;
	int n, i, found = -1, rc = -1;
	char uuids[64][48];

	n = scandir(NV_PROC_DIR "/gpus", &ents, dir_filter, dir_cmp);
	if (n < 0)
		return -1;
	for (i = 0; i < n && i < 64; i++) {
		char path[512], line[256];
		long dev_minor = -1;
		FILE *f;

		uuids[i][0] = 0;
		snprintf(path, sizeof(path), NV_PROC_DIR "/gpus/%s/information",
			 ents[i]->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char *v = strchr(line, ':');

			if (!v)
				continue;
			v++;
			v += strspn(v, " \t");
			v[strcspn(v, "\r\n")] = 0;
			if (strncmp(line, "GPU UUID:", 9) == 0)
				snprintf(uuids[i], sizeof(uuids[i]), "%s", v);
			else if (strncmp(line, "Device Minor:", 13) == 0)
				dev_minor = strtol(v, NULL, 10);
		}
		fclose(f);
		if (dev_minor == (long)minor && found < 0)
			found = i;
	}
	if (found < 0 && index < (unsigned)n && index < 64)
		found = (int)index;
	if (found >= 0 && parse_uuid(uuids[found], uuid) == 0) {
		snprintf(str, len, "%s", uuids[found]);
		rc = 0;
	}
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return rc;
}

static int open_node(struct nvclient *c, const char *path, int *fd)
{
	*fd = open(path, O_RDWR | O_CLOEXEC);
	if (*fd < 0)
		return fail(c, "open %s: %s", path, strerror(errno));
	return 0;
}

/* CHECK_VERSION_STR: QUERY, then STRICT with what came back [10.5]. */
static int check_version(struct nvclient *c)
{
	struct nva_rm_api_version v;
	struct nvres r;

	memset(&v, 0, sizeof(v));
	v.cmd = NVA_RM_API_VERSION_CMD_QUERY;
	r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_CHECK_VERSION_STR, &v, sizeof(v));
	if (r.err)
		return fail_res(c, "CHECK_VERSION_STR query", r);
	v.version_string[sizeof(v.version_string) - 1] = 0;
	if (!c->lay.major && nvlayout_from_string(&c->lay, v.version_string))
		return fail(c, "driver version \"%s\" not understood",
			    v.version_string);
	v.cmd = NVA_RM_API_VERSION_CMD_STRICT;
	v.reply = 0;
	r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_CHECK_VERSION_STR, &v, sizeof(v));
	if (r.err)
		return fail(c, "CHECK_VERSION_STR strict \"%s\": %s",
			    v.version_string, strerror(r.err));
	return 0;
}

/* CARD_INFO with 64 entries, as tinygrad asks; pick the index-th valid one. */
static int card_info(struct nvclient *c, unsigned index)
{
	enum { N = 64 };
	struct nva_card_info *ci = calloc(N, sizeof(*ci));
	struct nvres r;
	unsigned i, seen = 0;

	if (!ci)
		return fail(c, "out of memory");
	r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_CARD_INFO, ci, N * sizeof(*ci));
	if (r.err) {
		free(ci);
		return fail_res(c, "CARD_INFO", r);
	}
	for (i = 0; i < N; i++) {
		if (!ci[i].valid)
			continue;
		if (seen++ == index) {
			c->gpu_id = ci[i].gpu_id;
			c->minor = ci[i].minor_number;
			free(ci);
			return 0;
		}
	}
	free(ci);
	return fail(c, "no GPU %u: CARD_INFO lists %u", index, seen);
}

static int rm_init(struct nvclient *c)
{
	struct nva_register_fd reg = { .ctl_fd = c->ctl_fd };
	struct nva_gpu_get_id_info_v2 id;
	struct nva_device_alloc_params dev;
	struct nva_subdevice_alloc_params sub = { 0 };
	uint32_t gpu_ids[1] = { c->gpu_id };
	char path[64];
	struct nvres r;

	snprintf(path, sizeof(path), "/dev/nvidia%u", c->minor);
	if (open_node(c, path, &c->gpu_fd))
		return -1;
	r = nv_ioctl_raw(c->gpu_fd, NVA_ESC_REGISTER_FD, &reg, sizeof(reg));
	if (r.err)
		return fail_res(c, "REGISTER_FD", r);
	r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_ATTACH_GPUS_TO_FD, gpu_ids,
			 sizeof(gpu_ids));
	if (r.err)
		return fail_res(c, "ATTACH_GPUS_TO_FD", r);

	c->h_client = 0;
	r = nv_rm_alloc(c, 0, 0, &c->h_client, NVA_CLASS_ROOT_CLIENT, NULL, 0);
	if (!nvres_ok(r))
		return fail_res(c, "RM_ALLOC root client", r);
	if (!c->h_client)
		return fail(c, "RM_ALLOC root client: no handle came back");

	memset(&id, 0, sizeof(id));
	id.gpu_id = c->gpu_id;
	r = nv_rm_control(c, c->h_client, c->h_client,
			  NVA_CTRL_GPU_GET_ID_INFO_V2, &id, sizeof(id));
	if (!nvres_ok(r))
		return fail_res(c, "GPU_GET_ID_INFO_V2", r);
	c->device_instance = id.device_instance;

	memset(&dev, 0, sizeof(dev));
	dev.device_id = id.device_instance;
	dev.h_client_share = c->h_client;
	dev.va_mode = 2;	/* MULTIPLE_VASPACES, as tinygrad */
	c->h_device = nv_new_handle();
	r = nv_rm_alloc(c, c->h_client, c->h_client, &c->h_device,
			NVA_CLASS_DEVICE, &dev, sizeof(dev));
	if (!nvres_ok(r))
		return fail_res(c, "RM_ALLOC device 0x80", r);

	c->h_subdevice = nv_new_handle();
	r = nv_rm_alloc(c, c->h_client, c->h_device, &c->h_subdevice,
			NVA_CLASS_SUBDEVICE, &sub, sizeof(sub));
	if (!nvres_ok(r))
		return fail_res(c, "RM_ALLOC subdevice 0x2080", r);

	c->h_vaspace = nv_new_handle();
	r = nv_rm_alloc(c, c->h_client, c->h_device, &c->h_vaspace,
			NVA_CLASS_VASPACE, NULL, 0);
	if (!nvres_ok(r))
		return fail_res(c, "RM_ALLOC VA space 0x90F1", r);
	return 0;
}

static int uvm_init(struct nvclient *c)
{
	struct nva_uvm_initialize ini = { 0 };
	struct nva_uvm_mm_initialize mm = { 0 };
	struct nva_uvm_pageable_mem_access pma = { 0 };
	struct nva_uvm_register_gpu rg;
	struct nva_uvm_create_range_group crg = { 0 };
	struct nva_uvm_register_gpu_vaspace rv;
	struct nvres r;

	if (open_node(c, NV_UVM_PATH, &c->uvm_fd) ||
	    open_node(c, NV_UVM_PATH, &c->uvm_mm_fd))
		return -1;
	r = nv_uvm_call(c->uvm_fd, NVA_UVM_INITIALIZE, &ini,
			offsetof(struct nva_uvm_initialize, rm_status));
	if (!nvres_ok(r))
		return fail_res(c, "UVM_INITIALIZE", r);
	mm.uvm_fd = c->uvm_fd;
	r = nv_uvm_call(c->uvm_mm_fd, NVA_UVM_MM_INITIALIZE, &mm,
			offsetof(struct nva_uvm_mm_initialize, rm_status));
	if (!nvres_ok(r))
		return fail_res(c, "UVM_MM_INITIALIZE", r);
	r = nv_uvm_call(c->uvm_fd, NVA_UVM_PAGEABLE_MEM_ACCESS, &pma,
			offsetof(struct nva_uvm_pageable_mem_access, rm_status));
	if (!nvres_ok(r))
		return fail_res(c, "UVM_PAGEABLE_MEM_ACCESS", r);

	memset(&rg, 0, sizeof(rg));
	memcpy(rg.gpu_uuid, c->uuid, sizeof(rg.gpu_uuid));
	rg.rm_ctrl_fd = c->ctl_fd;
	rg.h_client = c->h_client;
	r = nv_uvm_call(c->uvm_fd, NVA_UVM_REGISTER_GPU, &rg,
			offsetof(struct nva_uvm_register_gpu, rm_status));
	if (!nvres_ok(r))
		return fail_res(c, "UVM_REGISTER_GPU", r);
	r = nv_uvm_call(c->uvm_fd, NVA_UVM_CREATE_RANGE_GROUP, &crg,
			offsetof(struct nva_uvm_create_range_group, rm_status));
	if (!nvres_ok(r))
		return fail_res(c, "UVM_CREATE_RANGE_GROUP", r);

	memset(&rv, 0, sizeof(rv));
	memcpy(rv.gpu_uuid, c->uuid, sizeof(rv.gpu_uuid));
	rv.rm_ctrl_fd = c->ctl_fd;
	rv.h_client = c->h_client;
	rv.h_va_space = c->h_vaspace;
	r = nv_uvm_call(c->uvm_fd, NVA_UVM_REGISTER_GPU_VASPACE, &rv,
			offsetof(struct nva_uvm_register_gpu_vaspace, rm_status));
	if (!nvres_ok(r))
		return fail_res(c, "UVM_REGISTER_GPU_VASPACE", r);
	return 0;
}

int nvclient_init(struct nvclient *c, unsigned gpu_index)
{
	c->gpu_index = gpu_index;
	if (nvlayout_from_proc(&c->lay))
		c->lay.major = 0;	/* fall back on the QUERY reply */
	if (open_node(c, NV_CTL_PATH, &c->ctl_fd) || check_version(c) ||
	    card_info(c, gpu_index))
		return -1;
	if (nv_proc_gpu_uuid(c->minor, gpu_index, c->uuid, c->uuid_str,
			     sizeof(c->uuid_str)))
		return fail(c, "no GPU UUID for minor %u in %s/gpus/*/information",
			    c->minor, NV_PROC_DIR);
	if (rm_init(c) || uvm_init(c))
		return -1;
	return 0;
}

void nvclient_close(struct nvclient *c)
{
	int *fds[] = { &c->uvm_mm_fd, &c->uvm_fd, &c->gpu_fd, &c->ctl_fd };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

struct nvres nv_alloc_vidmem(struct nvclient *c, uint64_t size,
			     uint32_t *h_mem, uint64_t *actual)
{
	struct nva_memory_alloc_params p;
	struct nvres r;

	memset(&p, 0, sizeof(p));
	p.owner = c->h_client;
	p.attr = (NVA_ATTR_LOCATION_VIDMEM << NVA_ATTR_LOCATION_SHIFT) |
		 (NVA_ATTR_PAGE_SIZE_DEFAULT << NVA_ATTR_PAGE_SIZE_SHIFT);
	p.size = size;
	*h_mem = c->auto_handles ? 0 : nv_new_handle();
	r = nv_rm_alloc(c, c->h_client, c->h_device, h_mem,
			NVA_CLASS_MEMORY_LOCAL_USER, &p, (uint32_t)c->lay.t.mem_params);
	*actual = p.size;
	return r;
}

struct nvres nv_uvm_map_external(struct nvclient *c, uint64_t va,
				 uint64_t len, uint32_t h_mem)
{
	struct nva_uvm_create_external_range er = { .base = va, .length = len };
	struct nva_uvm_map_external_allocation *m;
	char *raw;
	struct nvres r;
	size_t off_count, off_fd, off_client, off_mem, off_status;

	r = nv_uvm_call(c->uvm_fd, NVA_UVM_CREATE_EXTERNAL_RANGE, &er,
			offsetof(struct nva_uvm_create_external_range, rm_status));
	if (!nvres_ok(r))
		return r;

	m = calloc(1, sizeof(*m));
	if (!m) {
		r.err = ENOMEM;
		return r;
	}
	raw = (char *)m;
	m->base = va;
	m->length = len;
	m->offset = 0;
	memcpy(m->per_gpu_attributes[0].gpu_uuid, c->uuid, NVA_UUID_LEN);
	if (c->lay.t.uvm_map_ext == sizeof(*m)) {
		off_count = offsetof(typeof(*m), gpu_attributes_count);
		off_fd = offsetof(typeof(*m), rm_ctrl_fd);
		off_client = offsetof(typeof(*m), h_client);
		off_mem = offsetof(typeof(*m), h_memory);
		off_status = offsetof(typeof(*m), rm_status);
	} else {
		off_count = NVA_UVM_MAP_EXT_OLD_OFF_COUNT;
		off_fd = NVA_UVM_MAP_EXT_OLD_OFF_FD;
		off_client = NVA_UVM_MAP_EXT_OLD_OFF_CLIENT;
		off_mem = NVA_UVM_MAP_EXT_OLD_OFF_MEMORY;
		off_status = NVA_UVM_MAP_EXT_OLD_OFF_STATUS;
	}
	*(uint64_t *)(raw + off_count) = 1;
	*(int32_t *)(raw + off_fd) = c->ctl_fd;
	*(uint32_t *)(raw + off_client) = c->h_client;
	*(uint32_t *)(raw + off_mem) = h_mem;
	r = nv_uvm_call(c->uvm_fd, NVA_UVM_MAP_EXTERNAL_ALLOCATION, m,
			off_status);
	free(m);
	if (!nvres_ok(r))
		nv_uvm_free_va(c, va, len);
	return r;
}

struct nvres nv_uvm_free_va(struct nvclient *c, uint64_t va, uint64_t len)
{
	if (c->lay.t.uvm_free == sizeof(struct nva_uvm_free_old)) {
		struct nva_uvm_free_old f = { .base = va, .length = len };

		return nv_uvm_call(c->uvm_fd, NVA_UVM_FREE, &f,
				   offsetof(struct nva_uvm_free_old, rm_status));
	} else {
		struct nva_uvm_free f = { .base = va };

		return nv_uvm_call(c->uvm_fd, NVA_UVM_FREE, &f,
				   offsetof(struct nva_uvm_free, rm_status));
	}
}

/* FB_GET_INFO_V2 on the subdevice; values in KiB [5]. */
struct nvres nv_fb_info(struct nvclient *c, uint64_t *total_kib,
			uint64_t *heap_kib, uint64_t *free_kib)
{
	struct nva_fb_get_info_v2 p;
	struct nvres r;
	unsigned i;

	memset(&p, 0, sizeof(p));
	p.fb_info_list_size = 3;
	p.fb_info_list[0].index = NVA_FB_INFO_TOTAL_RAM_SIZE;
	p.fb_info_list[1].index = NVA_FB_INFO_HEAP_SIZE;
	p.fb_info_list[2].index = NVA_FB_INFO_HEAP_FREE;
	r = nv_rm_control(c, c->h_client, c->h_subdevice,
			  NVA_CTRL_FB_GET_INFO_V2, &p, (uint32_t)c->lay.t.fb_info_v2);
	*total_kib = *heap_kib = *free_kib = 0;
	for (i = 0; i < 3; i++) {
		switch (p.fb_info_list[i].index) {
		case NVA_FB_INFO_TOTAL_RAM_SIZE:
			*total_kib = p.fb_info_list[i].data;
			break;
		case NVA_FB_INFO_HEAP_SIZE:
			*heap_kib = p.fb_info_list[i].data;
			break;
		case NVA_FB_INFO_HEAP_FREE:
			*free_kib = p.fb_info_list[i].data;
			break;
		}
	}
	return r;
}

struct nvres nv_attached_ids(struct nvclient *c, uint32_t *ids, unsigned max,
			     unsigned *n)
{
	struct nva_gpu_get_attached_ids p;
	struct nvres r;
	unsigned i;

	memset(&p, 0xff, sizeof(p));
	r = nv_rm_control(c, c->h_client, c->h_client,
			  NVA_CTRL_GPU_GET_ATTACHED_IDS, &p, sizeof(p));
	*n = 0;
	for (i = 0; nvres_ok(r) && i < NVA_MAX_ATTACHED_GPUS; i++) {
		if (p.gpu_ids[i] == NVA_GPU_INVALID_ID)
			continue;
		if (*n < max)
			ids[*n] = p.gpu_ids[i];
		(*n)++;
	}
	return r;
}

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		v = strtoull(s, &end, 16);
	else
		v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	}
	if (shift && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
		end += strlen(end);
	if (*end)
		return -1;
	if (shift && v > (~0ull >> shift))
		return -1;
	*out = v << shift;
	return 0;
}
