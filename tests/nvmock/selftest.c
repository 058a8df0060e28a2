// SPDX-License-Identifier: GPL-2.0
/*
 * Smoke test of nvmock.ko, run as root in a guest where the module is loaded
 * with its defaults (2 GPUs of 16 GiB, version 595.45.04) and debugfs is
 * mounted.  Prints one line per check and "selftest: PASS" or
 * "selftest: FAIL (n)" last; the exit status says the same.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nv_abi.h"

#define DBG "/sys/kernel/debug/nvmock/"
#define MIB (1024ull * 1024)

static int failures;

static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
}

static unsigned long long dbg(const char *name)
{
	char path[128], buf[32] = "";
	int fd;

	snprintf(path, sizeof(path), DBG "%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return ~0ull;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = 0;
	close(fd);
	return strtoull(buf, NULL, 10);
}

static int esc(int fd, unsigned int nr, void *p, unsigned int size)
{
	return ioctl(fd, _IOC(_IOC_READ | _IOC_WRITE, NVA_IOCTL_MAGIC, nr, size), p) ? -errno : 0;
}

static __u32 rm_alloc(int fd, __u32 root, __u32 parent, __u32 *h,
		      __u32 cls, void *params)
{
	struct nva_os64_alloc a = {
		.h_root = root, .h_object_parent = parent, .h_object_new = *h,
		.h_class = cls, .p_alloc_parms = (uintptr_t)params,
	};

	if (esc(fd, NVA_ESC_RM_ALLOC, &a, sizeof(a)))
		return ~0u;
	*h = a.h_object_new;
	return a.status;
}

static __u32 rm_free(int fd, __u32 root, __u32 obj)
{
	struct nva_os00_free f = { .h_root = root, .h_object_old = obj };

	if (esc(fd, NVA_ESC_RM_FREE, &f, sizeof(f)))
		return ~0u;
	return f.status;
}

static __u32 alloc_vidmem(int fd, __u32 client, __u32 dev, __u32 *h,
			  __u64 size, struct nva_memory_alloc_params *out)
{
	struct nva_memory_alloc_params p = { .size = size };
	__u32 st;

	st = rm_alloc(fd, client, dev, h, NVA_CLASS_MEMORY_LOCAL_USER, &p);
	if (out)
		*out = p;
	return st;
}

static int uvm(int fd, unsigned long cmd, void *p)
{
	return ioctl(fd, cmd, p) ? -errno : 0;
}

static void test_escapes(int ctl, int gpu0)
{
	struct nva_rm_api_version v = { .cmd = NVA_RM_API_VERSION_CMD_QUERY };
	struct nva_card_info ci[64];
	struct nva_os00_free f = { 0 };
	struct nva_ioctl_xfer x;
	int ret;

	check(!esc(ctl, NVA_ESC_CHECK_VERSION_STR, &v, sizeof(v)) &&
	      !strcmp(v.version_string, "595.45.04") && v.reply == 1,
	      "CHECK_VERSION_STR query -> %s", v.version_string);
	memset(&v, 0, sizeof(v));
	strcpy(v.version_string, "595.45.04");
	check(!esc(ctl, NVA_ESC_CHECK_VERSION_STR, &v, sizeof(v)), "strict match");
	v.cmd = NVA_RM_API_VERSION_CMD_RELAXED;
	strcpy(v.version_string, "595.99");
	check(!esc(ctl, NVA_ESC_CHECK_VERSION_STR, &v, sizeof(v)), "relaxed match");
	v.cmd = NVA_RM_API_VERSION_CMD_STRICT;
	strcpy(v.version_string, "535.104.05");
	ret = esc(ctl, NVA_ESC_CHECK_VERSION_STR, &v, sizeof(v));
	check(ret == -EINVAL && !strcmp(v.version_string, "595.45.04"),
	      "strict mismatch -> -EINVAL and our version back");

	ret = esc(ctl, NVA_ESC_CARD_INFO, ci, sizeof(ci[0]));
	check(ret == -EINVAL, "CARD_INFO with 1 entry for 2 GPUs -> -EINVAL");
	ret = esc(ctl, NVA_ESC_CARD_INFO, ci, sizeof(ci));
	check(!ret && ci[0].valid && ci[1].valid && !ci[2].valid &&
	      ci[0].gpu_id == 0x100 && ci[1].gpu_id == 0x200 && ci[1].minor_number == 1,
	      "CARD_INFO 64 entries: gpu_id %#x %#x", ci[0].gpu_id, ci[1].gpu_id);
	check(esc(gpu0, NVA_ESC_CARD_INFO, ci, sizeof(ci)) == -EINVAL,
	      "CARD_INFO on a GPU node -> -EINVAL");
	check(esc(ctl, NVA_ESC_CARD_INFO, ci, 100) == -EINVAL,
	      "CARD_INFO size 100 -> -EINVAL");
	check(esc(ctl, NVA_ESC_RM_FREE, &f, 20) == -EINVAL, "RM_FREE size 20 -> -EINVAL");
	check(esc(ctl, 0x99, &f, sizeof(f)) == -EINVAL, "unknown escape -> -EINVAL");
	check(ioctl(ctl, _IOC(0, 'Z', NVA_ESC_RM_FREE, sizeof(f)), &f) == 0 &&
	      f.status == NVA_ERR_INVALID_OBJECT_HANDLE,
	      "type and direction ignored; unknown client -> 0x33 (got %#x)", f.status);
	check(esc(ctl, NVA_ESC_RM_FREE, (void *)16, sizeof(f)) == -EFAULT,
	      "bad pointer -> -EFAULT");
	f.status = 0;
	x = (struct nva_ioctl_xfer){ NVA_ESC_RM_FREE, sizeof(f), (uintptr_t)&f };
	check(esc(ctl, NVA_ESC_IOCTL_XFER_CMD, &x, sizeof(x)) == 0 &&
	      f.status == NVA_ERR_INVALID_OBJECT_HANDLE, "XFER_CMD wraps RM_FREE");
	x.size = NVA_ABSOLUTE_MAX_IOCTL_SIZE + 1;
	check(esc(ctl, NVA_ESC_IOCTL_XFER_CMD, &x, sizeof(x)) == -EINVAL,
	      "XFER_CMD size 16385 -> -EINVAL");
}

static void test_rm(int ctl, int ctl2)
{
	struct nva_device_alloc_params dp = { .device_id = 0 };
	struct nva_memory_alloc_params mp;
	struct nva_fb_get_info_v2 fb = { .fb_info_list_size = 2 };
	struct nva_os54_control c;
	struct nva_os55_dup d;
	struct nva_os32_vidheap vh;
	__u32 client = 0, dev = 0, sub = 0, mem = 0, mem2 = 0, dup = 0, h;
	unsigned long long used0 = dbg("gpu0/used_bytes"), clients0 = dbg("clients");
	__u32 st;

	check(dbg("gpu0/total_bytes") == 16384 * MIB, "gpu0/total_bytes");
	check(rm_alloc(ctl, 0, 0, &client, NVA_CLASS_ROOT, NULL) == 0 &&
	      (client & 0xfff00000) == 0xc1d00000, "client %#x", client);
	check(dbg("clients") == clients0 + 1, "clients counter");
	check(rm_alloc(ctl, client, client, &dev, NVA_CLASS_DEVICE, &dp) == 0, "device");
	h = 0;
	dp.device_id = 7;
	check(rm_alloc(ctl, client, client, &h, NVA_CLASS_DEVICE, &dp) == NVA_ERR_INVALID_CLASS,
	      "device 7 -> INVALID_CLASS");
	check(rm_alloc(ctl, client, dev, &sub, NVA_CLASS_SUBDEVICE, NULL) == 0, "subdevice");
	h = 0;
	check(rm_alloc(ctl, client, dev, &h, NVA_CLASS_SUBDEVICE, NULL) ==
	      NVA_ERR_INSUFFICIENT_RESOURCES, "second subdevice 0 -> 0x1A");
	h = 0;
	check(rm_alloc(ctl, client, dev, &h, 0x1234, NULL) == NVA_ERR_INVALID_CLASS,
	      "class 0x1234 -> INVALID_CLASS");

	st = alloc_vidmem(ctl, client, dev, &mem, 3 * MIB, &mp);
	check(!st && mp.size == 4 * MIB && mp.alignment == 2 * MIB && mp.limit == 4 * MIB - 1,
	      "3 MiB vidmem -> size %#llx align %#llx", (unsigned long long)mp.size,
	      (unsigned long long)mp.alignment);
	check(dbg("gpu0/used_bytes") == used0 + 4 * MIB, "used_bytes +4 MiB");
	st = alloc_vidmem(ctl, client, dev, &mem2, 1, &mp);
	check(!st && mp.size == 0x10000, "1 B vidmem -> 64 KiB");
	h = mem;
	check(alloc_vidmem(ctl, client, dev, &h, 1, NULL) == NVA_ERR_INSERT_DUPLICATE_NAME,
	      "duplicate handle -> 0x19");
	h = 0;
	check(alloc_vidmem(ctl, client, dev, &h, 0, NULL) == NVA_ERR_INVALID_ARGUMENT,
	      "size 0 -> 0x1F");
	h = 0;
	check(alloc_vidmem(ctl, client, dev, &h, 16384 * MIB, NULL) == NVA_ERR_NO_MEMORY,
	      "over the card -> NO_MEMORY");
	h = 0;
	check(alloc_vidmem(ctl, client, dev, &h, ~0ull, NULL) == NVA_ERR_NO_MEMORY,
	      "U64_MAX -> NO_MEMORY");
	h = 0;
	check(rm_alloc(ctl, client, dev, &h, NVA_CLASS_MEMORY_LOCAL_USER, (void *)16) ==
	      NVA_ERR_INVALID_POINTER, "bad params pointer -> INVALID_POINTER");

	fb.fb_info_list[0].index = NVA_FB_INFO_HEAP_SIZE;
	fb.fb_info_list[1].index = NVA_FB_INFO_HEAP_FREE;
	c = (struct nva_os54_control){ .h_client = client, .h_object = sub,
		.cmd = NVA_CTRL_FB_GET_INFO_V2, .params = (uintptr_t)&fb,
		.params_size = sizeof(fb) };
	check(!esc(ctl, NVA_ESC_RM_CONTROL, &c, sizeof(c)) && !c.status &&
	      fb.fb_info_list[0].data == 16384 * 1024 &&
	      fb.fb_info_list[1].data == (16384 * MIB - dbg("gpu0/used_bytes")) >> 10,
	      "FB_GET_INFO_V2 heap %u KiB free %u KiB", fb.fb_info_list[0].data,
	      fb.fb_info_list[1].data);
	c.params_size = 1000;
	check(!esc(ctl, NVA_ESC_RM_CONTROL, &c, sizeof(c)) &&
	      c.status == NVA_ERR_INVALID_PARAM_STRUCT, "wrong paramsSize -> 0x3A");
	c.params_size = sizeof(fb);
	c.cmd = 0x20801399;
	check(!esc(ctl, NVA_ESC_RM_CONTROL, &c, sizeof(c)) &&
	      c.status == NVA_ERR_NOT_SUPPORTED, "unknown control -> NOT_SUPPORTED");

	d = (struct nva_os55_dup){ .h_client = client, .h_parent = dev,
		.h_client_src = client, .h_object_src = mem };
	check(!esc(ctl, NVA_ESC_RM_DUP_OBJECT, &d, sizeof(d)) && !d.status && d.h_object,
	      "dup memory -> %#x", d.h_object);
	dup = d.h_object;
	check(rm_free(ctl, client, mem) == 0, "free original");
	check(dbg("gpu0/used_bytes") == used0 + 4 * MIB + 0x10000,
	      "bytes stay while the dup lives");
	check(rm_free(ctl, client, dup) == 0 &&
	      dbg("gpu0/used_bytes") == used0 + 0x10000, "bytes return with the dup");
	check(rm_free(ctl, client, 0xdeadbeef) == 0, "unknown object -> NV_OK");
	check(rm_free(ctl2, client, mem2) == NVA_ERR_INVALID_CLIENT,
	      "client of another fd -> 0x23");

	memset(&vh, 0, sizeof(vh));
	vh.h_root = client;
	vh.h_object_parent = dev;
	vh.function = NVA_OS32_FUNC_ALLOC_SIZE;
	vh.data.alloc_size.size = 100 * 1024;
	check(!esc(ctl, NVA_ESC_RM_VID_HEAP_CONTROL, &vh, sizeof(vh)) && !vh.status &&
	      vh.data.alloc_size.size == 0x20000 && vh.data.alloc_size.partition_stride == 256,
	      "VID_HEAP ALLOC_SIZE 100 KiB -> %#llx",
	      (unsigned long long)vh.data.alloc_size.size);
	h = vh.data.alloc_size.h_memory;
	check(dbg("gpu0/used_bytes") == used0 + 0x10000 + 0x20000, "vidheap charged");
	vh.function = NVA_OS32_FUNC_INFO;
	check(!esc(ctl, NVA_ESC_RM_VID_HEAP_CONTROL, &vh, sizeof(vh)) && !vh.status &&
	      vh.total == 16384 * MIB && vh.free == 16384 * MIB - dbg("gpu0/used_bytes"),
	      "VID_HEAP INFO");
	memset(&vh.data, 0, sizeof(vh.data));
	vh.function = NVA_OS32_FUNC_FREE;
	vh.data.free.h_memory = h;
	check(!esc(ctl, NVA_ESC_RM_VID_HEAP_CONTROL, &vh, sizeof(vh)) &&
	      vh.status == NVA_ERR_INVALID_ARGUMENT, "VID_HEAP FREE without flag -> 0x1F");
	vh.data.free.flags = NVA_OS32_FREE_FLAGS_MEMORY_HANDLE_PROVIDED;
	check(!esc(ctl, NVA_ESC_RM_VID_HEAP_CONTROL, &vh, sizeof(vh)) && !vh.status &&
	      dbg("gpu0/used_bytes") == used0 + 0x10000, "VID_HEAP FREE");

	check(rm_free(ctl, client, dev) == 0 && dbg("gpu0/used_bytes") == used0 &&
	      dbg("gpu0/live_allocs") == 0, "freeing the device frees its memory");
	check(rm_free(ctl, client, client) == 0 && dbg("clients") == clients0,
	      "freeing the client");
}

static void test_close_frees(void)
{
	struct nva_device_alloc_params dp = { .device_id = 1 };
	__u32 client = 0, dev = 0, mem = 0;
	int ctl = open("/dev/nvidiactl", O_RDWR);

	rm_alloc(ctl, 0, 0, &client, NVA_CLASS_ROOT_CLIENT, NULL);
	rm_alloc(ctl, client, client, &dev, NVA_CLASS_DEVICE, &dp);
	check(alloc_vidmem(ctl, client, dev, &mem, 1024 * MIB, NULL) == 0 &&
	      dbg("gpu1/used_bytes") == 1024 * MIB && dbg("gpu1/live_allocs") == 1,
	      "1 GiB on gpu1");
	close(ctl);
	check(dbg("gpu1/used_bytes") == 0 && dbg("clients") == 0, "close frees everything");
}

static void test_uvm(int ctl)
{
	struct nva_uvm_initialize init = { 0 };
	struct nva_uvm_mm_initialize mm;
	struct nva_uvm_register_gpu rg = { 0 };
	struct nva_uvm_register_gpu_vaspace rv = { 0 };
	struct nva_uvm_create_external_range er;
	struct nva_uvm_free fr;
	struct nva_uvm_pageable_mem_access pma = { 0 };
	static struct nva_uvm_map_external_allocation me;
	static struct nva_uvm_alloc_semaphore_pool sp;
	struct nva_device_alloc_params dp = { 0 };
	__u32 client = 0, dev = 0, vas = 0, mem = 0;
	const size_t len = 2 * MIB;
	int u = open("/dev/nvidia-uvm", O_RDWR), u2 = open("/dev/nvidia-uvm", O_RDWR);
	unsigned long long managed0 = dbg("managed_ranges");
	__u8 uuid0[16] = { 0x6e, 0x76, 0x6d, 0x6f, 0x63, 0x6b, 0x40, 0x00, 0x80 };
	char *p, *q;
	int status;

	check(u >= 0 && u2 >= 0, "open /dev/nvidia-uvm twice");
	check(!uvm(u, NVA_UVM_PAGEABLE_MEM_ACCESS, &pma) &&
	      pma.rm_status == NVA_ERR_ILLEGAL_ACTION, "before INITIALIZE -> ILLEGAL_ACTION");
	check(uvm(u, 12345, &pma) == -EINVAL, "unknown UVM command -> -EINVAL");
	check(!uvm(u, NVA_UVM_INITIALIZE, &init) && !init.rm_status, "UVM_INITIALIZE");
	mm = (struct nva_uvm_mm_initialize){ .uvm_fd = ctl };
	check(!uvm(u2, NVA_UVM_MM_INITIALIZE, &mm) && mm.rm_status == NVA_ERR_INVALID_ARGUMENT,
	      "MM_INITIALIZE with an nvidiactl fd -> 0x1F");
	mm = (struct nva_uvm_mm_initialize){ .uvm_fd = u };
	check(!uvm(u2, NVA_UVM_MM_INITIALIZE, &mm) && !mm.rm_status, "MM_INITIALIZE");
	check(!uvm(u, NVA_UVM_PAGEABLE_MEM_ACCESS, &pma) && !pma.rm_status &&
	      !pma.pageable_mem_access, "PAGEABLE_MEM_ACCESS -> 0");

	rm_alloc(ctl, 0, 0, &client, NVA_CLASS_ROOT_CLIENT, NULL);
	rm_alloc(ctl, client, client, &dev, NVA_CLASS_DEVICE, &dp);
	rm_alloc(ctl, client, dev, &vas, NVA_CLASS_VASPACE, NULL);
	alloc_vidmem(ctl, client, dev, &mem, 8 * MIB, NULL);

	memcpy(rg.gpu_uuid, uuid0, 16);
	rg.rm_ctrl_fd = u;
	rg.h_client = client;
	check(!uvm(u, NVA_UVM_REGISTER_GPU, &rg) && rg.rm_status == NVA_ERR_INVALID_ARGUMENT,
	      "REGISTER_GPU with a UVM fd as rmCtrlFd -> 0x1F");
	rg.rm_ctrl_fd = ctl;
	check(!uvm(u, NVA_UVM_REGISTER_GPU, &rg) && !rg.rm_status, "REGISTER_GPU");
	memcpy(rv.gpu_uuid, uuid0, 16);
	rv.rm_ctrl_fd = ctl;
	rv.h_client = client;
	rv.h_va_space = vas;
	check(!uvm(u, NVA_UVM_REGISTER_GPU_VASPACE, &rv) && !rv.rm_status,
	      "REGISTER_GPU_VASPACE");

	p = mmap(NULL, 64 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p, 64 * MIB);
	p = (char *)(((uintptr_t)p + 2 * MIB - 1) & ~(2 * MIB - 1));
	er = (struct nva_uvm_create_external_range){ .base = (uintptr_t)p, .length = 8 * MIB };
	check(!uvm(u, NVA_UVM_CREATE_EXTERNAL_RANGE, &er) && !er.rm_status,
	      "CREATE_EXTERNAL_RANGE");
	er.base += MIB;
	check(!uvm(u, NVA_UVM_CREATE_EXTERNAL_RANGE, &er) &&
	      er.rm_status == NVA_ERR_UVM_ADDRESS_IN_USE, "overlap -> 0x68");
	er.base = ~0ull - 4095;
	check(!uvm(u, NVA_UVM_CREATE_EXTERNAL_RANGE, &er) &&
	      er.rm_status == NVA_ERR_INVALID_ADDRESS, "wrapping range -> 0x1E");

	memset(&me, 0, sizeof(me));
	me.base = (uintptr_t)p;
	me.length = 8 * MIB;
	me.gpu_attributes_count = 1;
	memcpy(me.per_gpu_attributes[0].gpu_uuid, uuid0, 16);
	me.rm_ctrl_fd = ctl;
	me.h_client = client;
	me.h_memory = mem;
	check(!uvm(u, NVA_UVM_MAP_EXTERNAL_ALLOCATION, &me) && !me.rm_status,
	      "MAP_EXTERNAL_ALLOCATION");
	check(rm_free(ctl, client, mem) == 0 && dbg("gpu0/used_bytes") == 8 * MIB,
	      "UVM keeps the memory after RM_FREE");
	fr = (struct nva_uvm_free){ .base = (uintptr_t)p };
	check(!uvm(u, NVA_UVM_FREE, &fr) && !fr.rm_status && dbg("gpu0/used_bytes") == 0,
	      "UVM_FREE releases it");

	q = mmap(p, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, u, (off_t)(uintptr_t)p);
	check(q == p, "managed mmap at %p", (void *)p);
	if (q == p) {
		memset(q, 0x5a, len);
		check(dbg("managed_ranges") == managed0 + 1 && dbg("live_managed_ranges") == 1,
		      "managed range counted");
		er = (struct nva_uvm_create_external_range){ .base = (uintptr_t)q, .length = len };
		check(!uvm(u, NVA_UVM_VALIDATE_VA_RANGE, &er) && !er.rm_status,
		      "VALIDATE_VA_RANGE of the managed range");
		er.length = 2 * len;
		check(!uvm(u, NVA_UVM_DISABLE_READ_DUPLICATION, &er) &&
		      er.rm_status == NVA_ERR_INVALID_ADDRESS,
		      "DISABLE_READ_DUPLICATION past its end -> 0x1E");
		munmap(q, len);
		check(dbg("live_managed_ranges") == 0, "munmap ends it");
	}
	q = mmap(p, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, u, 0);
	check(q == MAP_FAILED && errno == EINVAL, "offset != address -> EINVAL");

	memset(&sp, 0, sizeof(sp));
	sp.base = (uintptr_t)p;
	sp.length = len;
	check(!uvm(u, NVA_UVM_ALLOC_SEMAPHORE_POOL, &sp) && !sp.rm_status,
	      "ALLOC_SEMAPHORE_POOL");
	managed0 = dbg("managed_ranges");
	q = mmap(p, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, u, (off_t)(uintptr_t)p);
	check(q == p && dbg("managed_ranges") == managed0,
	      "semaphore pool mmap is not a managed range");
	if (q == p)
		munmap(q, len);

	/* the mapping outlives the fd; partial unmap, mremap refused; fork */
	p += 4 * MIB;	/* the semaphore pool stays at the old p */
	q = mmap(p, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, u, (off_t)(uintptr_t)p);
	check(q == p && dbg("live_managed_ranges") == 1, "second managed mmap");
	if (q == p) {
		pid_t pid;

		check(munmap(q + 4096, 4096) && errno == EINVAL, "partial munmap -> EINVAL");
		check(mprotect(q, 4096, PROT_READ) && errno == EINVAL,
		      "partial mprotect -> EINVAL");
		check(mremap(q, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, q + 8 * MIB) ==
		      MAP_FAILED, "mremap refused");
		madvise(q, len, MADV_DOFORK);
		q[5] = 7;
		pid = fork();
		if (pid == 0)
			_exit(q[5] == 7 ? 0 : 1);
		check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      !WEXITSTATUS(status), "a forked child sees the mapping");
		close(u);
		u = -1;
		q[len - 1] = 1;
		check(dbg("live_managed_ranges") == 1, "mapping outlives its fd (%llu)",
		      dbg("live_managed_ranges"));
		munmap(q, len);
		check(dbg("live_managed_ranges") == 0, "and ends with munmap");
	}

	close(u2);
	if (u >= 0)
		close(u);
	rm_free(ctl, client, client);
}

int main(void)
{
	int ctl = open("/dev/nvidiactl", O_RDWR);
	int ctl2 = open("/dev/nvidiactl", O_RDWR);
	int gpu0 = open("/dev/nvidia0", O_RDWR);

	check(ctl >= 0 && ctl2 >= 0 && gpu0 >= 0, "open the nodes");
	if (ctl < 0 || ctl2 < 0 || gpu0 < 0)
		return 1;
	check(dbg("clients") == 0, "no clients at start (debugfs mounted?)");
	test_escapes(ctl, gpu0);
	test_rm(ctl, ctl2);
	test_close_frees();
	test_uvm(ctl);
	close(gpu0);
	close(ctl2);
	close(ctl);
	check(dbg("clients") == 0 && dbg("gpu0/used_bytes") == 0, "all gone at the end");
	printf(failures ? "selftest: FAIL (%d)\n" : "selftest: PASS\n", failures);
	return failures ? 1 : 0;
}
