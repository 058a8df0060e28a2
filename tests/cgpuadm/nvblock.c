// SPDX-License-Identifier: GPL-2.0
/*
 * nvblock: an NV_ESC_RM_ALLOC whose argument sits in a userfaultfd page, so
 * that the call waits in the kernel (in cgpu's wrapper, which reads the
 * argument first) until the page is supplied SECONDS later.  It stands in
 * for a driver call that takes long, to see what waits on it.
 *
 *   nvblock SECONDS
 *
 * Prints "blocked: ..." once the call waits, "returned ..." when it is back.
 * Exit 0, 77 when the kernel has no userfaultfd, 1 on errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nv_abi.h"

static int uffd;
static long page_size;
static unsigned int hold_s;

static void die(const char *what)
{
	fprintf(stderr, "nvblock: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Waits for the fault, holds it, then supplies a zero page. */
static void *supplier(void *arg)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	struct uffdio_zeropage z;
	struct uffd_msg msg;

	(void)arg;
	if (poll(&pfd, 1, -1) != 1)
		die("poll userfaultfd");
	if (read(uffd, &msg, sizeof(msg)) != sizeof(msg))
		die("read userfaultfd");
	if (msg.event != UFFD_EVENT_PAGEFAULT) {
		fprintf(stderr, "nvblock: unexpected userfaultfd event %u\n", msg.event);
		exit(1);
	}
	printf("blocked: the ioctl waits in the kernel for %u s\n", hold_s);
	fflush(stdout);
	sleep(hold_s);
	memset(&z, 0, sizeof(z));
	z.range.start = msg.arg.pagefault.address & ~((uint64_t)page_size - 1);
	z.range.len = page_size;
	if (ioctl(uffd, UFFDIO_ZEROPAGE, &z))
		die("UFFDIO_ZEROPAGE");
	return NULL;
}

int main(int argc, char **argv)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	pthread_t thread;
	void *buf;
	long ret;
	int fd;

	if (argc != 2 || atoi(argv[1]) <= 0) {
		fprintf(stderr, "usage: nvblock SECONDS\n");
		return 2;
	}
	hold_s = (unsigned int)atoi(argv[1]);
	page_size = sysconf(_SC_PAGESIZE);
	fd = open("/dev/nvidiactl", O_RDWR);
	if (fd < 0)
		die("open /dev/nvidiactl");
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0) {
		printf("no userfaultfd in this kernel: %s\n", strerror(errno));
		return 77;
	}
	if (ioctl(uffd, UFFDIO_API, &api))
		die("UFFDIO_API");
	buf = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)buf;
	reg.range.len = page_size;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	if (pthread_create(&thread, NULL, supplier, NULL))
		die("pthread_create");
	ret = ioctl(fd, _IOC(_IOC_READ | _IOC_WRITE, NVA_IOCTL_MAGIC,
			     NVA_ESC_RM_ALLOC, sizeof(struct nva_os21_alloc)), buf);
	printf("returned %ld (status 0x%x) once the page came\n", ret,
	       ((struct nva_os21_alloc *)buf)->status);
	pthread_join(thread, NULL);
	return 0;
}
