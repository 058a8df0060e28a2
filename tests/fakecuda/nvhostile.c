// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvhostile: hostile input against the NVIDIA driver ABI (nvmock.ko, the
 * real driver, or either under cgpu.ko).  Every escape and UVM command gets
 * wrong sizes, bad pointers, garbage, unknown handles and fds of the wrong
 * kind.  Where docs/nvidia-abi.md documents the answer, the case asserts
 * it; elsewhere it asserts only that the call fails and the process lives.
 * The kernel log is the harness's business.
 *
 * Output: one "ok NAME" or "FAIL NAME: why" line per case, then
 * "N passed, N failed".  Exit 0 when nothing failed, 1 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nvclient.h"

#define BUF_SIZE	(NVA_ABSOLUTE_MAX_IOCTL_SIZE + 4096)
#define KERNEL_PTR	0xffffffff81000000ull
#define NONCANON_PTR	0x8000000000000000ull

static int quiet;
static unsigned long n_pass, n_fail;
static unsigned long iterations = 300;
static uint64_t rng_state = 0x6e766d6f636b2121ull;	/* fixed seed */

static struct nvclient A;	/* a fully initialised client */
static int gpu_count;
static uint8_t *zbuf;		/* BUF_SIZE zero bytes */
static uint8_t *gbuf;		/* BUF_SIZE garbage bytes */
static void *unmapped;		/* a page that is not mapped */
static uint8_t *guarded;	/* a page followed by a PROT_NONE page */
static uint8_t *readonly;	/* a PROT_READ page */

static void result(int ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void result(int ok, const char *name, const char *fmt, ...)
{
	char why[256] = "";
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
	}
	if (ok) {
		n_pass++;
		if (!quiet)
			printf("ok   %s%s%s\n", name, *why ? ": " : "", why);
	} else {
		n_fail++;
		printf("FAIL %s: %s\n", name, why);
	}
	fflush(stdout);
}

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static void fill_garbage(uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static void describe(struct nvres r, char *buf, size_t len)
{
	if (!r.err && !r.status)
		snprintf(buf, len, "success");
	else
		nvres_describe(r, buf, len);
}

/* ---- expectations ------------------------------------------------------ */

static int raw(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? errno : 0;
}

static void expect_errno(const char *name, int got, int want)
{
	if (got == want)
		result(1, name, "%s", want ? strerrorname_np(want) : "0");
	else
		result(0, name, "got %s, want %s",
		       got ? strerrorname_np(got) : "success",
		       want ? strerrorname_np(want) : "success");
}

static void expect_errno2(const char *name, int got, int want1, int want2)
{
	if (got == want1 || got == want2)
		result(1, name, "%s", strerrorname_np(got));
	else
		result(0, name, "got %s, want %s or %s",
		       got ? strerrorname_np(got) : "success",
		       strerrorname_np(want1), strerrorname_np(want2));
}

static void expect_status(const char *name, struct nvres r, uint32_t want)
{
	char d[96];

	describe(r, d, sizeof(d));
	if (!r.err && r.status == want)
		result(1, name, "%s", d);
	else
		result(0, name, "got %s, want status 0x%x %s", d, want,
		       nv_status_name(want));
}

static void expect_fail(const char *name, struct nvres r)
{
	char d[96];

	describe(r, d, sizeof(d));
	result(r.err || r.status, name, r.err || r.status ? "%s" :
	       "got %s, want an error", d);
}

static void expect_ok(const char *name, struct nvres r)
{
	char d[96];

	describe(r, d, sizeof(d));
	result(nvres_ok(r), name, nvres_ok(r) ? NULL : "got %s, want success", d);
}

/* ---- fds ----------------------------------------------------------------- */

static int open_or_die(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "nvhostile: open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

static int open_gpu(void)
{
	char path[32];

	snprintf(path, sizeof(path), "/dev/nvidia%u", A.minor);
	return open_or_die(path);
}

/* A UVM fd that went through UVM_INITIALIZE. */
static int open_uvm_inited(void)
{
	int fd = open_or_die(NV_UVM_PATH);
	struct nva_uvm_initialize ini = { 0 };
	struct nvres r = nv_uvm_call(fd, NVA_UVM_INITIALIZE, &ini,
				     offsetof(struct nva_uvm_initialize, rm_status));

	if (!nvres_ok(r)) {
		fprintf(stderr, "nvhostile: UVM_INITIALIZE failed\n");
		exit(1);
	}
	return fd;
}

/* The kinds of fd a driver must refuse where a ctl (or uvm) fd is wanted. */
struct wrong_fd {
	const char *name;
	int fd;
};

static int pipe_fds[2] = { -1, -1 };

static size_t wrong_fds(struct wrong_fd *w, int want_uvm)
{
	static int devnull = -1, gpu = -1, ctl_plain = -1, uvm_plain = -1;
	size_t n = 0;

	if (devnull < 0) {
		devnull = open_or_die("/dev/null");
		gpu = open_gpu();
		ctl_plain = open_or_die(NV_CTL_PATH);
		uvm_plain = open_or_die(NV_UVM_PATH);
		if (pipe(pipe_fds)) {
			perror("nvhostile: pipe");
			exit(1);
		}
	}
	w[n++] = (struct wrong_fd){ "pipe", pipe_fds[0] };
	w[n++] = (struct wrong_fd){ "devnull", devnull };
	w[n++] = (struct wrong_fd){ "nvidia0-fd", gpu };
	if (want_uvm)
		w[n++] = (struct wrong_fd){ "nvidiactl-fd", ctl_plain };
	else
		w[n++] = (struct wrong_fd){ "uvm-fd", uvm_plain };
	w[n++] = (struct wrong_fd){ "minus-1", -1 };
	w[n++] = (struct wrong_fd){ "closed-fd", 1000 };
	w[n++] = (struct wrong_fd){ "huge-fd", 0x7fffffff };
	return n;
}

/* ---- nvidia.ko escapes --------------------------------------------------- */

enum node { ANY, CTL, GPU };

struct escape {
	const char *name;
	unsigned nr;
	size_t size;		/* 0: unknown to nv_abi.h, no size cases */
	size_t alt_size;	/* a second accepted size (RM_ALLOC) */
	size_t elem;		/* array escapes: any multiple of elem */
	enum node node;
	int mock;		/* implemented by nvmock */
};

static const struct escape escapes[] = {
	{ "RM_ALLOC_MEMORY", NVA_ESC_RM_ALLOC_MEMORY, 56, 0, 0, GPU, 0 },
	{ "RM_ALLOC_OBJECT", NVA_ESC_RM_ALLOC_OBJECT, 0, 0, 0, CTL, 0 },
	{ "RM_FREE", NVA_ESC_RM_FREE, 16, 0, 0, CTL, 1 },
	{ "RM_CONTROL", NVA_ESC_RM_CONTROL, 32, 0, 0, CTL, 1 },
	{ "RM_ALLOC", NVA_ESC_RM_ALLOC, 48, 32, 0, CTL, 1 },
	{ "RM_DUP_OBJECT", NVA_ESC_RM_DUP_OBJECT, 28, 0, 0, CTL, 1 },
	{ "RM_SHARE", NVA_ESC_RM_SHARE, 24, 0, 0, CTL, 0 },
	{ "RM_VID_HEAP_CONTROL", NVA_ESC_RM_VID_HEAP_CONTROL, 184, 0, 0, CTL, 1 },
	{ "RM_MAP_MEMORY", NVA_ESC_RM_MAP_MEMORY, 56, 0, 0, ANY, 0 },
	{ "RM_UNMAP_MEMORY", NVA_ESC_RM_UNMAP_MEMORY, 32, 0, 0, ANY, 0 },
	{ "CARD_INFO", NVA_ESC_CARD_INFO, 72, 0, 72, CTL, 1 },
	{ "REGISTER_FD", NVA_ESC_REGISTER_FD, 4, 0, 0, ANY, 1 },
	{ "ALLOC_OS_EVENT", NVA_ESC_ALLOC_OS_EVENT, 16, 0, 0, ANY, 1 },
	{ "FREE_OS_EVENT", NVA_ESC_FREE_OS_EVENT, 16, 0, 0, ANY, 1 },
	{ "STATUS_CODE", NVA_ESC_STATUS_CODE, 0, 0, 0, ANY, 0 },
	{ "CHECK_VERSION_STR", NVA_ESC_CHECK_VERSION_STR, 72, 0, 0, CTL, 1 },
	{ "IOCTL_XFER_CMD", NVA_ESC_IOCTL_XFER_CMD, 16, 0, 0, ANY, 1 },
	{ "ATTACH_GPUS_TO_FD", NVA_ESC_ATTACH_GPUS_TO_FD, 4, 0, 4, CTL, 1 },
};
#define N_ESCAPES (sizeof(escapes) / sizeof(escapes[0]))

static int esc_fd(const struct escape *e, int ctl, int gpu)
{
	return e->node == GPU ? gpu : ctl;
}

static int size_accepted(const struct escape *e, size_t s)
{
	if (e->elem)
		return s && s % e->elem == 0;
	return s == e->size || (e->alt_size && s == e->alt_size);
}

/* Wrong _IOC_SIZE on the right node: -EINVAL before anything is read. */
static void test_sizes(void)
{
	int ctl = open_or_die(NV_CTL_PATH), gpu = open_gpu();
	size_t i, j;
	char name[96];

	for (i = 0; i < N_ESCAPES; i++) {
		const struct escape *e = &escapes[i];
		size_t sizes[] = { 0, 1, e->size - 1, e->size + 1,
				   e->alt_size ? e->alt_size - 1 : 2,
				   e->alt_size ? e->alt_size + 1 : 3,
				   NVA_ABSOLUTE_MAX_IOCTL_SIZE - 1 };

		if (!e->size)
			continue;
		for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
			size_t s = sizes[j];

			if (size_accepted(e, s) || (j > 0 && s == sizes[j - 1]))
				continue;
			snprintf(name, sizeof(name), "size %s _IOC_SIZE=%zu",
				 e->name, s);
			memset(zbuf, 0, BUF_SIZE);
			expect_errno(name, raw(esc_fd(e, ctl, gpu),
					       NV_IOWR(e->nr, s), zbuf), EINVAL);
		}
	}
	close(gpu);
	close(ctl);
}

/* A valid size but an unreadable argument: -EFAULT from the copy-in. */
static void test_bad_arg_pointers(void)
{
	int ctl = open_or_die(NV_CTL_PATH), gpu = open_gpu();
	const struct { const char *name; uint64_t p; } ptrs[] = {
		{ "NULL", 0 },
		{ "unmapped", (uintptr_t)unmapped },
		{ "kernel", KERNEL_PTR },
		{ "noncanonical", NONCANON_PTR },
	};
	size_t i, j;
	char name[96];

	for (i = 0; i < N_ESCAPES; i++) {
		const struct escape *e = &escapes[i];

		if (!e->size)
			continue;
		for (j = 0; j < sizeof(ptrs) / sizeof(ptrs[0]); j++) {
			int got = raw(esc_fd(e, ctl, gpu), NV_IOWR(e->nr, e->size),
				      (void *)(uintptr_t)ptrs[j].p);

			snprintf(name, sizeof(name), "argptr %s %s", e->name,
				 ptrs[j].name);
			if (e->mock)
				expect_errno(name, got, EFAULT);
			else
				expect_errno2(name, got, EFAULT, EINVAL);
		}
		/* The struct's last byte lies in a PROT_NONE page. */
		snprintf(name, sizeof(name), "argptr %s straddles guard page",
			 e->name);
		memset(guarded, 0, 4096);
		{
			int got = raw(esc_fd(e, ctl, gpu), NV_IOWR(e->nr, e->size),
				      guarded + 4096 - e->size + 1);

			if (e->mock)
				expect_errno(name, got, EFAULT);
			else
				expect_errno2(name, got, EFAULT, EINVAL);
		}
	}
	close(gpu);
	close(ctl);
}

/* Control-only escapes on /dev/nvidiaN, GPU-only ones on nvidiactl. */
static void test_wrong_node(void)
{
	int ctl = open_or_die(NV_CTL_PATH), gpu = open_gpu();
	size_t i;
	char name[96];

	for (i = 0; i < N_ESCAPES; i++) {
		const struct escape *e = &escapes[i];
		int fd;

		if (e->node == ANY || !e->size)
			continue;
		fd = e->node == CTL ? gpu : ctl;
		snprintf(name, sizeof(name), "node %s on %s", e->name,
			 e->node == CTL ? "nvidia0" : "nvidiactl");
		memset(zbuf, 0, BUF_SIZE);
		expect_errno(name, raw(fd, NV_IOWR(e->nr, e->size), zbuf), EINVAL);
	}
	close(gpu);
	close(ctl);
}

static void test_unknown_escapes(void)
{
	static const unsigned nrs[] = { 0, 1, 0x26, 0x2C, 0x30, 0x36, 0x49,
					0x60, 0x7f, 199, 202, 205, 208,
					219, 220, 254, 255 };
	int ctl = open_or_die(NV_CTL_PATH), gpu = open_gpu();
	size_t i;
	char name[96];

	for (i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++) {
		memset(zbuf, 0, BUF_SIZE);
		snprintf(name, sizeof(name), "unknown escape 0x%x on nvidiactl",
			 nrs[i]);
		expect_errno(name, raw(ctl, NV_IOWR(nrs[i], 32), zbuf), EINVAL);
		snprintf(name, sizeof(name), "unknown escape 0x%x on nvidia0",
			 nrs[i]);
		expect_errno(name, raw(gpu, NV_IOWR(nrs[i], 32), zbuf), EINVAL);
	}
	/* UVM commands are plain integers: on nvidia.ko they decode as junk. */
	memset(zbuf, 0, BUF_SIZE);
	expect_errno("UVM_INITIALIZE on nvidiactl", raw(ctl, NVA_UVM_INITIALIZE, zbuf),
		     EINVAL);
	expect_errno("UVM_REGISTER_GPU on nvidiactl",
		     raw(ctl, NVA_UVM_REGISTER_GPU, zbuf), EINVAL);
	expect_errno("UVM_MM_INITIALIZE on nvidia0",
		     raw(gpu, NVA_UVM_MM_INITIALIZE, zbuf), EINVAL);
	close(gpu);
	close(ctl);
}

/* Random bytes in every escape, on fresh fds; only survival is asserted. */
static void test_garbage(void)
{
	size_t i;
	unsigned long k;
	char name[96];

	for (i = 0; i < N_ESCAPES; i++) {
		const struct escape *e = &escapes[i];
		int ctl = open_or_die(NV_CTL_PATH), gpu = open_gpu();
		unsigned long ok = 0, errs = 0;
		size_t size = e->size ? e->size : 32;

		for (k = 0; k < iterations; k++) {
			fill_garbage(gbuf, size);
			if (raw(k & 1 ? gpu : ctl, NV_IOWR(e->nr, size), gbuf))
				errs++;
			else
				ok++;
		}
		close(gpu);
		close(ctl);
		snprintf(name, sizeof(name), "garbage %s x%lu", e->name,
			 iterations);
		result(1, name, "%lu returned 0, %lu errno", ok, errs);
	}

	/* Random escape numbers and sizes. */
	{
		int ctl = open_or_die(NV_CTL_PATH), gpu = open_gpu();
		unsigned long ok = 0, errs = 0;

		for (k = 0; k < iterations * 10; k++) {
			unsigned nr = (unsigned)(rnd() & 0xff);
			size_t size = (size_t)(rnd() % NVA_ABSOLUTE_MAX_IOCTL_SIZE);

			fill_garbage(gbuf, size);
			if (raw(k & 1 ? gpu : ctl, NV_IOWR(nr, size), gbuf))
				errs++;
			else
				ok++;
		}
		close(gpu);
		close(ctl);
		snprintf(name, sizeof(name), "garbage random escapes x%lu",
			 iterations * 10);
		result(1, name, "%lu returned 0, %lu errno", ok, errs);
	}
}

/*
 * Random bytes behind valid handles: RM_ALLOC of every class the mock knows
 * with random parameters, RM_CONTROL with random commands and parameters,
 * VID_HEAP_CONTROL with random functions.  On a client of its own, freed by
 * closing the fd.
 */
static void test_structured_garbage(void)
{
	static const uint32_t classes[] = {
		NVA_CLASS_ROOT_CLIENT, NVA_CLASS_DEVICE, NVA_CLASS_SUBDEVICE,
		NVA_CLASS_VASPACE, NVA_CLASS_MEMORY_SYSTEM,
		NVA_CLASS_MEMORY_LOCAL_USER, NVA_CLASS_MEMORY_VIRTUAL,
		NVA_CLASS_EVENT_OS_EVENT,
	};
	static const uint32_t cmds[] = {
		NVA_CTRL_GPU_GET_ID_INFO_V2, NVA_CTRL_FB_GET_INFO,
		NVA_CTRL_FB_GET_INFO_V2, 0x20801302, 0x00000201, 0xdeadbeef,
	};
	struct nvclient B;
	unsigned long k, errs = 0;
	char name[96];

	nvclient_defaults(&B);
	if (nvclient_init(&B, A.gpu_index)) {
		result(0, "structured garbage: init", "%s", B.errbuf);
		return;
	}
	for (k = 0; k < iterations; k++) {
		uint32_t parents[] = { B.h_client, B.h_device, B.h_subdevice,
				       (uint32_t)rnd() };
		uint32_t h = (uint32_t)rnd(), cls = classes[rnd() % 8];
		struct nvres r;

		fill_garbage(gbuf, 4096);
		B.use_nvos21 = (int)(k & 1);
		r = nv_rm_alloc(&B, B.h_client, parents[rnd() % 4], &h, cls,
				gbuf, (uint32_t)rnd());
		errs += !nvres_ok(r);

		fill_garbage(gbuf, 4096);
		r = nv_rm_control(&B, B.h_client,
				  k & 2 ? B.h_subdevice : B.h_client,
				  cmds[rnd() % 6], gbuf,
				  (uint32_t)(k & 4 ? rnd() % 2048 : 1028));
		errs += !nvres_ok(r);

		fill_garbage(gbuf, sizeof(struct nva_os32_vidheap));
		((struct nva_os32_vidheap *)gbuf)->h_root = B.h_client;
		((struct nva_os32_vidheap *)gbuf)->h_object_parent = B.h_device;
		((struct nva_os32_vidheap *)gbuf)->function = (uint32_t)(rnd() % 32);
		r = nv_ioctl_raw(B.ctl_fd, NVA_ESC_RM_VID_HEAP_CONTROL, gbuf,
				 sizeof(struct nva_os32_vidheap));
		errs += r.err != 0;
	}
	nvclient_close(&B);
	snprintf(name, sizeof(name), "structured garbage RM_ALLOC/CONTROL/VID_HEAP x%lu",
		 iterations);
	result(1, name, "%lu calls failed", errs);
}

/* ---- RM semantics documented in docs/nvidia-abi.md ----------------------- */

static void test_rm_semantics(void)
{
	struct nvclient *c = &A;
	struct nva_memory_alloc_params mp;
	struct nvres r;
	uint32_t h, h_mem;
	uint64_t actual;

	/* [6] unknown class */
	h = nv_new_handle();
	r = nv_rm_alloc(c, c->h_client, c->h_device, &h, 0xdead, NULL, 0);
	expect_status("RM_ALLOC unknown class 0xdead", r, NVA_ERR_INVALID_CLASS);

	/* [10.3] RM_FREE */
	r = nv_rm_free(c, 0xbadc0de, 0, 0xbadc0de);
	expect_status("RM_FREE unknown client", r, NVA_ERR_INVALID_OBJECT_HANDLE);
	r = nv_rm_free(c, c->h_client, c->h_device, 0xcafe1234);
	expect_status("RM_FREE unknown object in a valid client (compat mode)",
		      r, NVA_OK);

	/* A client made on another fd is not ours. */
	{
		struct nvclient B;

		nvclient_defaults(&B);
		B.ctl_fd = open_or_die(NV_CTL_PATH);
		B.h_client = 0;
		r = nv_rm_alloc(&B, 0, 0, &B.h_client, NVA_CLASS_ROOT_CLIENT,
				NULL, 0);
		expect_ok("RM_ALLOC root client on a second fd", r);
		r = nv_rm_free(c, B.h_client, 0, B.h_client);
		expect_status("RM_FREE of another fd's client", r,
			      NVA_ERR_INVALID_CLIENT);
		close(B.ctl_fd);
	}

	/* [10.2] device instance out of range, duplicate subdevice */
	{
		struct nva_device_alloc_params dp;
		struct nva_subdevice_alloc_params sp = { 0 };

		memset(&dp, 0, sizeof(dp));
		dp.device_id = NVA_MAX_DEVICE_INSTANCES;
		h = nv_new_handle();
		r = nv_rm_alloc(c, c->h_client, c->h_client, &h,
				NVA_CLASS_DEVICE, &dp, sizeof(dp));
		expect_status("RM_ALLOC device deviceId=32", r, NVA_ERR_INVALID_CLASS);
		dp.device_id = 0xffffffff;
		h = nv_new_handle();
		r = nv_rm_alloc(c, c->h_client, c->h_client, &h,
				NVA_CLASS_DEVICE, &dp, sizeof(dp));
		expect_status("RM_ALLOC device deviceId=0xffffffff", r,
			      NVA_ERR_INVALID_CLASS);
		h = nv_new_handle();
		r = nv_rm_alloc(c, c->h_client, c->h_device, &h,
				NVA_CLASS_SUBDEVICE, &sp, sizeof(sp));
		expect_status("RM_ALLOC second subdevice 0", r,
			      NVA_ERR_INSUFFICIENT_RESOURCES);
		sp.sub_device_id = 8;
		h = nv_new_handle();
		r = nv_rm_alloc(c, c->h_client, c->h_device, &h,
				NVA_CLASS_SUBDEVICE, &sp, sizeof(sp));
		expect_status("RM_ALLOC subdevice 8", r, NVA_ERR_INVALID_CLASS);
	}

	/*
	 * NVOS64's second embedded pointer, pRightsRequested: a bad one must
	 * not crash anything; what RM answers is not documented here.
	 */
	{
		const struct { const char *name; uint64_t p; } ptrs[] = {
			{ "unmapped", (uintptr_t)unmapped }, { "kernel", KERNEL_PTR },
			{ "noncanonical", NONCANON_PTR }, { "valid", (uintptr_t)zbuf },
		};
		size_t i;
		char name[96], d[96];

		for (i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++) {
			struct nva_os64_alloc a = {
				.h_root = c->h_client, .h_object_parent = c->h_device,
				.h_object_new = nv_new_handle(),
				.h_class = NVA_CLASS_MEMORY_LOCAL_USER,
				.p_alloc_parms = (uintptr_t)gbuf,
				.p_rights_requested = ptrs[i].p,
				.params_size = (uint32_t)c->lay.t.mem_params,
			};

			memset(gbuf, 0, 256);
			((struct nva_memory_alloc_params *)gbuf)->size = 1 << 16;
			memset(zbuf, 0, BUF_SIZE);
			r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_ALLOC, &a, sizeof(a));
			r.status = r.err ? 0 : a.status;
			if (nvres_ok(r))
				nv_rm_free(c, c->h_client, c->h_device, a.h_object_new);
			describe(r, d, sizeof(d));
			snprintf(name, sizeof(name),
				 "RM_ALLOC NVOS64 pRightsRequested %s (survives)",
				 ptrs[i].name);
			result(1, name, "%s", d);
		}
	}

	/* [10.11] size 0 */
	memset(&mp, 0, sizeof(mp));
	h = nv_new_handle();
	r = nv_rm_alloc(c, c->h_client, c->h_device, &h,
			NVA_CLASS_MEMORY_LOCAL_USER, &mp, (uint32_t)c->lay.t.mem_params);
	expect_status("RM_ALLOC vidmem size 0", r, NVA_ERR_INVALID_ARGUMENT);

	/* Embedded parameter pointers */
	{
		const struct { const char *name; uint64_t p; } ptrs[] = {
			{ "NULL", 0 }, { "unmapped", (uintptr_t)unmapped },
			{ "kernel", KERNEL_PTR },
			{ "straddling", (uintptr_t)guarded + 4096 - 16 },
		};
		size_t i;
		char name[96];

		for (i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++) {
			void *p = (void *)(uintptr_t)ptrs[i].p;
			h = nv_new_handle();
			snprintf(name, sizeof(name), "RM_ALLOC vidmem params %s",
				 ptrs[i].name);
			expect_fail(name, nv_rm_alloc(c, c->h_client, c->h_device,
						      &h, NVA_CLASS_MEMORY_LOCAL_USER,
						      p, (uint32_t)c->lay.t.mem_params));
			snprintf(name, sizeof(name), "RM_CONTROL FB_GET_INFO_V2 params %s",
				 ptrs[i].name);
			expect_fail(name, nv_rm_control(c, c->h_client,
							c->h_subdevice,
							NVA_CTRL_FB_GET_INFO_V2,
							p, (uint32_t)c->lay.t.fb_info_v2));
			snprintf(name, sizeof(name), "RM_CONTROL GET_ID_INFO_V2 params %s",
				 ptrs[i].name);
			expect_fail(name, nv_rm_control(c, c->h_client,
							c->h_client,
							NVA_CTRL_GPU_GET_ID_INFO_V2,
							p, 32));
			{
				struct nva_fb_get_info fi = {
					.fb_info_list_size = 3,
					.fb_info_list = ptrs[i].p,
				};

				snprintf(name, sizeof(name),
					 "RM_CONTROL FB_GET_INFO list pointer %s",
					 ptrs[i].name);
				expect_fail(name, nv_rm_control(c, c->h_client,
								c->h_subdevice,
								NVA_CTRL_FB_GET_INFO,
								&fi, sizeof(fi)));
			}
		}
		/* the old FB_GET_INFO with a huge list size */
		{
			struct nva_fb_get_info fi = {
				.fb_info_list_size = 0xffffffff,
				.fb_info_list = (uintptr_t)gbuf,
			};

			expect_fail("RM_CONTROL FB_GET_INFO list size 0xffffffff",
				    nv_rm_control(c, c->h_client, c->h_subdevice,
						  NVA_CTRL_FB_GET_INFO, &fi,
						  sizeof(fi)));
		}
	}

	/* [3] control params size must match */
	memset(zbuf, 0, BUF_SIZE);
	r = nv_rm_control(c, c->h_client, c->h_subdevice, NVA_CTRL_FB_GET_INFO_V2,
			  zbuf, (uint32_t)c->lay.t.fb_info_v2 - 4);
	expect_status("RM_CONTROL FB_GET_INFO_V2 paramsSize-4", r,
		      NVA_ERR_INVALID_PARAM_STRUCT);
	r = nv_rm_control(c, c->h_client, c->h_subdevice, NVA_CTRL_FB_GET_INFO_V2,
			  zbuf, 0xffffffff);
	expect_fail("RM_CONTROL FB_GET_INFO_V2 paramsSize 0xffffffff", r);
	((struct nva_fb_get_info_v2 *)zbuf)->fb_info_list_size = 0xffffffff;
	r = nv_rm_control(c, c->h_client, c->h_subdevice, NVA_CTRL_FB_GET_INFO_V2,
			  zbuf, (uint32_t)c->lay.t.fb_info_v2);
	expect_fail("RM_CONTROL FB_GET_INFO_V2 listSize 0xffffffff", r);
	memset(zbuf, 0, BUF_SIZE);
	r = nv_rm_control(c, 0xbadc0de, c->h_subdevice, NVA_CTRL_FB_GET_INFO_V2,
			  zbuf, (uint32_t)c->lay.t.fb_info_v2);
	expect_fail("RM_CONTROL unknown client", r);
	r = nv_rm_control(c, c->h_client, 0xbadc0de, NVA_CTRL_FB_GET_INFO_V2,
			  zbuf, (uint32_t)c->lay.t.fb_info_v2);
	expect_fail("RM_CONTROL unknown object", r);
	r = nv_rm_control(c, c->h_client, c->h_subdevice, 0x2080ffff, zbuf, 16);
	expect_fail("RM_CONTROL unknown command", r);
	r = nv_rm_control(c, c->h_client, c->h_device, NVA_CTRL_FB_GET_INFO_V2,
			  zbuf, (uint32_t)c->lay.t.fb_info_v2);
	expect_fail("RM_CONTROL FB_GET_INFO_V2 on the device, not the subdevice", r);

	/* [10.1] DUP_OBJECT */
	r = nv_alloc_vidmem(c, 1 << 20, &h_mem, &actual);
	expect_ok("RM_ALLOC vidmem 1 MiB (for DUP cases)", r);
	{
		struct nva_os55_dup d = {
			.h_client = 0xbadc0de, .h_parent = c->h_device,
			.h_object = nv_new_handle(), .h_client_src = c->h_client,
			.h_object_src = h_mem,
		};

		r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_DUP_OBJECT, &d, sizeof(d));
		r.status = r.err ? 0 : d.status;
		expect_status("RM_DUP_OBJECT unknown client", r,
			      NVA_ERR_INVALID_OBJECT_HANDLE);
		d.h_client = c->h_client;
		d.h_object_src = 0xcafe1234;
		r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_DUP_OBJECT, &d, sizeof(d));
		r.status = r.err ? 0 : d.status;
		expect_status("RM_DUP_OBJECT unknown source object", r,
			      NVA_ERR_OBJECT_NOT_FOUND);
		d.h_object_src = h_mem;
		d.h_parent = 0xcafe1234;
		r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_DUP_OBJECT, &d, sizeof(d));
		r.status = r.err ? 0 : d.status;
		expect_status("RM_DUP_OBJECT unknown destination parent", r,
			      NVA_ERR_OBJECT_NOT_FOUND);
		d.h_parent = c->h_device;
		d.h_object = c->h_subdevice;
		r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_DUP_OBJECT, &d, sizeof(d));
		r.status = r.err ? 0 : d.status;
		expect_status("RM_DUP_OBJECT destination handle in use", r,
			      NVA_ERR_INSERT_DUPLICATE_NAME);
		d.h_client_src = 0xbadc0de;
		d.h_object = nv_new_handle();
		r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_DUP_OBJECT, &d, sizeof(d));
		r.status = r.err ? 0 : d.status;
		expect_fail("RM_DUP_OBJECT unknown source client", r);
	}
	expect_ok("RM_FREE vidmem 1 MiB",
		  nv_rm_free(c, c->h_client, c->h_device, h_mem));

	/* [10.10] VID_HEAP_CONTROL */
	{
		struct nva_os32_vidheap v;

		memset(&v, 0, sizeof(v));
		v.h_root = c->h_client;
		v.h_object_parent = c->h_device;
		v.function = NVA_OS32_FUNC_FREE;
		v.data.free.h_memory = 0xcafe1234;
		r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_VID_HEAP_CONTROL, &v, sizeof(v));
		r.status = r.err ? 0 : v.status;
		expect_status("VID_HEAP FREE without MEMORY_HANDLE_PROVIDED", r,
			      NVA_ERR_INVALID_ARGUMENT);
		memset(&v, 0, sizeof(v));
		v.h_root = c->h_client;
		v.h_object_parent = c->h_device;
		v.function = 0x7777;
		r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_VID_HEAP_CONTROL, &v, sizeof(v));
		r.status = r.err ? 0 : v.status;
		expect_fail("VID_HEAP unknown function", r);
		memset(&v, 0, sizeof(v));
		v.h_root = 0xbadc0de;
		v.h_object_parent = c->h_device;
		v.function = NVA_OS32_FUNC_INFO;
		r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_VID_HEAP_CONTROL, &v, sizeof(v));
		r.status = r.err ? 0 : v.status;
		expect_fail("VID_HEAP INFO unknown client", r);
		memset(&v, 0, sizeof(v));
		v.h_root = c->h_client;
		v.h_object_parent = c->h_device;
		v.function = NVA_OS32_FUNC_ALLOC_SIZE;
		v.data.alloc_size.size = 0;
		r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_VID_HEAP_CONTROL, &v, sizeof(v));
		r.status = r.err ? 0 : v.status;
		expect_fail("VID_HEAP ALLOC_SIZE size 0", r);
		v.data.alloc_size.size = ~0ull;
		v.status = 0;
		r = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_VID_HEAP_CONTROL, &v, sizeof(v));
		r.status = r.err ? 0 : v.status;
		expect_fail("VID_HEAP ALLOC_SIZE size 2^64-1", r);
	}

	/* Absurd sizes through RM_ALLOC */
	{
		const uint64_t sizes[] = { ~0ull, ~0ull - 0xffff, 1ull << 63 };
		size_t i;
		char name[64];

		for (i = 0; i < 3; i++) {
			memset(&mp, 0, sizeof(mp));
			mp.size = sizes[i];
			h = nv_new_handle();
			r = nv_rm_alloc(c, c->h_client, c->h_device, &h,
					NVA_CLASS_MEMORY_LOCAL_USER, &mp,
					(uint32_t)c->lay.t.mem_params);
			snprintf(name, sizeof(name), "RM_ALLOC vidmem size 0x%llx",
				 (unsigned long long)sizes[i]);
			expect_fail(name, r);
		}
	}

	/* Parents that are not what the class wants */
	h = nv_new_handle();
	memset(&mp, 0, sizeof(mp));
	mp.size = 1 << 16;
	r = nv_rm_alloc(c, c->h_client, c->h_client, &h,
			NVA_CLASS_MEMORY_LOCAL_USER, &mp, (uint32_t)c->lay.t.mem_params);
	if (nvres_ok(r))
		nv_rm_free(c, c->h_client, c->h_client, h);
	expect_fail("RM_ALLOC vidmem with the client as parent", r);
	h = nv_new_handle();
	r = nv_rm_alloc(c, c->h_client, 0xcafe1234, &h,
			NVA_CLASS_MEMORY_LOCAL_USER, &mp, (uint32_t)c->lay.t.mem_params);
	expect_fail("RM_ALLOC vidmem with an unknown parent", r);
	h = nv_new_handle();
	r = nv_rm_alloc(c, 0xbadc0de, c->h_device, &h,
			NVA_CLASS_MEMORY_LOCAL_USER, &mp, (uint32_t)c->lay.t.mem_params);
	expect_fail("RM_ALLOC vidmem in an unknown client", r);
	h = c->h_subdevice;
	r = nv_rm_alloc(c, c->h_client, c->h_device, &h,
			NVA_CLASS_MEMORY_LOCAL_USER, &mp, (uint32_t)c->lay.t.mem_params);
	if (nvres_ok(r))
		nv_rm_free(c, c->h_client, c->h_device, h);
	expect_fail("RM_ALLOC vidmem with a handle in use", r);
}

/* [10.5] [10.4] [10.6] */
static void test_small_escapes(void)
{
	int ctl = open_or_die(NV_CTL_PATH), ctl2 = open_or_die(NV_CTL_PATH);
	int gpu = open_gpu();
	struct nva_rm_api_version v;
	struct wrong_fd w[8];
	size_t i, n;
	char name[96];
	int got;

	memset(&v, 0, sizeof(v));
	v.cmd = NVA_RM_API_VERSION_CMD_STRICT;
	snprintf(v.version_string, sizeof(v.version_string), "1.2.3");
	got = raw(ctl, NV_IOWR(NVA_ESC_CHECK_VERSION_STR, sizeof(v)), &v);
	expect_errno("CHECK_VERSION_STR strict mismatch", got, EINVAL);
	v.version_string[sizeof(v.version_string) - 1] = 0;
	result(strcmp(v.version_string, A.lay.version) == 0,
	       "CHECK_VERSION_STR mismatch copies the driver version back",
	       "got \"%s\", want \"%s\"", v.version_string, A.lay.version);
	memset(&v, 0, sizeof(v));
	v.cmd = 0x99;
	expect_fail("CHECK_VERSION_STR unknown cmd 0x99",
		    (struct nvres){ raw(ctl, NV_IOWR(NVA_ESC_CHECK_VERSION_STR,
						     sizeof(v)), &v), 0 });
	memset(&v, 'x', sizeof(v));
	v.cmd = NVA_RM_API_VERSION_CMD_STRICT;
	expect_errno("CHECK_VERSION_STR unterminated string",
		     raw(ctl, NV_IOWR(NVA_ESC_CHECK_VERSION_STR, sizeof(v)), &v),
		     EINVAL);

	if (gpu_count > 1) {
		memset(zbuf, 0, BUF_SIZE);
		expect_errno("CARD_INFO with fewer entries than GPUs",
			     raw(ctl, NV_IOWR(NVA_ESC_CARD_INFO,
					      sizeof(struct nva_card_info)), zbuf),
			     EINVAL);
	}
	memset(zbuf, 0, BUF_SIZE);
	expect_errno("CARD_INFO with 227 entries",
		     raw(ctl, NV_IOWR(NVA_ESC_CARD_INFO,
				      227 * sizeof(struct nva_card_info)), zbuf), 0);

	/* REGISTER_FD with every kind of wrong fd [10.6] */
	n = wrong_fds(w, 0);
	for (i = 0; i < n; i++) {
		struct nva_register_fd r = { .ctl_fd = w[i].fd };

		snprintf(name, sizeof(name), "REGISTER_FD ctl_fd=%s", w[i].name);
		expect_errno(name, raw(gpu, NV_IOWR(NVA_ESC_REGISTER_FD,
						    sizeof(r)), &r), EINVAL);
	}
	{
		struct nva_register_fd r = { .ctl_fd = ctl };

		expect_errno("REGISTER_FD ctl_fd=itself",
			     raw(ctl, NV_IOWR(NVA_ESC_REGISTER_FD, sizeof(r)), &r),
			     EINVAL);
		expect_errno("REGISTER_FD nvidia0 -> nvidiactl",
			     raw(gpu, NV_IOWR(NVA_ESC_REGISTER_FD, sizeof(r)), &r), 0);
		expect_errno("REGISTER_FD of an fd already linked",
			     raw(gpu, NV_IOWR(NVA_ESC_REGISTER_FD, sizeof(r)), &r),
			     EINVAL);
		r.ctl_fd = ctl2;
		expect_errno("REGISTER_FD of an fd already linked, to another ctl",
			     raw(gpu, NV_IOWR(NVA_ESC_REGISTER_FD, sizeof(r)), &r),
			     EINVAL);
	}
	{
		/* a uvm fd registering itself with nvidia.ko's escape */
		int uvm = open_or_die(NV_UVM_PATH);
		struct nva_register_fd r = { .ctl_fd = ctl2 };

		expect_errno2("REGISTER_FD issued on a uvm fd",
			      raw(uvm, NV_IOWR(NVA_ESC_REGISTER_FD, sizeof(r)), &r),
			      EINVAL, ENOTTY);
		close(uvm);
	}

	/* ATTACH_GPUS_TO_FD [10.6] */
	{
		uint32_t ids[4] = { 0xdeadbeef, 0, 0, 0 };

		expect_errno("ATTACH_GPUS_TO_FD unknown gpu_id",
			     raw(ctl2, NV_IOWR(NVA_ESC_ATTACH_GPUS_TO_FD, 4), ids),
			     EINVAL);
		ids[0] = A.gpu_id;
		ids[1] = 0xdeadbeef;
		expect_errno("ATTACH_GPUS_TO_FD good then unknown gpu_id",
			     raw(ctl2, NV_IOWR(NVA_ESC_ATTACH_GPUS_TO_FD, 8), ids),
			     EINVAL);
		ids[1] = 0;
		expect_errno("ATTACH_GPUS_TO_FD good id and a zero entry",
			     raw(ctl2, NV_IOWR(NVA_ESC_ATTACH_GPUS_TO_FD, 8), ids), 0);
		expect_fail("ATTACH_GPUS_TO_FD a second time on the fd",
			    (struct nvres){ raw(ctl2, NV_IOWR(NVA_ESC_ATTACH_GPUS_TO_FD,
							     8), ids), 0 });
	}

	/* ALLOC_OS_EVENT [10.6] */
	{
		struct nva_os_event e = {
			.h_client = A.h_client, .h_device = A.h_device,
			.fd = (uint32_t)A.ctl_fd,
		};
		struct nvres r;

		r = nv_ioctl_raw(A.ctl_fd, NVA_ESC_ALLOC_OS_EVENT, &e, sizeof(e));
		r.status = r.err ? 0 : e.status;
		expect_ok("ALLOC_OS_EVENT", r);
		e.status = 0;
		r = nv_ioctl_raw(A.ctl_fd, NVA_ESC_ALLOC_OS_EVENT, &e, sizeof(e));
		r.status = r.err ? 0 : e.status;
		expect_status("ALLOC_OS_EVENT duplicate (hClient, fd)", r,
			      NVA_ERR_INSUFFICIENT_RESOURCES);
		e.status = 0;
		r = nv_ioctl_raw(A.ctl_fd, NVA_ESC_FREE_OS_EVENT, &e, sizeof(e));
		r.status = r.err ? 0 : e.status;
		expect_ok("FREE_OS_EVENT", r);
		e.status = 0;
		r = nv_ioctl_raw(A.ctl_fd, NVA_ESC_FREE_OS_EVENT, &e, sizeof(e));
		r.status = r.err ? 0 : e.status;
		expect_fail("FREE_OS_EVENT twice", r);
	}

	/* A read-only argument: the copy-out fails after the work is done. */
	{
		struct nva_rm_api_version *ro = (void *)(readonly + 1024);

		expect_errno("CHECK_VERSION_STR into a read-only buffer",
			     raw(ctl, NV_IOWR(NVA_ESC_CHECK_VERSION_STR,
					      sizeof(*ro)), ro), EFAULT);
		expect_errno("RM_ALLOC client from a read-only buffer",
			     raw(ctl, NV_IOWR(NVA_ESC_RM_ALLOC,
					      sizeof(struct nva_os64_alloc)),
				 readonly), EFAULT);
	}
	close(gpu);
	close(ctl2);
	close(ctl);
}

/* NV_ESC_IOCTL_XFER_CMD [2] */
static void test_xfer(void)
{
	struct nva_fb_get_info_v2 *fb = (void *)gbuf;
	struct nva_os54_control ctl;
	struct nva_ioctl_xfer x;
	int got;

	memset(fb, 0, sizeof(*fb));
	fb->fb_info_list_size = 1;
	fb->fb_info_list[0].index = NVA_FB_INFO_HEAP_SIZE;
	memset(&ctl, 0, sizeof(ctl));
	ctl.h_client = A.h_client;
	ctl.h_object = A.h_subdevice;
	ctl.cmd = NVA_CTRL_FB_GET_INFO_V2;
	ctl.params = (uintptr_t)fb;
	ctl.params_size = (uint32_t)A.lay.t.fb_info_v2;

	x = (struct nva_ioctl_xfer){ NVA_ESC_RM_CONTROL, sizeof(ctl),
				     (uintptr_t)&ctl };
	got = raw(A.ctl_fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD, sizeof(x)), &x);
	result(got == 0 && ctl.status == 0 && fb->fb_info_list[0].data != 0,
	       "XFER_CMD wrapping RM_CONTROL works", "errno %d status 0x%x data %u",
	       got, ctl.status, fb->fb_info_list[0].data);

	x.ptr = 0;
	expect_errno("XFER_CMD inner pointer NULL",
		     raw(A.ctl_fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD, sizeof(x)), &x),
		     EFAULT);
	x.ptr = KERNEL_PTR;
	expect_errno("XFER_CMD inner pointer kernel",
		     raw(A.ctl_fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD, sizeof(x)), &x),
		     EFAULT);
	x.ptr = (uintptr_t)unmapped;
	expect_errno("XFER_CMD inner pointer unmapped",
		     raw(A.ctl_fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD, sizeof(x)), &x),
		     EFAULT);
	x.ptr = (uintptr_t)guarded + 4096 - sizeof(ctl) + 1;
	expect_errno("XFER_CMD inner buffer straddles a guard page",
		     raw(A.ctl_fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD, sizeof(x)), &x),
		     EFAULT);
	x.ptr = (uintptr_t)zbuf;
	memset(zbuf, 0, BUF_SIZE);
	x.size = NVA_ABSOLUTE_MAX_IOCTL_SIZE + 1;
	expect_errno("XFER_CMD inner size 16385",
		     raw(A.ctl_fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD, sizeof(x)), &x),
		     EINVAL);
	x.size = 0xffffffff;
	expect_errno("XFER_CMD inner size 0xffffffff",
		     raw(A.ctl_fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD, sizeof(x)), &x),
		     EINVAL);
	x.size = 0;
	expect_errno("XFER_CMD inner size 0",
		     raw(A.ctl_fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD, sizeof(x)), &x),
		     EINVAL);
	x.size = sizeof(ctl) - 1;
	expect_errno("XFER_CMD inner RM_CONTROL size 31",
		     raw(A.ctl_fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD, sizeof(x)), &x),
		     EINVAL);
	x.cmd = NVA_ESC_IOCTL_XFER_CMD;
	x.size = sizeof(x);
	{
		struct nva_ioctl_xfer inner = { NVA_ESC_IOCTL_XFER_CMD, sizeof(x),
						(uintptr_t)&x };

		x.ptr = (uintptr_t)&inner;
		expect_errno("XFER_CMD nested in XFER_CMD",
			     raw(A.ctl_fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD,
						   sizeof(x)), &x), EINVAL);
	}
	x = (struct nva_ioctl_xfer){ 0x99, 64, (uintptr_t)zbuf };
	expect_errno("XFER_CMD unknown inner escape 0x99",
		     raw(A.ctl_fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD, sizeof(x)), &x),
		     EINVAL);
	{
		int gpu = open_gpu();

		x = (struct nva_ioctl_xfer){ NVA_ESC_RM_CONTROL, sizeof(ctl),
					     (uintptr_t)&ctl };
		expect_errno("XFER_CMD wrapping a ctl-only escape on nvidia0",
			     raw(gpu, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD, sizeof(x)), &x),
			     EINVAL);
		close(gpu);
	}
	/* garbage XFER headers */
	{
		unsigned long k, errs = 0;
		char name[64];

		for (k = 0; k < iterations; k++) {
			x.cmd = (uint32_t)(rnd() & 0xff);
			x.size = (uint32_t)(k & 1 ? rnd() : rnd() % 4096);
			x.ptr = k & 2 ? (uintptr_t)gbuf : rnd();
			fill_garbage(gbuf, 4096);
			errs += raw(A.ctl_fd, NV_IOWR(NVA_ESC_IOCTL_XFER_CMD,
						      sizeof(x)), &x) != 0;
		}
		snprintf(name, sizeof(name), "garbage XFER_CMD x%lu", iterations);
		result(1, name, "%lu errno", errs);
	}
}

/* ---- nvidia-uvm ------------------------------------------------------------ */

struct uvm_cmd {
	const char *name;
	unsigned long cmd;
	size_t size, status_off;
};

static size_t uvm_cmds(struct uvm_cmd *u)
{
	size_t n = 0;
	int old_free = A.lay.t.uvm_free == sizeof(struct nva_uvm_free_old);
	int old_map = A.lay.t.uvm_map_ext != sizeof(struct nva_uvm_map_external_allocation);

	u[n++] = (struct uvm_cmd){ "INITIALIZE", NVA_UVM_INITIALIZE, 16, 8 };
	u[n++] = (struct uvm_cmd){ "MM_INITIALIZE", NVA_UVM_MM_INITIALIZE, 8, 4 };
	u[n++] = (struct uvm_cmd){ "REGISTER_GPU", NVA_UVM_REGISTER_GPU, 40, 36 };
	u[n++] = (struct uvm_cmd){ "REGISTER_GPU_VASPACE",
				   NVA_UVM_REGISTER_GPU_VASPACE, 32, 28 };
	u[n++] = (struct uvm_cmd){ "CREATE_RANGE_GROUP",
				   NVA_UVM_CREATE_RANGE_GROUP, 16, 8 };
	u[n++] = (struct uvm_cmd){ "PAGEABLE_MEM_ACCESS",
				   NVA_UVM_PAGEABLE_MEM_ACCESS, 8, 4 };
	u[n++] = (struct uvm_cmd){ "CREATE_EXTERNAL_RANGE",
				   NVA_UVM_CREATE_EXTERNAL_RANGE, 24, 16 };
	u[n++] = (struct uvm_cmd){ "MAP_EXTERNAL_ALLOCATION",
				   NVA_UVM_MAP_EXTERNAL_ALLOCATION, A.lay.t.uvm_map_ext,
				   old_map ? NVA_UVM_MAP_EXT_OLD_OFF_STATUS :
					     offsetof(struct nva_uvm_map_external_allocation,
						      rm_status) };
	u[n++] = (struct uvm_cmd){ "FREE", NVA_UVM_FREE, A.lay.t.uvm_free,
				   old_free ? 16 : 8 };
	u[n++] = (struct uvm_cmd){ "ALLOC_SEMAPHORE_POOL",
				   NVA_UVM_ALLOC_SEMAPHORE_POOL, A.lay.t.uvm_sem_pool,
				   old_map ? NVA_UVM_SEM_POOL_OLD_OFF_STATUS :
					     offsetof(struct nva_uvm_alloc_semaphore_pool,
						      rm_status) };
	return n;
}

/* UVM commands nv_abi.h names without a parameter struct. */
static const struct { const char *name; unsigned long cmd; } uvm_other[] = {
	{ "DEINITIALIZE", NVA_UVM_DEINITIALIZE },
	{ "RESERVE_VA", NVA_UVM_RESERVE_VA },
	{ "DESTROY_RANGE_GROUP", NVA_UVM_DESTROY_RANGE_GROUP },
	{ "REGISTER_CHANNEL", NVA_UVM_REGISTER_CHANNEL },
	{ "ENABLE_PEER_ACCESS", NVA_UVM_ENABLE_PEER_ACCESS },
	{ "SET_PREFERRED_LOCATION", NVA_UVM_SET_PREFERRED_LOCATION },
	{ "DISABLE_READ_DUPLICATION", NVA_UVM_DISABLE_READ_DUPLICATION },
	{ "MIGRATE", NVA_UVM_MIGRATE },
	{ "VALIDATE_VA_RANGE", NVA_UVM_VALIDATE_VA_RANGE },
	{ "ALLOC_DEVICE_P2P", NVA_UVM_ALLOC_DEVICE_P2P },
};
#define N_UVM_OTHER (sizeof(uvm_other) / sizeof(uvm_other[0]))

static struct nvres uvm_status_call(int fd, const struct uvm_cmd *u, void *arg)
{
	return nv_uvm_call(fd, u->cmd, arg, u->status_off);
}

static void test_uvm_before_init(void)
{
	struct uvm_cmd u[16];
	size_t i, n = uvm_cmds(u);
	char name[96];
	int fd = open_or_die(NV_UVM_PATH);

	/* [7] every command but INITIALIZE/MM_INITIALIZE: ILLEGAL_ACTION */
	for (i = 2; i < n; i++) {
		memset(zbuf, 0, BUF_SIZE);
		snprintf(name, sizeof(name), "UVM %s before INITIALIZE", u[i].name);
		expect_status(name, uvm_status_call(fd, &u[i], zbuf),
			      NVA_ERR_ILLEGAL_ACTION);
	}
	for (i = 0; i < N_UVM_OTHER; i++) {
		int got;

		memset(zbuf, 0, BUF_SIZE);
		got = raw(fd, uvm_other[i].cmd, zbuf);
		snprintf(name, sizeof(name), "UVM %s before INITIALIZE (survives)",
			 uvm_other[i].name);
		result(1, name, "%s", got ? strerrorname_np(got) : "returned 0");
	}
	{
		void *p = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE, MAP_SHARED,
			       fd, 0);

		result(p == MAP_FAILED, "UVM mmap before INITIALIZE",
		       p == MAP_FAILED ? "%s" : "mapped at %p", p == MAP_FAILED ?
		       strerrorname_np(errno) : (const char *)p);
		if (p != MAP_FAILED)
			munmap(p, 2 << 20);
	}
	close(fd);

	/* MM_INITIALIZE with fds that are not an initialised UVM fd */
	{
		struct wrong_fd w[8];
		size_t nw = wrong_fds(w, 1);
		int plain = open_or_die(NV_UVM_PATH), inited = open_uvm_inited();

		w[nw++] = (struct wrong_fd){ "uninitialised-uvm-fd", plain };
		for (i = 0; i < nw; i++) {
			struct nva_uvm_mm_initialize mm = { .uvm_fd = w[i].fd };

			fd = open_or_die(NV_UVM_PATH);
			snprintf(name, sizeof(name), "UVM MM_INITIALIZE uvmFd=%s",
				 w[i].name);
			expect_fail(name, nv_uvm_call(fd, NVA_UVM_MM_INITIALIZE, &mm, 4));
			close(fd);
		}
		{
			struct nva_uvm_mm_initialize mm = { .uvm_fd = inited };

			fd = open_or_die(NV_UVM_PATH);
			expect_ok("UVM MM_INITIALIZE uvmFd=initialised-uvm-fd",
				  nv_uvm_call(fd, NVA_UVM_MM_INITIALIZE, &mm, 4));
			close(fd);
			mm.uvm_fd = inited;
			expect_fail("UVM MM_INITIALIZE on the initialised fd itself",
				    nv_uvm_call(inited, NVA_UVM_MM_INITIALIZE, &mm, 4));
		}
		close(inited);
		close(plain);
	}
}

static void test_uvm_after_init(void)
{
	struct uvm_cmd u[16];
	size_t i, j, n = uvm_cmds(u);
	char name[128];
	int fd = open_uvm_inited();
	struct wrong_fd w[8];
	size_t nw;
	struct nvres r;
	static const unsigned long unknown[] = {
		0, 1000, 2046, 0x30000003, 0x12345678, 0xffffffff,
		0xC030462B, 0xC020462A,
	};
	const struct { const char *name; uint64_t p; } ptrs[] = {
		{ "NULL", 0 }, { "unmapped", (uintptr_t)unmapped },
		{ "kernel", KERNEL_PTR },
	};

	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		memset(zbuf, 0, BUF_SIZE);
		snprintf(name, sizeof(name), "UVM unknown command 0x%lx", unknown[i]);
		expect_errno2(name, raw(fd, unknown[i], zbuf), EINVAL, ENOSYS);
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < sizeof(ptrs) / sizeof(ptrs[0]); j++) {
			snprintf(name, sizeof(name), "UVM %s argptr %s", u[i].name,
				 ptrs[j].name);
			expect_errno(name, raw(fd, u[i].cmd,
					       (void *)(uintptr_t)ptrs[j].p), EFAULT);
		}
	}

	/*
	 * The commands without a struct here: a bad pointer must not be
	 * taken (-EFAULT where the driver routes them, -EINVAL/-ENOSYS where
	 * it does not); DEINITIALIZE reads nothing.
	 */
	for (i = 1; i < N_UVM_OTHER; i++) {
		for (j = 0; j < sizeof(ptrs) / sizeof(ptrs[0]); j++) {
			int got = raw(fd, uvm_other[i].cmd,
				      (void *)(uintptr_t)ptrs[j].p);

			snprintf(name, sizeof(name), "UVM %s argptr %s",
				 uvm_other[i].name, ptrs[j].name);
			result(got == EFAULT || got == EINVAL || got == ENOSYS, name,
			       "%s", got ? strerrorname_np(got) : "success");
		}
	}

	/* REGISTER_GPU [10.7] */
	nw = wrong_fds(w, 0);
	for (i = 0; i < nw; i++) {
		struct nva_uvm_register_gpu rg;

		memset(&rg, 0, sizeof(rg));
		memcpy(rg.gpu_uuid, A.uuid, NVA_UUID_LEN);
		rg.rm_ctrl_fd = w[i].fd;
		rg.h_client = A.h_client;
		snprintf(name, sizeof(name), "UVM REGISTER_GPU rmCtrlFd=%s", w[i].name);
		expect_fail(name, nv_uvm_call(fd, NVA_UVM_REGISTER_GPU, &rg, 36));
	}
	{
		struct nva_uvm_register_gpu rg;

		memset(&rg, 0, sizeof(rg));
		memset(rg.gpu_uuid, 0xee, NVA_UUID_LEN);
		rg.rm_ctrl_fd = A.ctl_fd;
		rg.h_client = A.h_client;
		expect_fail("UVM REGISTER_GPU unknown UUID",
			    nv_uvm_call(fd, NVA_UVM_REGISTER_GPU, &rg, 36));
		memcpy(rg.gpu_uuid, A.uuid, NVA_UUID_LEN);
		rg.h_client = 0xbadc0de;
		rg.rm_status = 0;
		expect_fail("UVM REGISTER_GPU unknown hClient",
			    nv_uvm_call(fd, NVA_UVM_REGISTER_GPU, &rg, 36));
		rg.h_client = A.h_client;
		rg.rm_status = 0;
		expect_ok("UVM REGISTER_GPU", nv_uvm_call(fd, NVA_UVM_REGISTER_GPU,
							  &rg, 36));
	}

	/* REGISTER_GPU_VASPACE */
	for (i = 0; i < nw; i++) {
		struct nva_uvm_register_gpu_vaspace rv;

		memset(&rv, 0, sizeof(rv));
		memcpy(rv.gpu_uuid, A.uuid, NVA_UUID_LEN);
		rv.rm_ctrl_fd = w[i].fd;
		rv.h_client = A.h_client;
		rv.h_va_space = A.h_vaspace;
		snprintf(name, sizeof(name), "UVM REGISTER_GPU_VASPACE rmCtrlFd=%s",
			 w[i].name);
		expect_fail(name, nv_uvm_call(fd, NVA_UVM_REGISTER_GPU_VASPACE, &rv, 28));
	}
	{
		struct nva_uvm_register_gpu_vaspace rv;

		memset(&rv, 0, sizeof(rv));
		memcpy(rv.gpu_uuid, A.uuid, NVA_UUID_LEN);
		rv.rm_ctrl_fd = A.ctl_fd;
		rv.h_client = A.h_client;
		rv.h_va_space = A.h_device;
		expect_fail("UVM REGISTER_GPU_VASPACE hVaSpace is a device",
			    nv_uvm_call(fd, NVA_UVM_REGISTER_GPU_VASPACE, &rv, 28));
		rv.h_va_space = 0xcafe1234;
		rv.rm_status = 0;
		expect_fail("UVM REGISTER_GPU_VASPACE unknown hVaSpace",
			    nv_uvm_call(fd, NVA_UVM_REGISTER_GPU_VASPACE, &rv, 28));
	}

	/* CREATE_EXTERNAL_RANGE with bad addresses */
	{
		const struct { const char *name; uint64_t base, len; } bad[] = {
			{ "base 0 length 0", 0, 0 },
			{ "length 0", 0x7f0000000000ull, 0 },
			{ "unaligned base", 0x7f0000001001ull, 0x10000 },
			{ "unaligned length", 0x7f0000000000ull, 0x1001 },
			{ "kernel base", KERNEL_PTR, 0x200000 },
			{ "wrapping", 0x7ffffffff000ull, ~0ull - 0xfff },
			{ "length 2^63", 0x10000, 1ull << 63 },
		};

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			struct nva_uvm_create_external_range er = {
				.base = bad[i].base, .length = bad[i].len,
			};

			snprintf(name, sizeof(name), "UVM CREATE_EXTERNAL_RANGE %s",
				 bad[i].name);
			expect_fail(name, nv_uvm_call(fd, NVA_UVM_CREATE_EXTERNAL_RANGE,
						      &er, 16));
		}
	}

	/* Overlaps, frees of nothing, maps of nothing */
	{
		uint64_t base = 0x7e0000000000ull;
		struct nva_uvm_create_external_range er = { .base = base,
							    .length = 4 << 20 };
		struct nva_uvm_free_old fo = { .base = base + (64 << 20) };

		expect_ok("UVM CREATE_EXTERNAL_RANGE 4 MiB",
			  nv_uvm_call(fd, NVA_UVM_CREATE_EXTERNAL_RANGE, &er, 16));
		er.rm_status = 0;
		er.base = base + (2 << 20);
		expect_fail("UVM CREATE_EXTERNAL_RANGE overlapping",
			    nv_uvm_call(fd, NVA_UVM_CREATE_EXTERNAL_RANGE, &er, 16));
		{
			void *p = mmap((void *)(uintptr_t)base, 2 << 20,
				       PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_FIXED_NOREPLACE, fd,
				       (off_t)base);

			result(p == MAP_FAILED, "UVM mmap over an external range",
			       p == MAP_FAILED ? "%s" : "mapped at %p",
			       p == MAP_FAILED ? strerrorname_np(errno) :
						 (const char *)p);
			if (p != MAP_FAILED)
				munmap(p, 2 << 20);
		}
		if (A.lay.t.uvm_free == sizeof(fo))
			fo.length = 1 << 20;
		expect_fail("UVM FREE of an address with no range",
			    nv_uvm_call(fd, NVA_UVM_FREE, &fo,
					A.lay.t.uvm_free == sizeof(fo) ? 16 : 8));

		/* MAP_EXTERNAL_ALLOCATION variants need memory and a range */
		{
			uint32_t h_mem;
			uint64_t actual;
			struct nva_uvm_map_external_allocation *m = calloc(1, sizeof(*m));
			char *raw_m = (char *)m;
			int old = A.lay.t.uvm_map_ext != sizeof(*m);
			size_t o_count = old ? NVA_UVM_MAP_EXT_OLD_OFF_COUNT :
				offsetof(typeof(*m), gpu_attributes_count);
			size_t o_fd = old ? NVA_UVM_MAP_EXT_OLD_OFF_FD :
				offsetof(typeof(*m), rm_ctrl_fd);
			size_t o_client = old ? NVA_UVM_MAP_EXT_OLD_OFF_CLIENT :
				offsetof(typeof(*m), h_client);
			size_t o_mem = old ? NVA_UVM_MAP_EXT_OLD_OFF_MEMORY :
				offsetof(typeof(*m), h_memory);
			size_t o_status = old ? NVA_UVM_MAP_EXT_OLD_OFF_STATUS :
				offsetof(typeof(*m), rm_status);
			const struct {
				const char *name;
				uint64_t base, len, count;
				int fd;
				uint32_t client, mem;
				int mangle_uuid;
			} cases[] = {
				{ "no range there", base + (64 << 20), 2 << 20, 1,
				  A.ctl_fd, A.h_client, 0, 0 },
				{ "gpuAttributesCount 0", base, 2 << 20, 0,
				  A.ctl_fd, A.h_client, 0, 0 },
				{ "gpuAttributesCount 257", base, 2 << 20, 257,
				  A.ctl_fd, A.h_client, 0, 0 },
				{ "gpuAttributesCount 2^64-1", base, 2 << 20, ~0ull,
				  A.ctl_fd, A.h_client, 0, 0 },
				{ "rmCtrlFd pipe", base, 2 << 20, 1,
				  pipe_fds[0], A.h_client, 0, 0 },
				{ "rmCtrlFd uvm fd", base, 2 << 20, 1, fd,
				  A.h_client, 0, 0 },
				{ "rmCtrlFd -1", base, 2 << 20, 1, -1,
				  A.h_client, 0, 0 },
				{ "unknown hClient", base, 2 << 20, 1, A.ctl_fd,
				  0xbadc0de, 0, 0 },
				{ "unknown hMemory", base, 2 << 20, 1, A.ctl_fd,
				  A.h_client, 0xcafe1234, 0 },
				{ "hMemory is the device", base, 2 << 20, 1,
				  A.ctl_fd, A.h_client, A.h_device, 0 },
				{ "unknown GPU UUID", base, 2 << 20, 1, A.ctl_fd,
				  A.h_client, 0, 1 },
				{ "length beyond the memory", base, 4 << 20, 1,
				  A.ctl_fd, A.h_client, 0, 0 },
			};

			if (!m)
				exit(1);
			r = nv_alloc_vidmem(&A, 2 << 20, &h_mem, &actual);
			expect_ok("RM_ALLOC vidmem 2 MiB (for MAP_EXTERNAL cases)", r);
			for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
				memset(m, 0, sizeof(*m));
				m->base = cases[i].base;
				m->length = cases[i].len;
				memcpy(m->per_gpu_attributes[0].gpu_uuid, A.uuid,
				       NVA_UUID_LEN);
				if (cases[i].mangle_uuid)
					memset(m->per_gpu_attributes[0].gpu_uuid,
					       0xee, NVA_UUID_LEN);
				*(uint64_t *)(raw_m + o_count) = cases[i].count;
				*(int32_t *)(raw_m + o_fd) = cases[i].fd;
				*(uint32_t *)(raw_m + o_client) = cases[i].client;
				*(uint32_t *)(raw_m + o_mem) =
					cases[i].mem ? cases[i].mem : h_mem;
				snprintf(name, sizeof(name),
					 "UVM MAP_EXTERNAL_ALLOCATION %s",
					 cases[i].name);
				expect_fail(name, nv_uvm_call(fd,
							      NVA_UVM_MAP_EXTERNAL_ALLOCATION,
							      m, o_status));
			}
			free(m);
			nv_rm_free(&A, A.h_client, A.h_device, h_mem);
		}
	}

	/* ALLOC_SEMAPHORE_POOL with bad lengths and counts */
	{
		struct nva_uvm_alloc_semaphore_pool *sp = calloc(1, sizeof(*sp));
		int old = A.lay.t.uvm_sem_pool != sizeof(*sp);
		size_t o_count = old ? NVA_UVM_SEM_POOL_OLD_OFF_COUNT :
			offsetof(typeof(*sp), gpu_attributes_count);
		size_t o_status = old ? NVA_UVM_SEM_POOL_OLD_OFF_STATUS :
			offsetof(typeof(*sp), rm_status);
		const struct { const char *name; uint64_t base, len, count; } bad[] = {
			{ "length 0", 0x7d0000000000ull, 0, 1 },
			{ "length 2^63", 0x7d0000000000ull, 1ull << 63, 1 },
			{ "base 0", 0, 2 << 20, 1 },
			{ "kernel base", KERNEL_PTR, 2 << 20, 1 },
			{ "gpuAttributesCount 2^64-1", 0x7d0000000000ull, 2 << 20,
			  ~0ull },
		};

		if (!sp)
			exit(1);
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			memset(sp, 0, sizeof(*sp));
			sp->base = bad[i].base;
			sp->length = bad[i].len;
			memcpy(sp->per_gpu_attributes[0].gpu_uuid, A.uuid,
			       NVA_UUID_LEN);
			*(uint64_t *)((char *)sp + o_count) = bad[i].count;
			snprintf(name, sizeof(name), "UVM ALLOC_SEMAPHORE_POOL %s",
				 bad[i].name);
			expect_fail(name, nv_uvm_call(fd, NVA_UVM_ALLOC_SEMAPHORE_POOL,
						      sp, o_status));
		}
		free(sp);
	}

	/* mmap of the UVM fd: offset must equal the address [7] */
	{
		char *addr = mmap(NULL, 4 << 20, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		void *p;

		addr = (char *)(((uintptr_t)addr + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
		p = mmap(addr, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			 fd, (off_t)(uintptr_t)addr + (1 << 20));
		expect_errno("UVM mmap with offset != address",
			     p == MAP_FAILED ? errno : 0, EINVAL);
		p = mmap(addr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
			 fd, (off_t)(uintptr_t)addr);
		result(p == MAP_FAILED, "UVM mmap MAP_PRIVATE",
		       p == MAP_FAILED ? "%s" : "mapped (private managed memory)",
		       p == MAP_FAILED ? strerrorname_np(errno) : "");
		if (p != MAP_FAILED)
			munmap(p, 1 << 20);
	}

	/* UVM garbage: random bodies for every command, random commands */
	{
		unsigned long k, errs = 0;

		for (k = 0; k < iterations * (unsigned long)n; k++) {
			const struct uvm_cmd *c = &u[k % n];

			fill_garbage(gbuf, c->size);
			errs += raw(fd, c->cmd, gbuf) != 0;
		}
		for (k = 0; k < iterations * (unsigned long)N_UVM_OTHER; k++) {
			fill_garbage(gbuf, 4096);
			errs += raw(fd, uvm_other[k % N_UVM_OTHER].cmd, gbuf) != 0;
		}
		for (k = 0; k < iterations; k++) {
			fill_garbage(gbuf, 4096);
			errs += raw(fd, k & 1 ? rnd() % 128 : rnd(), gbuf) != 0;
		}
		snprintf(name, sizeof(name), "garbage UVM commands x%lu",
			 iterations * (n + N_UVM_OTHER + 1));
		result(1, name, "%lu errno", errs);
	}
	close(fd);
}

static void setup(void)
{
	struct nva_card_info *ci;
	int ctl, i;

	zbuf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gbuf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	guarded = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	readonly = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (zbuf == MAP_FAILED || gbuf == MAP_FAILED || unmapped == MAP_FAILED ||
	    guarded == MAP_FAILED || readonly == MAP_FAILED) {
		perror("nvhostile: mmap");
		exit(1);
	}
	munmap(unmapped, 4096);
	mprotect(guarded + 4096, 4096, PROT_NONE);
	/* an RM_ALLOC of a client at 0, a version QUERY at 1024 */
	((struct nva_os64_alloc *)readonly)->h_class = NVA_CLASS_ROOT_CLIENT;
	((struct nva_rm_api_version *)(readonly + 1024))->cmd =
		NVA_RM_API_VERSION_CMD_QUERY;
	mprotect(readonly, 4096, PROT_READ);

	ctl = open_or_die(NV_CTL_PATH);
	ci = (struct nva_card_info *)zbuf;
	memset(zbuf, 0, BUF_SIZE);
	if (raw(ctl, NV_IOWR(NVA_ESC_CARD_INFO, 64 * sizeof(*ci)), ci) == 0)
		for (i = 0; i < 64; i++)
			gpu_count += ci[i].valid != 0;
	close(ctl);
}

int main(int argc, char **argv)
{
	unsigned gpu = 0;
	int opt;

	while ((opt = getopt(argc, argv, "g:n:s:qh")) != -1) {
		switch (opt) {
		case 'g':
			gpu = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			iterations = strtoul(optarg, NULL, 10);
			break;
		case 's':
			rng_state = strtoull(optarg, NULL, 0) | 1;
			break;
		case 'q':
			quiet = 1;
			break;
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"usage: nvhostile [-g GPU] [-n ITERATIONS] [-s SEED] [-q]\n"
				"Feeds hostile input to every escape of /dev/nvidiactl,\n"
				"/dev/nvidiaN and every command of /dev/nvidia-uvm; prints\n"
				"one ok/FAIL line per case (-q: failures only) and\n"
				"'N passed, N failed'; exit 1 on any failure.\n");
			return opt == 'h' ? 0 : 1;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	setup();
	nvclient_defaults(&A);
	if (nvclient_init(&A, gpu)) {
		fprintf(stderr, "nvhostile: init gpu %u: %s\n", gpu, A.errbuf);
		return 1;
	}
	printf("nvhostile: gpu %u minor %u version %s, %d GPUs, %lu iterations\n",
	       gpu, A.minor, A.lay.version, gpu_count, iterations);

	test_sizes();
	test_bad_arg_pointers();
	test_wrong_node();
	test_unknown_escapes();
	test_small_escapes();
	test_xfer();
	test_rm_semantics();
	test_uvm_before_init();
	test_uvm_after_init();
	test_garbage();
	test_structured_garbage();

	nvclient_close(&A);
	printf("%lu passed, %lu failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
