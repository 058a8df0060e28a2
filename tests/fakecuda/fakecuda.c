// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fakecuda: drives the NVIDIA kernel driver (or nvmock.ko, or either under
 * cgpu.ko) with the ioctl and mmap sequences libcuda uses, so tests can
 * allocate, free, overcommit and leak GPU memory without a GPU or CUDA.
 *
 * Exit status: 0 when every command succeeded, 2 when a command got a
 * CUDA-style error from the driver, 1 on usage or system errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nvclient.h"

enum rec_kind { REC_ALLOC, REC_DUP, REC_LEGACY };

/* One memory handle this process holds. */
struct rec {
	uint32_t handle;
	enum rec_kind kind;
	int live;
	uint64_t size;
	void *va;		/* reserved CPU/GPU VA, mapped through UVM */
	size_t va_len;
};

static struct {
	struct nvclient c;
	int inited;
	int quiet;
	unsigned gpu;
	int use_nvos21;
	int auto_handles;
	const char *bench_prefix;
	char prefix[32];
	int cuda_err;		/* some command got a CUDA error */
	int sys_err;		/* usage or system error */
	pthread_mutex_t lock;
	struct rec *recs;
	size_t nrecs, cap;
} G = {
	.bench_prefix = "nvmock",
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static const char usage_text[] =
"usage: fakecuda [options] [command [args]]...\n"
"\n"
"Issues the ioctl/mmap sequences libcuda issues against /dev/nvidiactl,\n"
"/dev/nvidiaN and /dev/nvidia-uvm.  The first command that needs the GPU\n"
"runs the cuInit-like sequence (CHECK_VERSION_STR, CARD_INFO, REGISTER_FD,\n"
"ATTACH_GPUS_TO_FD, client/device/subdevice/VA space, UVM init).  With no\n"
"command, fakecuda only initialises.  Layouts follow the driver version in\n"
"/proc/driver/nvidia/version.\n"
"\n"
"options:\n"
"  -g N                GPU index in CARD_INFO order (default 0)\n"
"  -q                  quieter: no init line, no per-allocation lines\n"
"  --alloc-form F      RM_ALLOC parameter struct: nvos64 (default) or nvos21\n"
"  --auto-handles      let the driver pick memory handles (hObjectNew = 0)\n"
"  --bench-prefix P    prefix of bench figure names (default nvmock)\n"
"  --xfer              send RM escapes wrapped in NV_ESC_IOCTL_XFER_CMD\n"
"  -h, --help          this text\n"
"\n"
"commands (SIZE: bytes, or with K/M/G/T suffix, binary):\n"
"  init                initialise only\n"
"  alloc SIZE          cuMemAlloc: RM_ALLOC 0x40 + VA reserve + UVM map\n"
"  fill                allocate 64 MiB chunks, halving on OOM down to 64 KiB;\n"
"                      prints the total allocated\n"
"  free HANDLE|last|all   UVM_FREE + RM_FREE\n"
"  rm-free HANDLE|last RM_FREE only: the UVM mapping (and VA) stays\n"
"  uvm-free HANDLE|last   UVM_FREE of the allocation's range only\n"
"  free-device         RM_FREE of the device (frees its memory as children)\n"
"  free-client         RM_FREE of the root client\n"
"  dup HANDLE|last     RM_DUP_OBJECT of a memory handle\n"
"  legacy-alloc SIZE   VID_HEAP_CONTROL ALLOC_SIZE (vidmem)\n"
"  legacy-free HANDLE|last   VID_HEAP_CONTROL FREE\n"
"  legacy-info         VID_HEAP_CONTROL INFO\n"
"  meminfo             FB_GET_INFO_V2: total= free= in bytes (cuMemGetInfo)\n"
"  gpu-ids             GPU_GET_ATTACHED_IDS: the attached gpu_ids\n"
"  managed SIZE        cudaMallocManaged: mmap of the UVM fd, then touch\n"
"  sempool SIZE        UVM ALLOC_SEMAPHORE_POOL + its mmap\n"
"  hold [SECONDS]      print 'holding pid=N', then sleep (default forever)\n"
"  give PATH           listen on the Unix socket PATH and hand the first peer\n"
"                      the control and GPU fds with the client's handles\n"
"                      (SCM_RIGHTS), as a process that shares its GPU would\n"
"  take PATH           connect to PATH (waiting up to 30 s for it) and use the\n"
"                      fds and client handed over instead of an own init\n"
"  rm-alloc SIZE       RM_ALLOC 0x40 only: no VA, no UVM mapping (works on a\n"
"                      client taken over)\n"
"  children N CMD...   run the remaining commands in N forked children,\n"
"                      each with its own init; the parent waits\n"
"  threads N SIZE COUNT   N threads each allocating COUNT x SIZE\n"
"  bench ITER          median ns of alloc+free, FB_GET_INFO_V2 (control),\n"
"                      GPU_GET_ATTACHED_IDS (passthru), getppid\n"
"\n"
"exit: 0 all OK, 2 a command got a CUDA error, 1 usage or system error\n";

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("%s%s\n", G.prefix, line);
}

static void sys_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sys_error(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "%sfakecuda: %s\n", G.prefix, line);
	G.sys_err = 1;
}

static int exit_code(void)
{
	return G.sys_err ? 1 : G.cuda_err ? 2 : 0;
}

/* "alloc 1G: CUDA_ERROR_OUT_OF_MEMORY (status 0x51 NV_ERR_NO_MEMORY)" */
static void report_cuda(const char *what, struct nvres r)
{
	char d[96];

	nvres_describe(r, d, sizeof(d));
	out("%s: %s (%s)", what, cuda_error_name(r), d);
	__atomic_store_n(&G.cuda_err, 1, __ATOMIC_RELAXED);
}

static void ensure_init(void)
{
	struct nvclient *c = &G.c;

	if (G.inited)
		return;
	nvclient_defaults(c);
	c->use_nvos21 = G.use_nvos21;
	c->auto_handles = G.auto_handles;
	if (nvclient_init(c, G.gpu)) {
		sys_error("init gpu %u: %s", G.gpu, c->errbuf);
		fflush(stdout);
		exit(1);
	}
	G.inited = 1;
	if (!G.quiet)
		out("init: OK gpu=%u minor=%u gpu_id=0x%x uuid=%s version=%s client=0x%x device=0x%x subdevice=0x%x vaspace=0x%x",
		    G.gpu, c->minor, c->gpu_id, c->uuid_str, c->lay.version,
		    c->h_client, c->h_device, c->h_subdevice, c->h_vaspace);
}

static struct rec *rec_add(const struct rec *r)
{
	struct rec *slot;

	pthread_mutex_lock(&G.lock);
	if (G.nrecs == G.cap) {
		size_t cap = G.cap ? G.cap * 2 : 64;
		struct rec *n = realloc(G.recs, cap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&G.lock);
			return NULL;
		}
		G.recs = n;
		G.cap = cap;
	}
	slot = &G.recs[G.nrecs++];
	*slot = *r;
	pthread_mutex_unlock(&G.lock);
	return slot;
}

/* "last" is the newest live handle of the given kinds (mask of 1 << kind). */
static struct rec *rec_find(const char *arg, unsigned kinds)
{
	size_t i;

	if (strcmp(arg, "last") == 0) {
		for (i = G.nrecs; i-- > 0;)
			if (G.recs[i].live && (kinds & (1u << G.recs[i].kind)))
				return &G.recs[i];
		return NULL;
	}
	{
		char *end;
		unsigned long h = strtoul(arg, &end, 0);

		if (*end || end == arg)
			return NULL;
		for (i = G.nrecs; i-- > 0;)
			if (G.recs[i].live && G.recs[i].handle == h)
				return &G.recs[i];
	}
	return NULL;
}

static int parse_handle(const char *arg, uint32_t *h)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 0);

	if (*end || end == arg || v > 0xffffffffUL)
		return -1;
	*h = (uint32_t)v;
	return 0;
}

/* An anonymous PROT_NONE reservation aligned to align. */
static void *reserve_va(size_t len, size_t align)
{
	char *p = mmap(NULL, len + align, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	if ((uintptr_t)p + len + align > a + len)
		munmap((void *)(a + len), (uintptr_t)p + len + align - (a + len));
	return (void *)a;
}

/* cuMemAlloc: RM_ALLOC of vidmem, a VA, and the UVM external mapping. */
static struct nvres do_alloc(uint64_t size, struct rec *out_rec)
{
	struct nvclient *c = &G.c;
	struct rec r = { .kind = REC_ALLOC, .live = 1 };
	struct nvres res;
	uint64_t actual = 0;
	size_t align;

	res = nv_alloc_vidmem(c, size, &r.handle, &actual);
	if (!nvres_ok(res))
		return res;
	r.size = actual;
	align = actual >= NVA_PAGE_HUGE ? NVA_PAGE_HUGE : NVA_PAGE_BIG;
	r.va_len = actual ? actual : NVA_PAGE_BIG;
	r.va = reserve_va(r.va_len, align);
	if (!r.va) {
		res.err = errno ? errno : ENOMEM;
		nv_rm_free(c, c->h_client, c->h_device, r.handle);
		return res;
	}
	res = nv_uvm_map_external(c, (uintptr_t)r.va, r.va_len, r.handle);
	if (!nvres_ok(res)) {
		munmap(r.va, r.va_len);
		nv_rm_free(c, c->h_client, c->h_device, r.handle);
		return res;
	}
	if (!rec_add(&r)) {
		res.err = ENOMEM;
		return res;
	}
	if (out_rec)
		*out_rec = r;
	return res;
}

static struct nvres do_free(struct rec *r)
{
	struct nvclient *c = &G.c;
	struct nvres uvm = { 0, 0 }, rm;

	if (r->va) {
		uvm = nv_uvm_free_va(c, (uintptr_t)r->va, r->va_len);
		munmap(r->va, r->va_len);
		r->va = NULL;
	}
	rm = nv_rm_free(c, c->h_client, c->h_device, r->handle);
	if (nvres_ok(rm))
		r->live = 0;
	return nvres_ok(rm) ? uvm : rm;
}

/* Unmaps every UVM range, as a context teardown would before the RM frees. */
static void unmap_all(void)
{
	size_t i;

	for (i = 0; i < G.nrecs; i++) {
		struct rec *r = &G.recs[i];

		if (r->live && r->va) {
			nv_uvm_free_va(&G.c, (uintptr_t)r->va, r->va_len);
			munmap(r->va, r->va_len);
			r->va = NULL;
		}
	}
}

static size_t forget_all(void)
{
	size_t i, n = 0;

	for (i = 0; i < G.nrecs; i++) {
		if (G.recs[i].live) {
			G.recs[i].live = 0;
			n++;
		}
	}
	return n;
}

/* ---- commands --------------------------------------------------------- */

static void cmd_alloc(const char *arg, uint64_t size)
{
	struct rec r;
	struct nvres res;
	char what[96];

	ensure_init();
	snprintf(what, sizeof(what), "alloc %s", arg);
	res = do_alloc(size, &r);
	if (nvres_ok(res))
		out("%s: OK handle=0x%x size=%llu va=0x%llx", what, r.handle,
		    (unsigned long long)r.size,
		    (unsigned long long)(uintptr_t)r.va);
	else
		report_cuda(what, res);
}

static void cmd_fill(void)
{
	uint64_t chunk = 64ull << 20, total = 0;
	unsigned long n = 0;
	struct nvres res = { 0, 0 };
	struct rec r;

	ensure_init();
	while (chunk >= NVA_PAGE_BIG) {
		res = do_alloc(chunk, &r);
		if (nvres_ok(res)) {
			total += r.size;
			n++;
			continue;
		}
		if (res.err || (res.status != NVA_ERR_NO_MEMORY &&
				res.status != NVA_ERR_INSUFFICIENT_RESOURCES))
			break;
		chunk /= 2;
	}
	if (chunk >= NVA_PAGE_BIG) {
		char what[128];

		snprintf(what, sizeof(what), "fill (after %lu allocations, %llu bytes, at chunk %llu)",
			 n, (unsigned long long)total,
			 (unsigned long long)chunk);
		report_cuda(what, res);
		return;
	}
	out("fill: OK total=%llu allocs=%lu", (unsigned long long)total, n);
}

static void cmd_free(const char *arg)
{
	struct rec *r;
	struct nvres res;
	char what[64];

	ensure_init();
	if (strcmp(arg, "all") == 0) {
		size_t i, freed = 0, failed = 0;

		for (i = G.nrecs; i-- > 0;) {
			if (!G.recs[i].live)
				continue;
			res = do_free(&G.recs[i]);
			if (nvres_ok(res)) {
				freed++;
			} else {
				snprintf(what, sizeof(what), "free 0x%x",
					 G.recs[i].handle);
				report_cuda(what, res);
				failed++;
			}
		}
		if (failed)
			out("free all: %zu freed, %zu failed", freed, failed);
		else
			out("free all: OK freed=%zu", freed);
		return;
	}
	r = rec_find(arg, ~0u);
	if (!r) {
		/* A handle we do not know: free it anyway, a test may want that. */
		uint32_t h;

		if (strcmp(arg, "last") == 0 || parse_handle(arg, &h)) {
			sys_error("free %s: no such live handle", arg);
			return;
		}
		res = nv_rm_free(&G.c, G.c.h_client, G.c.h_device, h);
		snprintf(what, sizeof(what), "free 0x%x", h);
	} else {
		snprintf(what, sizeof(what), "free 0x%x", r->handle);
		res = do_free(r);
	}
	if (nvres_ok(res))
		out("%s: OK", what);
	else
		report_cuda(what, res);
}

/* The newest record (any kind) whose UVM mapping is still there. */
static struct rec *rec_find_mapped(const char *arg)
{
	uint32_t h = 0;
	size_t i;

	if (strcmp(arg, "last") && parse_handle(arg, &h))
		return NULL;
	for (i = G.nrecs; i-- > 0;)
		if (G.recs[i].va && (!h || G.recs[i].handle == h))
			return &G.recs[i];
	return NULL;
}

/* RM_FREE of an allocation, leaving its UVM mapping (UVM keeps the memory). */
static void cmd_rm_free(const char *arg)
{
	struct rec *r;
	struct nvres res;
	char what[64];

	ensure_init();
	r = rec_find(arg, 1u << REC_ALLOC | 1u << REC_DUP);
	if (!r) {
		sys_error("rm-free %s: no such live handle", arg);
		return;
	}
	snprintf(what, sizeof(what), "rm-free 0x%x", r->handle);
	res = nv_rm_free(&G.c, G.c.h_client, G.c.h_device, r->handle);
	if (!nvres_ok(res)) {
		report_cuda(what, res);
		return;
	}
	r->live = 0;
	out("%s: OK%s", what, r->va ? " (still mapped)" : "");
}

/* UVM_FREE of an allocation's range; its RM handle stays. */
static void cmd_uvm_free(const char *arg)
{
	struct rec *r;
	struct nvres res;
	char what[64];

	ensure_init();
	r = rec_find_mapped(arg);
	if (!r) {
		sys_error("uvm-free %s: no such mapped allocation", arg);
		return;
	}
	snprintf(what, sizeof(what), "uvm-free 0x%x", r->handle);
	res = nv_uvm_free_va(&G.c, (uintptr_t)r->va, r->va_len);
	if (!nvres_ok(res)) {
		report_cuda(what, res);
		return;
	}
	munmap(r->va, r->va_len);
	r->va = NULL;
	out("%s: OK", what);
}

static void cmd_gpu_ids(void)
{
	uint32_t ids[NVA_MAX_ATTACHED_GPUS];
	char list[NVA_MAX_ATTACHED_GPUS * 11 + 1] = "";
	struct nvres res;
	unsigned n, i;
	size_t len = 0;

	ensure_init();
	res = nv_attached_ids(&G.c, ids, NVA_MAX_ATTACHED_GPUS, &n);
	if (!nvres_ok(res)) {
		report_cuda("gpu-ids", res);
		return;
	}
	for (i = 0; i < n && i < NVA_MAX_ATTACHED_GPUS; i++)
		len += snprintf(list + len, sizeof(list) - len, "%s0x%x",
				i ? "," : "", ids[i]);
	out("gpu-ids: OK n=%u ids=%s", n, n ? list : "-");
}

static void cmd_free_parent(int client)
{
	struct nvclient *c = &G.c;
	uint32_t h = client ? c->h_client : c->h_device;
	const char *what = client ? "free-client" : "free-device";
	struct nvres res;

	ensure_init();
	unmap_all();
	res = nv_rm_free(c, c->h_client, client ? 0 : c->h_client, h);
	if (nvres_ok(res))
		out("%s: OK handle=0x%x freed=%zu", what, h, forget_all());
	else
		report_cuda(what, res);
}

static void cmd_dup(const char *arg)
{
	struct nvclient *c = &G.c;
	struct nva_os55_dup d;
	struct rec *src, n = { .kind = REC_DUP, .live = 1 };
	uint32_t h_src;
	struct nvres res;
	char what[64];

	ensure_init();
	src = rec_find(arg, ~0u);
	if (src) {
		h_src = src->handle;
		n.size = src->size;
	} else if (strcmp(arg, "last") == 0 || parse_handle(arg, &h_src)) {
		sys_error("dup %s: no such live handle", arg);
		return;
	}
	memset(&d, 0, sizeof(d));
	d.h_client = c->h_client;
	d.h_parent = c->h_device;
	d.h_object = c->auto_handles ? 0 : nv_new_handle();
	d.h_client_src = c->h_client;
	d.h_object_src = h_src;
	res = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_DUP_OBJECT, &d, sizeof(d));
	if (!res.err)
		res.status = d.status;
	snprintf(what, sizeof(what), "dup 0x%x", h_src);
	if (!nvres_ok(res)) {
		report_cuda(what, res);
		return;
	}
	n.handle = d.h_object;
	rec_add(&n);
	out("%s: OK handle=0x%x", what, n.handle);
}

static struct nvres vidheap(struct nva_os32_vidheap *p, uint32_t function)
{
	struct nvclient *c = &G.c;
	struct nvres res;

	p->h_root = c->h_client;
	p->h_object_parent = c->h_device;
	p->function = function;
	res = nv_ioctl_raw(c->ctl_fd, NVA_ESC_RM_VID_HEAP_CONTROL, p, sizeof(*p));
	if (!res.err)
		res.status = p->status;
	return res;
}

static void cmd_legacy_alloc(const char *arg, uint64_t size)
{
	struct nva_os32_vidheap p;
	struct rec r = { .kind = REC_LEGACY, .live = 1 };
	struct nvres res;
	char what[96];

	ensure_init();
	memset(&p, 0, sizeof(p));
	p.data.alloc_size.owner = G.c.h_client;
	p.data.alloc_size.attr = NVA_ATTR_LOCATION_VIDMEM << NVA_ATTR_LOCATION_SHIFT;
	p.data.alloc_size.size = size;
	if (!G.auto_handles) {
		p.data.alloc_size.h_memory = nv_new_handle();
		p.data.alloc_size.flags = NVA_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED;
	}
	res = vidheap(&p, NVA_OS32_FUNC_ALLOC_SIZE);
	snprintf(what, sizeof(what), "legacy-alloc %s", arg);
	if (!nvres_ok(res)) {
		report_cuda(what, res);
		return;
	}
	r.handle = p.data.alloc_size.h_memory;
	r.size = p.data.alloc_size.size;
	rec_add(&r);
	out("%s: OK handle=0x%x size=%llu", what, r.handle,
	    (unsigned long long)r.size);
}

static void cmd_legacy_free(const char *arg)
{
	struct nva_os32_vidheap p;
	struct rec *r;
	uint32_t h;
	struct nvres res;
	char what[64];

	ensure_init();
	r = rec_find(arg, 1u << REC_LEGACY);
	if (r) {
		h = r->handle;
	} else if (strcmp(arg, "last") == 0 || parse_handle(arg, &h)) {
		sys_error("legacy-free %s: no such live handle", arg);
		return;
	}
	memset(&p, 0, sizeof(p));
	p.data.free.owner = G.c.h_client;
	p.data.free.h_memory = h;
	p.data.free.flags = NVA_OS32_FREE_FLAGS_MEMORY_HANDLE_PROVIDED;
	res = vidheap(&p, NVA_OS32_FUNC_FREE);
	snprintf(what, sizeof(what), "legacy-free 0x%x", h);
	if (!nvres_ok(res)) {
		report_cuda(what, res);
		return;
	}
	if (r)
		r->live = 0;
	out("%s: OK", what);
}

static void cmd_legacy_info(void)
{
	struct nva_os32_vidheap p;
	struct nvres res;

	ensure_init();
	memset(&p, 0, sizeof(p));
	res = vidheap(&p, NVA_OS32_FUNC_INFO);
	if (!nvres_ok(res)) {
		report_cuda("legacy-info", res);
		return;
	}
	out("legacy-info: total=%llu free=%llu largest=%llu base=0x%llx",
	    (unsigned long long)p.total, (unsigned long long)p.free,
	    (unsigned long long)p.data.info.size,
	    (unsigned long long)p.data.info.base);
}

static void cmd_meminfo(void)
{
	uint64_t total, heap, free_kib;
	struct nvres res;

	ensure_init();
	res = nv_fb_info(&G.c, &total, &heap, &free_kib);
	if (!nvres_ok(res)) {
		report_cuda("meminfo", res);
		return;
	}
	if (!total)
		total = heap;
	out("meminfo: total=%llu free=%llu heap=%llu",
	    (unsigned long long)total << 10, (unsigned long long)free_kib << 10,
	    (unsigned long long)heap << 10);
}

static sigjmp_buf touch_env;
static volatile sig_atomic_t touch_sig;

static void touch_handler(int sig)
{
	touch_sig = sig;
	siglongjmp(touch_env, 1);
}

/* Writes one byte per page; returns -1 and the signal if a page faulted. */
static long touch_pages(char *p, uint64_t len, int *sig)
{
	struct sigaction sa, old_bus, old_segv;
	volatile uint64_t off = 0;
	long rc = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = touch_handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old_bus);
	sigaction(SIGSEGV, &sa, &old_segv);
	if (sigsetjmp(touch_env, 1) == 0) {
		for (off = 0; off < len; off += 4096)
			((volatile char *)p)[off] = 1;
	} else {
		*sig = touch_sig;
		rc = -1;
	}
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	return rc < 0 ? -(long)(off / 4096) - 1 : (long)(len / 4096);
}

static const char *mmap_refusal_name(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
	case EINVAL: return "CUDA_ERROR_NOT_SUPPORTED";
	case ENOMEM: return "CUDA_ERROR_OUT_OF_MEMORY";
	default: return "CUDA_ERROR_UNKNOWN";
	}
}

static void cmd_managed(const char *arg, uint64_t size)
{
	char *addr, *p;
	long pages;
	int sig = 0, err;

	ensure_init();
	addr = reserve_va(size, NVA_PAGE_HUGE);
	if (!addr) {
		sys_error("managed %s: reserve VA: %s", arg, strerror(errno));
		return;
	}
	p = mmap(addr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 G.c.uvm_fd, (off_t)(uintptr_t)addr);
	if (p == MAP_FAILED) {
		err = errno;
		munmap(addr, size);
		out("managed %s: %s (mmap: errno %d %s)", arg,
		    mmap_refusal_name(err), err, strerror(err));
		G.cuda_err = 1;
		return;
	}
	pages = touch_pages(p, size, &sig);
	if (pages < 0) {
		out("managed %s: CUDA_ERROR_ILLEGAL_ADDRESS (signal %d %s touching page %ld at 0x%llx)",
		    arg, sig, strsignal(sig), -pages - 1,
		    (unsigned long long)(uintptr_t)p);
		G.cuda_err = 1;
		return;
	}
	out("managed %s: OK addr=0x%llx pages=%ld", arg,
	    (unsigned long long)(uintptr_t)p, pages);
}

static void cmd_sempool(const char *arg, uint64_t size)
{
	struct nvclient *c = &G.c;
	struct nva_uvm_alloc_semaphore_pool *sp;
	size_t off_count, off_status;
	char *addr, *p, what[96];
	struct nvres res;
	int err;

	ensure_init();
	snprintf(what, sizeof(what), "sempool %s", arg);
	addr = reserve_va(size, NVA_PAGE_HUGE);
	sp = calloc(1, sizeof(*sp));
	if (!addr || !sp) {
		sys_error("%s: %s", what, strerror(errno));
		free(sp);
		return;
	}
	if (c->lay.t.uvm_sem_pool == sizeof(*sp)) {
		off_count = offsetof(typeof(*sp), gpu_attributes_count);
		off_status = offsetof(typeof(*sp), rm_status);
	} else {
		off_count = NVA_UVM_SEM_POOL_OLD_OFF_COUNT;
		off_status = NVA_UVM_SEM_POOL_OLD_OFF_STATUS;
	}
	sp->base = (uintptr_t)addr;
	sp->length = size;
	memcpy(sp->per_gpu_attributes[0].gpu_uuid, c->uuid, NVA_UUID_LEN);
	*(uint64_t *)((char *)sp + off_count) = 1;
	res = nv_uvm_call(c->uvm_fd, NVA_UVM_ALLOC_SEMAPHORE_POOL, sp, off_status);
	free(sp);
	if (!nvres_ok(res)) {
		munmap(addr, size);
		report_cuda(what, res);
		return;
	}
	p = mmap(addr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 c->uvm_fd, (off_t)(uintptr_t)addr);
	if (p == MAP_FAILED) {
		err = errno;
		munmap(addr, size);
		out("%s: %s (mmap: errno %d %s)", what, mmap_refusal_name(err),
		    err, strerror(err));
		G.cuda_err = 1;
		return;
	}
	out("%s: OK addr=0x%llx", what, (unsigned long long)(uintptr_t)p);
}

/* What give hands over besides the two fds. */
struct handover {
	struct nvclient c;
};

static int unix_addr(const char *path, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path)) {
		sys_error("socket path too long: %s", path);
		return -1;
	}
	strcpy(a->sun_path, path);
	return 0;
}

/* One handover and its two fds, as one message. */
struct handover_msg {
	struct handover h;
	char cbuf[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov;
	struct msghdr msg;
};

static void handover_msg_init(struct handover_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->iov.iov_base = &m->h;
	m->iov.iov_len = sizeof(m->h);
	m->msg.msg_iov = &m->iov;
	m->msg.msg_iovlen = 1;
	m->msg.msg_control = m->cbuf;
	m->msg.msg_controllen = sizeof(m->cbuf);
}

static void cmd_give(const char *path)
{
	struct handover_msg m;
	struct sockaddr_un a;
	struct cmsghdr *cm;
	int fds[2], ls, s;

	ensure_init();
	if (unix_addr(path, &a))
		return;
	ls = socket(AF_UNIX, SOCK_STREAM, 0);
	unlink(path);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(ls, 1)) {
		sys_error("give: listen on %s: %s", path, strerror(errno));
		return;
	}
	s = accept(ls, NULL, NULL);
	close(ls);
	unlink(path);
	if (s < 0) {
		sys_error("give: accept: %s", strerror(errno));
		return;
	}
	handover_msg_init(&m);
	m.h.c = G.c;
	fds[0] = G.c.ctl_fd;
	fds[1] = G.c.gpu_fd;
	cm = CMSG_FIRSTHDR(&m.msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	if (sendmsg(s, &m.msg, 0) != (ssize_t)sizeof(m.h)) {
		sys_error("give: sendmsg: %s", strerror(errno));
		close(s);
		return;
	}
	close(s);
	out("give: OK client=0x%x device=0x%x", G.c.h_client, G.c.h_device);
}

static void cmd_take(const char *path)
{
	struct handover_msg m;
	struct sockaddr_un a;
	struct cmsghdr *cm;
	int fds[2], s, i;

	if (G.inited) {
		sys_error("take: this process has its own client already");
		return;
	}
	if (unix_addr(path, &a))
		return;
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	for (i = 0; s >= 0 && i < 300; i++) {
		if (!connect(s, (struct sockaddr *)&a, sizeof(a)))
			break;
		usleep(100000);
	}
	if (s < 0 || i == 300) {
		sys_error("take: connect to %s: %s", path, strerror(errno));
		return;
	}
	handover_msg_init(&m);
	if (recvmsg(s, &m.msg, MSG_WAITALL) != (ssize_t)sizeof(m.h) ||
	    !(cm = CMSG_FIRSTHDR(&m.msg)) || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(fds))) {
		sys_error("take: no fds from %s", path);
		close(s);
		return;
	}
	close(s);
	memcpy(fds, CMSG_DATA(cm), sizeof(fds));
	G.c = m.h.c;
	G.c.ctl_fd = fds[0];
	G.c.gpu_fd = fds[1];
	/* UVM fds belong to the giver's address space: none here. */
	G.c.uvm_fd = -1;
	G.c.uvm_mm_fd = -1;
	/* Our own handle counter would name the giver's objects again. */
	G.c.auto_handles = 1;
	G.inited = 1;
	out("take: OK client=0x%x device=0x%x", G.c.h_client, G.c.h_device);
}

static void cmd_rm_alloc(const char *arg, uint64_t size)
{
	struct rec r = { .kind = REC_ALLOC, .live = 1 };
	struct nvres res;
	char what[96];
	uint64_t actual = 0;

	ensure_init();
	snprintf(what, sizeof(what), "rm-alloc %s", arg);
	res = nv_alloc_vidmem(&G.c, size, &r.handle, &actual);
	if (!nvres_ok(res)) {
		report_cuda(what, res);
		return;
	}
	r.size = actual;
	rec_add(&r);
	out("%s: OK handle=0x%x size=%llu", what, r.handle,
	    (unsigned long long)actual);
}

static void cmd_hold(long seconds)
{
	ensure_init();
	out("holding pid=%d", (int)getpid());
	fflush(stdout);
	if (seconds < 0) {
		for (;;)
			pause();
	}
	{
		struct timespec ts = { .tv_sec = seconds };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
}

struct thread_arg {
	uint64_t size;
	unsigned long count;
	unsigned long ok, oom, err;
	uint64_t bytes;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	unsigned long i;

	for (i = 0; i < a->count; i++) {
		struct rec r;
		struct nvres res = do_alloc(a->size, &r);

		if (nvres_ok(res)) {
			a->ok++;
			a->bytes += r.size;
		} else if (!res.err && (res.status == NVA_ERR_NO_MEMORY ||
				       res.status == NVA_ERR_INSUFFICIENT_RESOURCES)) {
			a->oom++;
		} else {
			a->err++;
		}
	}
	return NULL;
}

static void cmd_threads(unsigned long n, const char *size_arg, uint64_t size,
			unsigned long count)
{
	pthread_t *tids = calloc(n, sizeof(*tids));
	struct thread_arg *args = calloc(n, sizeof(*args));
	unsigned long i, started = 0, ok = 0, oom = 0, err = 0;
	uint64_t bytes = 0;

	ensure_init();
	if (!tids || !args) {
		sys_error("threads: out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		args[i].size = size;
		args[i].count = count;
		if (pthread_create(&tids[i], NULL, thread_main, &args[i])) {
			sys_error("threads: pthread_create failed after %lu", i);
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++) {
		pthread_join(tids[i], NULL);
		ok += args[i].ok;
		oom += args[i].oom;
		err += args[i].err;
		bytes += args[i].bytes;
	}
	out("threads %lu %s %lu: ok=%lu oom=%lu errors=%lu bytes=%llu", n,
	    size_arg, count, ok, oom, err, (unsigned long long)bytes);
	if (oom || err)
		G.cuda_err = 1;
out:
	free(tids);
	free(args);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

enum bench_op { OP_ALLOC_FREE, OP_CONTROL, OP_PASSTHRU, OP_SYSCALL, OP_COUNT };

/*
 * control is FB_GET_INFO_V2, which cgpu rewrites for attached tasks;
 * passthru is GPU_GET_ATTACHED_IDS, which it does not look into.
 */
static const char *const bench_names[OP_COUNT] = {
	"alloc_free", "control", "passthru", "syscall",
};

/* One operation; a driver error ends the benchmark. */
static int bench_once(enum bench_op op, struct nvres *res)
{
	struct nvclient *c = &G.c;
	uint64_t t, h, f;
	uint32_t hm;

	switch (op) {
	case OP_ALLOC_FREE:
		*res = nv_alloc_vidmem(c, 64 << 10, &hm, &t);
		if (!nvres_ok(*res))
			return -1;
		*res = nv_rm_free(c, c->h_client, c->h_device, hm);
		return nvres_ok(*res) ? 0 : -1;
	case OP_CONTROL:
		*res = nv_fb_info(c, &t, &h, &f);
		return nvres_ok(*res) ? 0 : -1;
	case OP_PASSTHRU: {
		uint32_t ids[NVA_MAX_ATTACHED_GPUS];
		unsigned n;

		*res = nv_attached_ids(c, ids, NVA_MAX_ATTACHED_GPUS, &n);
		return nvres_ok(*res) && n ? 0 : -1;
	}
	default:
		syscall(SYS_getppid);
		return 0;
	}
}

static void cmd_bench(unsigned long iters)
{
	uint64_t *samples = calloc(iters, sizeof(*samples));
	uint64_t med[OP_COUNT], p10[OP_COUNT], p90[OP_COUNT];
	unsigned long warm = iters / 10 + 10, i;
	struct nvres res = { 0, 0 };
	int op;

	ensure_init();
	if (!samples) {
		sys_error("bench: out of memory");
		return;
	}
	for (op = 0; op < OP_COUNT; op++) {
		for (i = 0; i < warm; i++)
			if (bench_once(op, &res))
				goto driver_error;
		for (i = 0; i < iters; i++) {
			uint64_t t0 = now_ns();

			if (bench_once(op, &res))
				goto driver_error;
			samples[i] = now_ns() - t0;
		}
		qsort(samples, iters, sizeof(*samples), cmp_u64);
		med[op] = samples[iters / 2];
		p10[op] = samples[iters / 10];
		p90[op] = samples[iters * 9 / 10];
	}
	free(samples);
	out("%-12s %12s %12s %12s   (%lu iterations after %lu warm-up)",
	    "op", "median_ns", "p10_ns", "p90_ns", iters, warm);
	for (op = 0; op < OP_COUNT; op++)
		out("%-12s %12llu %12llu %12llu", bench_names[op],
		    (unsigned long long)med[op], (unsigned long long)p10[op],
		    (unsigned long long)p90[op]);
	for (op = 0; op < OP_COUNT; op++)
		out("bench: %s_%s_median %llu ns",
		    op == OP_SYSCALL ? "baseline" : G.bench_prefix,
		    bench_names[op], (unsigned long long)med[op]);
	for (op = 0; op < OP_SYSCALL; op++)
		out("bench: %s_%s_vs_syscall %.2f ratio", G.bench_prefix,
		    bench_names[op],
		    med[OP_SYSCALL] ? (double)med[op] / (double)med[OP_SYSCALL] : 0.0);
	return;
driver_error:
	free(samples);
	report_cuda("bench", res);
}

static int run_cmds(int argc, char **argv);

static void cmd_children(unsigned long n, int argc, char **argv)
{
	unsigned long i, started = 0, ok = 0, cuda = 0, failed = 0;
	pid_t *pids = calloc(n, sizeof(*pids));

	if (!pids) {
		sys_error("children: out of memory");
		return;
	}
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			sys_error("children: fork: %s", strerror(errno));
			break;
		}
		if (pid == 0) {
			/* Drop the parent's context; the child makes its own. */
			if (G.inited)
				nvclient_close(&G.c);
			G.inited = 0;
			G.nrecs = 0;
			G.cuda_err = G.sys_err = 0;
			snprintf(G.prefix, sizeof(G.prefix), "child%lu: ", i);
			run_cmds(argc, argv);
			fflush(stdout);
			_exit(exit_code());
		}
		pids[started++] = pid;
	}
	for (i = 0; i < started; i++) {
		int st;

		if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st))
			failed++;
		else if (WEXITSTATUS(st) == 0)
			ok++;
		else if (WEXITSTATUS(st) == 2)
			cuda++;
		else
			failed++;
	}
	free(pids);
	out("children %lu: ok=%lu cuda_errors=%lu failed=%lu", n, ok, cuda,
	    failed);
	if (cuda)
		G.cuda_err = 1;
	if (failed)
		G.sys_err = 1;
}

static int need_args(int argc, int i, int n, const char *cmd)
{
	if (i + n >= argc) {
		sys_error("%s: needs %d argument%s (see --help)", cmd, n,
			  n == 1 ? "" : "s");
		return -1;
	}
	return 0;
}

static int get_size(const char *cmd, const char *arg, uint64_t *v)
{
	/* 0 is passed through on purpose: the driver must refuse it. */
	if (parse_size(arg, v) == 0)
		return 0;
	sys_error("%s: bad size \"%s\"", cmd, arg);
	return -1;
}

static int get_count(const char *cmd, const char *arg, unsigned long *v)
{
	char *end;

	*v = strtoul(arg, &end, 10);
	if (*end || end == arg || *v == 0 || *v > 1000000) {
		sys_error("%s: bad count \"%s\"", cmd, arg);
		return -1;
	}
	return 0;
}

/* Runs argv[0..argc) as commands; stops at the first usage error. */
static int run_cmds(int argc, char **argv)
{
	int i;

	if (argc == 0)
		ensure_init();
	for (i = 0; i < argc; i++) {
		const char *cmd = argv[i];
		uint64_t size;
		unsigned long n, count;

		if (strcmp(cmd, "init") == 0) {
			ensure_init();
		} else if (strcmp(cmd, "alloc") == 0 ||
			   strcmp(cmd, "legacy-alloc") == 0 ||
			   strcmp(cmd, "managed") == 0 ||
			   strcmp(cmd, "sempool") == 0) {
			if (need_args(argc, i, 1, cmd) ||
			    get_size(cmd, argv[i + 1], &size))
				return -1;
			i++;
			if (cmd[0] == 'a')
				cmd_alloc(argv[i], size);
			else if (cmd[0] == 'l')
				cmd_legacy_alloc(argv[i], size);
			else if (cmd[0] == 'm')
				cmd_managed(argv[i], size);
			else
				cmd_sempool(argv[i], size);
		} else if (strcmp(cmd, "fill") == 0) {
			cmd_fill();
		} else if (strcmp(cmd, "free") == 0) {
			if (need_args(argc, i, 1, cmd))
				return -1;
			cmd_free(argv[++i]);
		} else if (strcmp(cmd, "rm-free") == 0) {
			if (need_args(argc, i, 1, cmd))
				return -1;
			cmd_rm_free(argv[++i]);
		} else if (strcmp(cmd, "uvm-free") == 0) {
			if (need_args(argc, i, 1, cmd))
				return -1;
			cmd_uvm_free(argv[++i]);
		} else if (strcmp(cmd, "gpu-ids") == 0) {
			cmd_gpu_ids();
		} else if (strcmp(cmd, "free-device") == 0) {
			cmd_free_parent(0);
		} else if (strcmp(cmd, "free-client") == 0) {
			cmd_free_parent(1);
		} else if (strcmp(cmd, "dup") == 0) {
			if (need_args(argc, i, 1, cmd))
				return -1;
			cmd_dup(argv[++i]);
		} else if (strcmp(cmd, "legacy-free") == 0) {
			if (need_args(argc, i, 1, cmd))
				return -1;
			cmd_legacy_free(argv[++i]);
		} else if (strcmp(cmd, "legacy-info") == 0) {
			cmd_legacy_info();
		} else if (strcmp(cmd, "give") == 0 || strcmp(cmd, "take") == 0) {
			if (need_args(argc, i, 1, cmd))
				return -1;
			if (cmd[0] == 'g')
				cmd_give(argv[++i]);
			else
				cmd_take(argv[++i]);
		} else if (strcmp(cmd, "rm-alloc") == 0) {
			if (need_args(argc, i, 1, cmd) ||
			    get_size(cmd, argv[i + 1], &size))
				return -1;
			i++;
			cmd_rm_alloc(argv[i], size);
		} else if (strcmp(cmd, "meminfo") == 0) {
			cmd_meminfo();
		} else if (strcmp(cmd, "hold") == 0) {
			long secs = -1;

			if (i + 1 < argc && argv[i + 1][0] >= '0' &&
			    argv[i + 1][0] <= '9') {
				if (get_count(cmd, argv[++i], &n))
					return -1;
				secs = (long)n;
			}
			cmd_hold(secs);
		} else if (strcmp(cmd, "children") == 0) {
			if (need_args(argc, i, 1, cmd) ||
			    get_count(cmd, argv[i + 1], &n))
				return -1;
			cmd_children(n, argc - i - 2, argv + i + 2);
			return 0;
		} else if (strcmp(cmd, "threads") == 0) {
			if (need_args(argc, i, 3, cmd) ||
			    get_count(cmd, argv[i + 1], &n) ||
			    get_size(cmd, argv[i + 2], &size) ||
			    get_count(cmd, argv[i + 3], &count))
				return -1;
			cmd_threads(n, argv[i + 2], size, count);
			i += 3;
		} else if (strcmp(cmd, "bench") == 0) {
			if (need_args(argc, i, 1, cmd) ||
			    get_count(cmd, argv[i + 1], &n))
				return -1;
			i++;
			cmd_bench(n);
		} else {
			sys_error("unknown command \"%s\" (see --help)", cmd);
			return -1;
		}
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *o = argv[i];

		if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
			fputs(usage_text, stdout);
			return 0;
		} else if (strcmp(o, "-q") == 0) {
			G.quiet = 1;
		} else if (strcmp(o, "-g") == 0 && i + 1 < argc) {
			char *end;

			G.gpu = (unsigned)strtoul(argv[++i], &end, 10);
			if (*end || end == argv[i]) {
				fprintf(stderr, "fakecuda: -g needs a GPU index\n");
				return 1;
			}
		} else if (strcmp(o, "--alloc-form") == 0 && i + 1 < argc) {
			i++;
			if (strcmp(argv[i], "nvos21") == 0) {
				G.use_nvos21 = 1;
			} else if (strcmp(argv[i], "nvos64") == 0) {
				G.use_nvos21 = 0;
			} else {
				fprintf(stderr, "fakecuda: --alloc-form is nvos21 or nvos64\n");
				return 1;
			}
		} else if (strcmp(o, "--auto-handles") == 0) {
			G.auto_handles = 1;
		} else if (strcmp(o, "--xfer") == 0) {
			nv_xfer = 1;
		} else if (strcmp(o, "--bench-prefix") == 0 && i + 1 < argc) {
			G.bench_prefix = argv[++i];
		} else {
			fprintf(stderr, "fakecuda: unknown option %s (see --help)\n", o);
			return 1;
		}
	}
	run_cmds(argc - i, argv + i);
	fflush(stdout);
	return exit_code();
}
