# cgpu — the front door.  `make help` lists the targets; README.md's "Make
# targets" table says what each one is for.
#
#   make         the Go binaries, the kernel modules and the guest binaries,
#                as any user, with no apt: what is missing (kernel headers,
#                gcc, ...) fails and names `make deps`
#   make deps    installs the Debian packages the tests need (root; the only
#                target that installs anything; the test, demo and VM
#                targets call it)
#   make test    everything CI runs (scripts/run-tests)
#
# One file: the parts' targets used to sit in mk/*.mk fragments; they are
# sections below, in the order build, host tests, kernel checks, VM suites,
# packages, benchmarks.
SHELL := /bin/bash
.DEFAULT_GOAL := all
.DELETE_ON_ERROR:

ROOT       := $(CURDIR)
GO         ?= go
GOFLAGS    ?=
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)
# The one place for the Go link flags: stripped, and the version that
# `cgpud --version` and `cgpuctl version` report (-X is ignored by binaries
# that do not link internal/buildinfo). packaging/build asks for them with
# `make -s print-ldflags VERSION=...`.
LDFLAGS     = -s -w -X github.com/cgpu-dev/cgpu/internal/buildinfo.Version=$(VERSION)

# The one place for the kernel the modules build against: the running
# kernel when its headers are installed (/lib/modules/$(uname -r)/build),
# else Debian's newest packaged -amd64 kernel, the one the VM guest boots
# (tests/vm/run always builds the guest's modules against that one).
# KVER= or KDIR= on the command line overrides both.
HOST_KVER  := $(shell uname -r)
KVER       ?= $(if $(wildcard /lib/modules/$(HOST_KVER)/build),$(HOST_KVER),$(shell ls /lib/modules 2>/dev/null | grep -- '-amd64$$' | sort -V | tail -n 1))
KDIR       ?= /lib/modules/$(KVER)/build
KMOD_DIRS  := kmod tests/nvmock tests/bugmod

BIN        := $(ROOT)/build
GUEST_BIN  := $(ROOT)/build/guest/bin
GUEST_ROOT := $(ROOT)/build/guest/root
CHECKPATCH := $(ROOT)/build/tools/checkpatch/checkpatch.pl
# cgo's C flags for host builds: go-nvml's header marks NVML calls deprecated
# that it still wraps (packaging/build sets the same, with hardening).
HOST_CGO    = CGO_CFLAGS="$${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"
# Static binaries for the guest (its busybox userland has no libc).
GUEST_GO    = CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(GUEST_BIN)/
GUEST_TEST  = CGO_ENABLED=0 $(GO) test -c -trimpath -ldflags '$(LDFLAGS)'

# $(call need,TOOL...): fail unless every TOOL is on PATH, naming make deps.
need = @for t in $(1); do command -v $$t >/dev/null || \
	{ echo "make: $$t is not installed: run 'make deps' (as root)" >&2; exit 1; }; done
# need_kdir: fail unless the kernel headers are there.
need_kdir = @[ -d '$(KDIR)' ] || { echo "make: no kernel headers at $(KDIR) (KVER=$(KVER)):" \
	"run 'make deps' (as root; Debian's linux-headers-amd64) or set KDIR=" >&2; exit 1; }

.PHONY: all help print-ldflags deps clean

all: go-build modules guest-bins ## Go binaries (build/), kernel modules, guest binaries; no root, no apt

help: ## this list
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 24

print-ldflags: ## the Go link flags (for packaging/build)
	@echo '$(LDFLAGS)'

deps: ## install the Debian packages the build and tests need (root; idempotent)
	@scripts/install-deps

clean: ## remove build outputs
	rm -rf build
	@for d in $(KMOD_DIRS); do $(MAKE) -s -C $$d clean KDIR=$(KDIR) || true; done

# --- build -------------------------------------------------------------------

.PHONY: go-build cgpud cgpuctl modules guest guest-bins guest-daemon \
	guest-devfilter guest-cgroup guest-kernel-tests guest-runtime

go-build: cgpud cgpuctl ## compile every Go package; cgpud and cgpuctl for this host in build/
	$(HOST_CGO) $(GO) build $(GOFLAGS) ./...

cgpud: ## build cgpud for this host into build/cgpud (cgo on when gcc is there: NVML)
	@mkdir -p $(BIN)
	$(HOST_CGO) $(GO) build $(GOFLAGS) -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/cgpud ./daemon/cgpud

cgpuctl: ## build cgpuctl for this host into build/cgpuctl
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build $(GOFLAGS) -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/cgpuctl ./cgpuctl

modules: ## kernel modules (kmod, tests/nvmock, tests/bugmod) against KVER's headers, warnings as errors
	$(call need,gcc)
	$(need_kdir)
	@set -e; for d in $(KMOD_DIRS); do \
		echo "build: $$d against $(KVER)"; \
		$(MAKE) -s -C $$d KDIR=$(KDIR); \
	done

# What `make` builds for the guest; `make guest` (what tests/vm/run calls)
# adds the staged container runtime, which copies Debian's runc and busybox
# from this host and so needs `make deps` first.
guest-bins: guest-daemon guest-devfilter guest-cgroup guest-kernel-tests ## every binary the VM guest runs, into build/guest/bin
	$(call need,gcc)
	@mkdir -p $(GUEST_BIN)
	@$(MAKE) -s -C tests/fakecuda OUT=$(GUEST_BIN)
	@$(MAKE) -s -C tests/cgpuadm OUT=$(GUEST_BIN)
	@install -m 0755 tests/demo/cgpu-demo $(GUEST_BIN)/cgpu-demo
	@$(GUEST_GO) ./daemon/cgpud ./cgpuctl ./daemon/tools/nvinfo ./tests/containers/runtimebench

guest: guest-bins guest-runtime ## guest-bins, and runc with a container rootfs staged into build/guest/root

guest-daemon: ## apicall (one HTTP request over a Unix socket) and daemonbench for the guest
	@mkdir -p $(GUEST_BIN)
	@$(GUEST_GO) ./tests/apicall ./daemon/tools/daemonbench

guest-devfilter: ## the device-filter test binary for the VM guest (build/guest/bin/devfilter.test)
	@mkdir -p $(GUEST_BIN)
	@$(GUEST_TEST) -o $(GUEST_BIN)/devfilter.test ./daemon/internal/devfilter

guest-cgroup: ## the cgroup resolver/watcher test binary for the VM guest (build/guest/bin/cgroup.test)
	@mkdir -p $(GUEST_BIN)
	@$(GUEST_TEST) -o $(GUEST_BIN)/cgroup.test ./daemon/internal/cgroup

guest-kernel-tests: ## static test binaries of daemon/internal/kernel and daemon/internal/gpu for the guest
	@mkdir -p $(GUEST_BIN)
	@$(GUEST_TEST) -o $(GUEST_BIN)/kernel.test ./daemon/internal/kernel
	@$(GUEST_TEST) -o $(GUEST_BIN)/gpu.test ./daemon/internal/gpu

# Debian's runc (and its libraries) staged into build/guest/root, laid over
# the guest's / by tests/vm/run, with a shared busybox + fakecuda container
# rootfs; CGPU_CONTAINERD=1 / CGPU_PODMAN=1 add containerd / podman.
guest-runtime: guest-bins ## stage runc, its libraries and a busybox+fakecuda container rootfs into build/guest/root
	@tests/containers/stage $(GUEST_ROOT) $(GUEST_BIN)

# --- host tests --------------------------------------------------------------

.PHONY: go-test unit-test test cgpuctl-test daemon-test devfilter-test instance-test lint

go-test: ## Go unit tests (race detector)
	$(GO) test $(GOFLAGS) -race -count=1 ./...

unit-test: go-test

test: deps ## everything CI runs: unit tests, module build, both VM tiers
	@scripts/run-tests

cgpuctl-test: ## cgpuctl's unit tests: api/v1 client, CLI tables (golden), hook, integration files
	$(GO) test $(GOFLAGS) -count=1 ./daemon/api/v1/ ./cgpuctl/internal/cli/... ./cgpuctl/internal/hook/... ./internal/integration/...

daemon-test: ## cgpud's unit tests: API server, config, daemon wiring
	$(GO) test $(GOFLAGS) -count=1 ./daemon/internal/server/... ./daemon/internal/config/... ./daemon/internal/daemon/...

devfilter-test: ## device-filter unit tests on the host (golden programs, resolution)
	$(GO) test $(GOFLAGS) -count=1 ./daemon/internal/devfilter/...

INSTANCE_PKGS = ./daemon/internal/instance/... ./daemon/internal/state/... ./daemon/internal/cgroup/...

instance-test: ## unit tests of the instance Manager, state store and cgroup watcher (race detector)
	$(GO) test $(GOFLAGS) -race -count=1 $(INSTANCE_PKGS)

# Shell scripts that are shellcheck-clean: the scripts, the VM harness and
# these suites (the cgpu, nvmock and discovery suites are not yet).
LINT_SUITES := harness daemon containers runtime kclient devfilter cgroup

lint: ## go vet, gofmt, shellcheck
	$(call need,shellcheck)
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	shellcheck -x scripts/* tests/vm/run tests/vm/negative-check tests/vm/debug-kernel \
		tests/vm/lib.sh tests/demo/cgpu-demo \
		tests/containers/stage tests/containers/cgpu-bundle tests/containers/bench-runtime \
		tests/pkg/* packaging/build packaging/pkg-version packaging/install-tree \
		$(foreach s,$(LINT_SUITES),tests/vm/suites/$(s)/*.sh)

# --- kernel checks -----------------------------------------------------------

.PHONY: check

$(CHECKPATCH):
	@scripts/get-checkpatch $(dir $@)

check: $(CHECKPATCH) ## sparse (C=2) and checkpatch --strict on the kernel code
	$(call need,gcc sparse)
	$(need_kdir)
	@set -e; for d in $(KMOD_DIRS); do \
		echo "check: sparse $$d"; \
		$(MAKE) -s -C $$d KDIR=$(KDIR) clean; \
		out=$$($(MAKE) -s -C $(KDIR) M=$(ROOT)/$$d C=2 modules 2>&1 || echo "error: sparse build of $$d failed"); \
		$(MAKE) -s -C $$d KDIR=$(KDIR) clean; \
		if grep -qE 'warning:|error:' <<<"$$out"; then echo "$$out"; exit 1; fi; \
	done
	@set -e; files=$$(git ls-files $(KMOD_DIRS) | grep -E '\.[ch]$$' | sort -u); \
	echo "check: checkpatch --strict on $$(echo $$files | wc -w) files"; \
	$(CHECKPATCH) --strict --no-tree --quiet --show-types -f $$files; \
	echo "check: clean"

# --- VM suites (tests/vm/run builds `make guest` and the modules itself) -------

.PHONY: vm-test vm-test-debug negative-check demo cgpuctl-vm-test daemon-vm-test \
	devfilter-vm-test cgroup-vm-test kclient-vm-test containers-vm-test \
	containerd-vm-test podman-vm-test

vm-test: deps guest ## kernel suites in the VM on Debian's packaged kernel
	tests/vm/run --kernel packaged --suite all

vm-test-debug: deps guest ## kernel suites on the debug kernel (KASAN, lockdep, kmemleak)
	tests/vm/run --kernel debug --suite all

negative-check: deps ## prove the debug harness reports planted bugs
	tests/vm/negative-check

demo: deps guest ## boot the guest with two mock GPUs and show what a CUDA client sees
	@scripts/demo

cgpuctl-vm-test: deps guest ## cgpuctl and its OCI hook against the real cgpud in the VM (tests/vm/suites/runtime)
	tests/vm/run --suite runtime

daemon-vm-test: deps guest ## cgpud end to end in the VM on nvmock.ko + cgpu.ko
	tests/vm/run --suite daemon

devfilter-vm-test: deps guest ## device-filter behaviour in the VM (real cgroups, nvmock.ko)
	tests/vm/run --suite devfilter

cgroup-vm-test: deps guest ## cgroup ids and removal watching on a real cgroup2 mount, in the VM
	tests/vm/run --suite cgroup

kclient-vm-test: deps guest ## the Go kernel client against the real cgpu.ko in the VM
	tests/vm/run --suite kclient

containers-vm-test: deps guest ## containers end to end in the VM: runc, the cgpuctl OCI hook, cgpud, cgpu.ko
	tests/vm/run --suite containers

containerd-vm-test: deps ## the containers suite with Debian's containerd staged too (CGPU_CONTAINERD=1, +83 MB initramfs)
	CGPU_CONTAINERD=1 tests/vm/run --suite containers

podman-vm-test: deps ## the containers suite with Debian's podman staged too (CGPU_PODMAN=1, +43 MB initramfs)
	CGPU_PODMAN=1 tests/vm/run --suite containers

# --- packages (see packaging/README.md) ------------------------------------------

# <v>: $(VERSION) (git describe) made a valid deb/rpm version; -1 is the
# packaging revision (deb) / release (rpm). Both taken once per make run
# (VERSION is re-read at each use, and a commit landing between `packages`
# and a check would name another file).
PKG_DESCRIBE := $(VERSION)
PKG_VERSION := $(shell packaging/pkg-version '$(PKG_DESCRIBE)' 2>/dev/null)
PKG_DEB = dist/cgpu_$(PKG_VERSION)-1_amd64.deb
PKG_RPM = dist/cgpu-$(PKG_VERSION)-1.x86_64.rpm

.PHONY: packages packages-check packages-install-test packages-vm-test install

packages: ## the .deb and .rpm in dist/ (version from git describe; nfpm v2.48.0, `go tool nfpm`)
	@rm -f dist/cgpu_*_amd64.deb dist/cgpu-*.x86_64.rpm
	@CGPU_PKG_VERSION='$(PKG_VERSION)' packaging/build '$(PKG_DESCRIBE)' dist

packages-check: deps packages ## systemd-analyze verify, lintian, rpm -qlp against the expected list, rpmlint
	@tests/pkg/check '$(PKG_DEB)' '$(PKG_RPM)'

packages-install-test: deps packages ## install, upgrade and purge the .deb in a cached Debian 12 root
	@tests/pkg/install-test '$(PKG_DESCRIBE)' '$(PKG_DEB)'

packages-vm-test: deps packages ## boot the root with the .deb under systemd (QEMU): READY, cgpuctl status, upgrade with DKMS, purge
	@tests/pkg/vm-test '$(PKG_DESCRIBE)' '$(PKG_DEB)'

install: ## from source: binaries, units, config, DKMS source and module, as the packages lay them out (DESTDIR= for a staging root)
	@CGPU_STAGE_ONLY=1 CGPU_PKG_VERSION='$(PKG_VERSION)' packaging/build '$(PKG_DESCRIBE)' dist
	@packaging/install-tree '$(DESTDIR)'

# --- benchmarks ------------------------------------------------------------------

.PHONY: bench bench-hook bench-daemon bench-daemon-vm bench-instance bench-runtime

bench: deps guest ## benchmarks in the VM; `bench: NAME VALUE UNIT` lines at the end
	@scripts/bench

bench-hook: cgpuctl ## the OCI hook's own run (stdin state -> daemon -> exit) against `true`, on the host
	$(GO) run ./tests/hookbench -cgpuctl $(BIN)/cgpuctl -n $(or $(HOOKBENCH_N),300)

bench-daemon: ## host benchmark of cgpud's API stack: create+destroy rates, p50/p99, fsync floor, RSS
	$(GO) run ./daemon/tools/daemonbench

bench-daemon-vm: deps guest ## the daemon benchmark in the guest on the real module, 8 mock GPUs (nvmock.ko's most)
	tests/vm/run --timeout 900 --exec '. /opt/cgpu/lib.sh && reload_nvmock num_gpus=8 && daemonbench -real -seq $(or $(BENCH_DAEMON_N),150) -conc $(or $(BENCH_DAEMON_CONC),600) -fsync 150'

bench-instance: ## Manager create+destroy, 1 and 32 clients, vs one fsync'd bbolt write (state on /var/tmp)
	CGPU_BENCH_DIR=$${CGPU_BENCH_DIR:-/var/tmp} $(GO) test $(GOFLAGS) -run '^$$' -bench . -benchtime 2s ./daemon/internal/instance/

bench-runtime: deps guest ## runc container start in the VM with and without the cgpu hook: p50/p99, ratios, `bench:` lines
	tests/vm/run --timeout 2400 --exec 'cgpu-bench-runtime $(or $(BENCH_RUNTIME_N),50)'
