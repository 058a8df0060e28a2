// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * cgpuadm: drives /dev/cgpu (kmod/include/uapi/cgpu.h) from test scripts.
 *
 *   cgpuadm version
 *   cgpuadm create NAME --gpu N --mem SIZE [--weight W]     prints the id
 *   cgpuadm destroy NAME|ID [--force]
 *   cgpuadm attach NAME|ID CGROUP_DIR
 *   cgpuadm detach NAME|ID CGROUP_DIR
 *   cgpuadm set NAME|ID [--mem SIZE] [--weight W]
 *   cgpuadm stats NAME|ID      one line of key=value
 *   cgpuadm list               one stats line per instance
 *   cgpuadm hostile            feeds every ioctl bad input, checks errnos
 *
 * SIZE is bytes or a K/M/G/T (binary) suffix.  A cgroup's id is the inode
 * number of its directory.  Exit status: 0 success; 1 the kernel refused
 * (the message ends in the errno's name, e.g. "(ENOSPC)"); 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgpu.h"

static int dev_fd = -1;

static const char *errname(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case ENOTTY: return "ENOTTY";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case ENXIO: return "ENXIO";
	default: return "E?";
	}
}

static void usage(void)
{
	fputs("usage: cgpuadm version | create NAME --gpu N --mem SIZE [--weight W]\n"
	      "       | destroy NAME|ID [--force] | attach NAME|ID CGROUP_DIR\n"
	      "       | detach NAME|ID CGROUP_DIR | set NAME|ID [--mem SIZE] [--weight W]\n"
	      "       | stats NAME|ID | list | hostile\n", stderr);
	exit(2);
}

static int dev(void)
{
	if (dev_fd < 0) {
		dev_fd = open(CGPU_DEVICE_PATH, O_RDWR | O_CLOEXEC);
		if (dev_fd < 0) {
			fprintf(stderr, "cgpuadm: open %s: %s (%s)\n",
				CGPU_DEVICE_PATH, strerror(errno), errname(errno));
			exit(1);
		}
	}
	return dev_fd;
}

static int xioctl(unsigned long cmd, void *arg)
{
	return ioctl(dev(), cmd, arg) < 0 ? errno : 0;
}

static void die_err(const char *what, int e)
{
	fprintf(stderr, "cgpuadm: %s: %s (%s)\n", what, strerror(e), errname(e));
	exit(1);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static uint32_t parse_u32(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v > UINT32_MAX)
		usage();
	return (uint32_t)v;
}

static int get_stats(uint64_t id, struct cgpu_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->id = id;
	return xioctl(CGPU_IOC_STATS, st);
}

/* The ids of all instances; *n set.  Caller frees. */
static uint64_t *get_ids(uint32_t *n)
{
	struct cgpu_list l;
	uint64_t *ids = NULL;
	int e;

	for (;;) {
		memset(&l, 0, sizeof(l));
		l.capacity = *n;
		l.ids = (uintptr_t)ids;
		e = xioctl(CGPU_IOC_LIST, &l);
		if (e)
			die_err("list", e);
		if (l.count <= l.capacity) {
			*n = l.count;
			return ids;
		}
		free(ids);
		*n = l.count + 8;
		ids = calloc(*n, sizeof(*ids));
		if (!ids)
			die_err("list", ENOMEM);
	}
}

/* NAME or numeric id -> id. */
static uint64_t resolve(const char *arg)
{
	struct cgpu_stats st;
	uint64_t *ids, id = 0;
	uint32_t n = 0, i;
	char *end;

	ids = get_ids(&n);
	for (i = 0; i < n && !id; i++)
		if (!get_stats(ids[i], &st) && !strncmp(st.name, arg, sizeof(st.name)))
			id = ids[i];
	free(ids);
	if (id)
		return id;
	id = strtoull(arg, &end, 0);
	if (*end || end == arg || !id) {
		fprintf(stderr, "cgpuadm: no instance named %s (ENOENT)\n", arg);
		exit(1);
	}
	return id;
}

static uint64_t cgroup_id(const char *dir)
{
	struct stat sb;

	if (stat(dir, &sb) < 0) {
		fprintf(stderr, "cgpuadm: stat %s: %s\n", dir, strerror(errno));
		exit(1);
	}
	return (uint64_t)sb.st_ino;
}

static void print_stats(const struct cgpu_stats *st)
{
	printf("id=%" PRIu64 " name=%.*s gpu=%u weight=%u limit=%" PRIu64
	       " used=%" PRIu64 " peak=%" PRIu64 " allocs=%" PRIu64
	       " live=%" PRIu64 " refused=%" PRIu64 " refused_managed=%" PRIu64
	       " procs=%u cgroups=%u\n",
	       (uint64_t)st->id, CGPU_NAME_LEN, st->name, st->gpu, st->weight,
	       (uint64_t)st->mem_limit, (uint64_t)st->mem_used,
	       (uint64_t)st->mem_peak, (uint64_t)st->allocs,
	       (uint64_t)st->live_allocs, (uint64_t)st->refused_allocs,
	       (uint64_t)st->refused_managed, st->nr_procs, st->nr_cgroups);
}

static int cmd_create(int argc, char **argv)
{
	struct cgpu_create c;
	int i, have_gpu = 0, have_mem = 0, e;

	if (argc < 2)
		usage();
	memset(&c, 0, sizeof(c));
	if (strlen(argv[1]) >= sizeof(c.name))
		die_err("create: name too long", EINVAL);
	strncpy(c.name, argv[1], sizeof(c.name) - 1);
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--gpu") && i + 1 < argc) {
			c.gpu = parse_u32(argv[++i]);
			have_gpu = 1;
		} else if (!strcmp(argv[i], "--mem") && i + 1 < argc) {
			uint64_t v;

			if (parse_size(argv[++i], &v))
				usage();
			c.mem_limit = v;
			have_mem = 1;
		} else if (!strcmp(argv[i], "--weight") && i + 1 < argc) {
			c.weight = parse_u32(argv[++i]);
		} else {
			usage();
		}
	}
	if (!have_gpu || !have_mem)
		usage();
	e = xioctl(CGPU_IOC_CREATE, &c);
	if (e) {
		char what[128];

		snprintf(what, sizeof(what), "create %s: Error occurs when creating cGPU instance", argv[1]);
		die_err(what, e);
	}
	printf("%" PRIu64 "\n", (uint64_t)c.id);
	return 0;
}

static int cmd_destroy(int argc, char **argv)
{
	struct cgpu_destroy d;
	int e;

	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--force")))
		usage();
	memset(&d, 0, sizeof(d));
	d.id = resolve(argv[1]);
	if (argc == 3)
		d.flags = CGPU_DESTROY_FORCE;
	e = xioctl(CGPU_IOC_DESTROY, &d);
	if (e)
		die_err("destroy", e);
	return 0;
}

static int cmd_attach(int argc, char **argv, int attach)
{
	struct cgpu_attach a;
	int e;

	if (argc != 3)
		usage();
	memset(&a, 0, sizeof(a));
	a.id = resolve(argv[1]);
	a.cgroup_id = cgroup_id(argv[2]);
	e = xioctl(attach ? CGPU_IOC_ATTACH : CGPU_IOC_DETACH, &a);
	if (e)
		die_err(attach ? "attach" : "detach", e);
	return 0;
}

static int cmd_set(int argc, char **argv)
{
	struct cgpu_set s;
	int i, e;

	if (argc < 3)
		usage();
	memset(&s, 0, sizeof(s));
	s.id = resolve(argv[1]);
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--mem") && i + 1 < argc) {
			uint64_t v;

			if (parse_size(argv[++i], &v))
				usage();
			s.mem_limit = v;
			s.flags |= CGPU_SET_MEM_LIMIT;
		} else if (!strcmp(argv[i], "--weight") && i + 1 < argc) {
			s.weight = parse_u32(argv[++i]);
			s.flags |= CGPU_SET_WEIGHT;
		} else {
			usage();
		}
	}
	e = xioctl(CGPU_IOC_SET, &s);
	if (e)
		die_err("set", e);
	return 0;
}

static int cmd_stats(int argc, char **argv)
{
	struct cgpu_stats st;
	int e;

	if (argc != 2)
		usage();
	e = get_stats(resolve(argv[1]), &st);
	if (e)
		die_err("stats", e);
	print_stats(&st);
	return 0;
}

static int cmd_list(void)
{
	struct cgpu_stats st;
	uint64_t *ids;
	uint32_t n = 0, i;

	ids = get_ids(&n);
	for (i = 0; i < n; i++)
		if (!get_stats(ids[i], &st))
			print_stats(&st);
	free(ids);
	return 0;
}

static int cmd_version(void)
{
	struct cgpu_version v;
	int e;

	memset(&v, 0, sizeof(v));
	e = xioctl(CGPU_IOC_VERSION, &v);
	if (e)
		die_err("version", e);
	printf("abi=%u.%u max_inst=%u name_len=%u\n", v.abi_major, v.abi_minor,
	       v.max_inst, v.name_len);
	return 0;
}

/* ---- hostile ------------------------------------------------------------ */

static int h_pass, h_fail;

static void expect(const char *what, unsigned long cmd, void *arg, int want)
{
	int got = ioctl(dev(), cmd, arg) < 0 ? errno : 0;

	if (got == want) {
		h_pass++;
	} else {
		h_fail++;
		printf("FAIL %s: got %s (%d), want %s (%d)\n", what,
		       got ? errname(got) : "0", got, want ? errname(want) : "0", want);
	}
}

/* A buffer whose last byte touches an unmapped page. */
static char *edge_buf(size_t size, size_t *overhang)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || mprotect(p + pg, pg, PROT_NONE))
		die_err("mmap", errno);
	*overhang = 8;
	/* all but the last 8 bytes mapped */
	return p + pg - (size - 8);
}

struct hcmd {
	const char *name;
	unsigned long cmd;
	size_t size;
};

static const struct hcmd hcmds[] = {
	{ "VERSION", CGPU_IOC_VERSION, sizeof(struct cgpu_version) },
	{ "CREATE", CGPU_IOC_CREATE, sizeof(struct cgpu_create) },
	{ "DESTROY", CGPU_IOC_DESTROY, sizeof(struct cgpu_destroy) },
	{ "ATTACH", CGPU_IOC_ATTACH, sizeof(struct cgpu_attach) },
	{ "DETACH", CGPU_IOC_DETACH, sizeof(struct cgpu_attach) },
	{ "SET", CGPU_IOC_SET, sizeof(struct cgpu_set) },
	{ "STATS", CGPU_IOC_STATS, sizeof(struct cgpu_stats) },
	{ "LIST", CGPU_IOC_LIST, sizeof(struct cgpu_list) },
};

#define NHCMDS (sizeof(hcmds) / sizeof(hcmds[0]))

/* Sets the u32 at off of a zeroed struct to v. */
static void *with_u32(void *buf, size_t size, size_t off, uint32_t v)
{
	memset(buf, 0, size);
	memcpy((char *)buf + off, &v, sizeof(v));
	return buf;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int cmd_hostile(void)
{
	unsigned char buf[512];
	struct cgpu_create c;
	struct cgpu_destroy d;
	struct cgpu_attach a;
	struct cgpu_set s;
	struct cgpu_stats st;
	struct cgpu_list l;
	uint64_t id, ids[4], seed = 0x9e3779b97f4a7c15ull;
	size_t i, off, over;
	char what[128];
	pid_t pid;
	int status, k;
	char *unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (unmapped == MAP_FAILED)
		die_err("mmap", errno);

	/* Unknown commands and known numbers with the wrong size/type/direction. */
	memset(buf, 0, sizeof(buf));
	expect("unknown nr", _IOWR(CGPU_IOC_MAGIC, 0x7f, struct cgpu_version), buf, ENOTTY);
	expect("nr 0", _IOWR(CGPU_IOC_MAGIC, 0, struct cgpu_version), buf, ENOTTY);
	expect("other type", _IOWR('D', 0x01, struct cgpu_version), buf, ENOTTY);
	expect("no size", _IO(CGPU_IOC_MAGIC, 0x01), buf, ENOTTY);
	for (i = 0; i < NHCMDS; i++) {
		unsigned int nr = _IOC_NR(hcmds[i].cmd);

		snprintf(what, sizeof(what), "%s short", hcmds[i].name);
		expect(what, _IOC(_IOC_READ | _IOC_WRITE, CGPU_IOC_MAGIC, nr, hcmds[i].size - 8), buf, ENOTTY);
		snprintf(what, sizeof(what), "%s long", hcmds[i].name);
		expect(what, _IOC(_IOC_READ | _IOC_WRITE, CGPU_IOC_MAGIC, nr, hcmds[i].size + 8), buf, ENOTTY);
		snprintf(what, sizeof(what), "%s read-only dir", hcmds[i].name);
		expect(what, _IOC(_IOC_READ, CGPU_IOC_MAGIC, nr, hcmds[i].size), buf, ENOTTY);
		snprintf(what, sizeof(what), "%s NULL", hcmds[i].name);
		expect(what, hcmds[i].cmd, NULL, EFAULT);
		snprintf(what, sizeof(what), "%s unmapped", hcmds[i].name);
		expect(what, hcmds[i].cmd, unmapped, EFAULT);
		snprintf(what, sizeof(what), "%s kernel address", hcmds[i].name);
		expect(what, hcmds[i].cmd, (void *)0xffffffff81000000ul, EFAULT);
		snprintf(what, sizeof(what), "%s straddles an unmapped page", hcmds[i].name);
		expect(what, hcmds[i].cmd, edge_buf(hcmds[i].size, &over), EFAULT);
	}

	/* Reserved fields, one u32 at a time. */
	for (off = offsetof(struct cgpu_version, reserved); off < sizeof(struct cgpu_version); off += 4) {
		snprintf(what, sizeof(what), "VERSION reserved @%zu", off);
		expect(what, CGPU_IOC_VERSION, with_u32(buf, sizeof(struct cgpu_version), off, 1), EINVAL);
	}
	for (off = offsetof(struct cgpu_create, flags); off < sizeof(struct cgpu_create); off += 4) {
		if (off >= offsetof(struct cgpu_create, id) && off < offsetof(struct cgpu_create, reserved))
			continue;	/* the out field */
		memset(&c, 0, sizeof(c));
		strcpy(c.name, "hostile-r");
		c.mem_limit = 1 << 20;
		memcpy((char *)&c + off, &(uint32_t){ 1 }, 4);
		snprintf(what, sizeof(what), "CREATE reserved/flags @%zu", off);
		expect(what, CGPU_IOC_CREATE, &c, EINVAL);
	}
	for (off = offsetof(struct cgpu_destroy, flags); off < sizeof(struct cgpu_destroy); off += 4) {
		memset(&d, 0, sizeof(d));
		d.id = 1;
		memcpy((char *)&d + off, &(uint32_t){ off == offsetof(struct cgpu_destroy, flags) ? 2 : 1 }, 4);
		snprintf(what, sizeof(what), "DESTROY reserved/flags @%zu", off);
		expect(what, CGPU_IOC_DESTROY, &d, EINVAL);
	}
	for (off = offsetof(struct cgpu_attach, flags); off < sizeof(struct cgpu_attach); off += 4) {
		memset(&a, 0, sizeof(a));
		memcpy((char *)&a + off, &(uint32_t){ 1 }, 4);
		snprintf(what, sizeof(what), "ATTACH reserved/flags @%zu", off);
		expect(what, CGPU_IOC_ATTACH, &a, EINVAL);
		snprintf(what, sizeof(what), "DETACH reserved/flags @%zu", off);
		expect(what, CGPU_IOC_DETACH, &a, EINVAL);
	}
	for (off = offsetof(struct cgpu_set, reserved); off < sizeof(struct cgpu_set); off += 4) {
		memset(&s, 0, sizeof(s));
		s.flags = CGPU_SET_WEIGHT;
		s.weight = 1;
		memcpy((char *)&s + off, &(uint32_t){ 1 }, 4);
		snprintf(what, sizeof(what), "SET reserved @%zu", off);
		expect(what, CGPU_IOC_SET, &s, EINVAL);
	}
	expect("STATS reserved_in", CGPU_IOC_STATS,
	       with_u32(buf, sizeof(st), offsetof(struct cgpu_stats, reserved_in), 1), EINVAL);
	for (off = offsetof(struct cgpu_list, reserved); off < sizeof(struct cgpu_list); off += 4) {
		snprintf(what, sizeof(what), "LIST reserved @%zu", off);
		expect(what, CGPU_IOC_LIST, with_u32(buf, sizeof(l), off, 1), EINVAL);
	}

	/* Names and values. */
	memset(&c, 0, sizeof(c));
	memset(c.name, 'a', sizeof(c.name));
	c.mem_limit = 1 << 20;
	expect("CREATE name without NUL", CGPU_IOC_CREATE, &c, EINVAL);
	memset(&c, 0, sizeof(c));
	c.mem_limit = 1 << 20;
	expect("CREATE empty name", CGPU_IOC_CREATE, &c, EINVAL);
	strcpy(c.name, "../etc");
	expect("CREATE name with /", CGPU_IOC_CREATE, &c, EINVAL);
	strcpy(c.name, "..");
	expect("CREATE name ..", CGPU_IOC_CREATE, &c, EINVAL);
	strcpy(c.name, "a b");
	expect("CREATE name with space", CGPU_IOC_CREATE, &c, EINVAL);
	strcpy(c.name, "hostile-v");
	c.mem_limit = 0;
	expect("CREATE mem 0", CGPU_IOC_CREATE, &c, EINVAL);
	c.mem_limit = UINT64_MAX;
	expect("CREATE mem 2^64-1", CGPU_IOC_CREATE, &c, EINVAL);
	c.mem_limit = CGPU_MEM_LIMIT_MAX + 1;
	expect("CREATE mem 2^48+1", CGPU_IOC_CREATE, &c, EINVAL);
	c.mem_limit = 1 << 20;
	c.gpu = CGPU_MAX_GPU_MINOR + 1;
	expect("CREATE gpu 248", CGPU_IOC_CREATE, &c, EINVAL);
	c.gpu = UINT32_MAX;
	expect("CREATE gpu 2^32-1", CGPU_IOC_CREATE, &c, EINVAL);
	c.gpu = 0;
	c.weight = CGPU_MAX_INST_PER_GPU + 1;
	expect("CREATE weight 21", CGPU_IOC_CREATE, &c, EINVAL);
	c.weight = UINT32_MAX;
	expect("CREATE weight 2^32-1", CGPU_IOC_CREATE, &c, EINVAL);

	memset(&d, 0, sizeof(d));
	expect("DESTROY id 0", CGPU_IOC_DESTROY, &d, ENOENT);
	d.id = UINT64_MAX;
	expect("DESTROY id 2^64-1", CGPU_IOC_DESTROY, &d, ENOENT);
	memset(&st, 0, sizeof(st));
	st.id = UINT64_MAX;
	expect("STATS unknown id", CGPU_IOC_STATS, &st, ENOENT);
	memset(&a, 0, sizeof(a));
	a.id = UINT64_MAX;
	a.cgroup_id = cgroup_id("/sys/fs/cgroup");
	expect("ATTACH unknown instance", CGPU_IOC_ATTACH, &a, ENOENT);
	expect("DETACH unknown instance", CGPU_IOC_DETACH, &a, ENOENT);
	memset(&l, 0, sizeof(l));
	l.capacity = CGPU_LIST_MAX_CAPACITY + 1;
	l.ids = (uintptr_t)ids;
	expect("LIST capacity too big", CGPU_IOC_LIST, &l, EINVAL);
	l.capacity = UINT32_MAX;
	expect("LIST capacity 2^32-1", CGPU_IOC_LIST, &l, EINVAL);
	l.capacity = 4;
	l.ids = 0;
	expect("LIST capacity without ids", CGPU_IOC_LIST, &l, EINVAL);

	/* With an instance to aim at. */
	memset(&c, 0, sizeof(c));
	strcpy(c.name, "hostile-tmp");
	c.mem_limit = 1 << 20;
	expect("CREATE hostile-tmp", CGPU_IOC_CREATE, &c, 0);
	id = c.id;
	expect("CREATE the same name again", CGPU_IOC_CREATE, &c, EEXIST);
	memset(&a, 0, sizeof(a));
	a.id = id;
	a.cgroup_id = 0;
	expect("ATTACH cgroup id 0", CGPU_IOC_ATTACH, &a, ENOENT);
	a.cgroup_id = UINT64_MAX;
	expect("ATTACH cgroup id 2^64-1", CGPU_IOC_ATTACH, &a, ENOENT);
	a.cgroup_id = 0x7fffffff12345ull;	/* no such cgroup */
	expect("ATTACH a non-cgroup inode", CGPU_IOC_ATTACH, &a, ENOENT);
	a.cgroup_id = cgroup_id("/sys/fs/cgroup/cgroup.procs");	/* a file */
	expect("ATTACH a cgroup file's inode", CGPU_IOC_ATTACH, &a, ENOENT);
	a.cgroup_id = cgroup_id("/sys/fs/cgroup");
	expect("DETACH not attached", CGPU_IOC_DETACH, &a, ENOENT);
	memset(&s, 0, sizeof(s));
	s.id = id;
	expect("SET no flags", CGPU_IOC_SET, &s, EINVAL);
	s.flags = 4;
	expect("SET unknown flag", CGPU_IOC_SET, &s, EINVAL);
	s.flags = CGPU_SET_MEM_LIMIT;
	expect("SET mem 0", CGPU_IOC_SET, &s, EINVAL);
	s.mem_limit = UINT64_MAX;
	expect("SET mem 2^64-1", CGPU_IOC_SET, &s, EINVAL);
	s.flags = CGPU_SET_WEIGHT;
	expect("SET weight 0", CGPU_IOC_SET, &s, EINVAL);
	s.weight = 1000;
	expect("SET weight 1000", CGPU_IOC_SET, &s, EINVAL);
	memset(&l, 0, sizeof(l));
	l.capacity = 4;
	l.ids = (uintptr_t)unmapped;
	expect("LIST into unmapped ids", CGPU_IOC_LIST, &l, EFAULT);
	l.capacity = 0;
	l.ids = (uintptr_t)unmapped;
	expect("LIST capacity 0 ignores ids", CGPU_IOC_LIST, &l, 0);
	if (l.count < 1) {
		h_fail++;
		printf("FAIL LIST count %u after a create\n", l.count);
	}

	/* Without CAP_SYS_ADMIN, even with the fd. */
	pid = fork();
	if (pid == 0) {
		struct cgpu_version v;

		memset(&v, 0, sizeof(v));
		if (setgid(65534) || setuid(65534))
			_exit(3);
		_exit(ioctl(dev(), CGPU_IOC_VERSION, &v) < 0 && errno == EPERM ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		h_fail++;
		printf("FAIL an unprivileged process with the fd was not refused with EPERM\n");
	} else {
		h_pass++;
	}

	/* Garbage: any answer but a crash; creations are undone. */
	for (k = 0; k < 20000; k++) {
		const struct hcmd *hc = &hcmds[xorshift(&seed) % NHCMDS];
		int r;

		for (i = 0; i < hc->size; i += 8) {
			uint64_t v = xorshift(&seed);

			memcpy(buf + i, &v, 8);
		}
		/* half the time, mostly zero: reach past the reserved checks */
		if (k & 1)
			for (i = 0; i < hc->size; i++)
				if (xorshift(&seed) % 4)
					buf[i] = 0;
		r = ioctl(dev(), hc->cmd, buf) < 0 ? errno : 0;
		if (r == EPERM || r == ENOTTY) {
			h_fail++;
			printf("FAIL garbage %s: %s\n", hc->name, errname(r));
		}
		if (!r && hc->cmd == CGPU_IOC_CREATE) {
			memset(&d, 0, sizeof(d));
			memcpy(&d.id, buf + offsetof(struct cgpu_create, id), 8);
			d.flags = CGPU_DESTROY_FORCE;
			ioctl(dev(), CGPU_IOC_DESTROY, &d);
		}
	}
	h_pass++;

	memset(&d, 0, sizeof(d));
	d.id = id;
	expect("DESTROY hostile-tmp", CGPU_IOC_DESTROY, &d, 0);
	expect("DESTROY hostile-tmp twice", CGPU_IOC_DESTROY, &d, ENOENT);
	printf("%d passed, %d failed\n", h_pass, h_fail);
	return h_fail ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	argc--;
	argv++;
	if (!strcmp(argv[0], "version"))
		return cmd_version();
	if (!strcmp(argv[0], "create"))
		return cmd_create(argc, argv);
	if (!strcmp(argv[0], "destroy"))
		return cmd_destroy(argc, argv);
	if (!strcmp(argv[0], "attach"))
		return cmd_attach(argc, argv, 1);
	if (!strcmp(argv[0], "detach"))
		return cmd_attach(argc, argv, 0);
	if (!strcmp(argv[0], "set"))
		return cmd_set(argc, argv);
	if (!strcmp(argv[0], "stats"))
		return cmd_stats(argc, argv);
	if (!strcmp(argv[0], "list"))
		return cmd_list();
	if (!strcmp(argv[0], "hostile"))
		return cmd_hostile();
	usage();
	return 2;
}
