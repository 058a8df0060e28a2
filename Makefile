# cgpu — the front door.  `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := all

ROOT       := $(CURDIR)
GO         ?= go
GOFLAGS    ?=
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)
# The guest kernel: Debian's packaged one, never the host's `uname -r`.
KVER       ?= $(shell ls /lib/modules 2>/dev/null | grep -- '-amd64$$' | sort -V | tail -n 1)
KDIR       ?= /lib/modules/$(KVER)/build
GUEST_BIN  := $(ROOT)/build/guest/bin
KMOD_DIRS  := tests/nvmock tests/bugmod $(if $(wildcard kmod/Kbuild),kmod)
CHECKPATCH := $(ROOT)/build/tools/checkpatch/checkpatch.pl

.PHONY: all help deps go-build go-test modules guest test unit-test vm-test \
	vm-test-debug negative-check bench lint check demo clean

all: go-build modules guest ## build everything that builds on this host

help: ## this list
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 24

deps: ## install the Debian packages the build and tests need (idempotent)
	@scripts/install-deps

go-build: ## build the Go packages
	$(GO) build $(GOFLAGS) ./...

go-test: ## Go unit tests
	$(GO) test $(GOFLAGS) -count=1 ./...

unit-test: go-test

modules: deps ## kernel modules against Debian's headers, warnings as errors
	@set -e; for d in $(KMOD_DIRS); do \
		echo "build: $$d against $(KVER)"; \
		$(MAKE) -s -C $$d KDIR=$(KDIR); \
	done

guest: ## static binaries for the VM guest, in build/guest/bin
	@mkdir -p $(GUEST_BIN)
	@$(MAKE) -s -C tests/fakecuda OUT=$(GUEST_BIN)
	@CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(GUEST_BIN)/ ./daemon/tools/nvinfo
	@if [ -f tests/cgpuadm/Makefile ]; then $(MAKE) -s -C tests/cgpuadm OUT=$(GUEST_BIN); fi
	@install -m 0755 tests/demo/cgpu-demo $(GUEST_BIN)/cgpu-demo
	@for b in daemon/cgpud cgpuctl; do \
		if [ -f $$b/main.go ]; then CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X github.com/cgpu-dev/cgpu/internal/buildinfo.Version=$(VERSION)" -o $(GUEST_BIN)/ ./$$b; fi; \
	done
	@$(if $(strip $(GUEST_EXTRA)),$(MAKE) -s $(GUEST_EXTRA))

vm-test: deps guest ## kernel suites in the VM on Debian's packaged kernel
	tests/vm/run --kernel packaged --suite all

vm-test-debug: deps guest ## kernel suites on the debug kernel (KASAN, lockdep, kmemleak)
	tests/vm/run --kernel debug --suite all

negative-check: deps ## prove the debug harness reports planted bugs
	tests/vm/negative-check

test: deps ## everything CI runs: unit tests, module build, both VM tiers
	@scripts/run-tests

bench: deps guest ## benchmarks in the VM; `bench: NAME VALUE UNIT` lines at the end
	@scripts/bench

# Shell scripts of the daemon, runtime and packaging parts (all shellcheck-clean).
LINT_SH = $(wildcard tests/containers/stage tests/containers/cgpu-bundle \
	tests/containers/bench-runtime tests/pkg/* \
	packaging/build packaging/pkg-version packaging/install-tree \
	$(foreach d,daemon containers runtime kclient devfilter cgroup,tests/vm/suites/$(d)/*.sh))

lint: ## go vet, gofmt, shellcheck
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	@if command -v shellcheck >/dev/null; then shellcheck -x scripts/* tests/vm/run tests/vm/negative-check tests/vm/debug-kernel tests/vm/lib.sh tests/demo/cgpu-demo $(LINT_SH); \
	else echo "lint: shellcheck not installed, skipping shell scripts (apt-get install shellcheck)"; fi

$(CHECKPATCH):
	@scripts/get-checkpatch $(dir $@)

check: deps $(CHECKPATCH) ## sparse (C=2) and checkpatch --strict on the kernel code
	@set -e; for d in $(KMOD_DIRS); do \
		echo "check: sparse $$d"; \
		$(MAKE) -s -C $$d KDIR=$(KDIR) clean; \
		out=$$($(MAKE) -s -C $(KDIR) M=$(ROOT)/$$d C=2 modules 2>&1 || echo "error: sparse build of $$d failed"); \
		$(MAKE) -s -C $$d KDIR=$(KDIR) clean; \
		if grep -qE 'warning:|error:' <<<"$$out"; then echo "$$out"; exit 1; fi; \
	done
	@set -e; files=$$(git ls-files kmod $(KMOD_DIRS) | grep -E '\.[ch]$$' | sort -u); \
	echo "check: checkpatch --strict on $$(echo $$files | wc -w) files"; \
	$(CHECKPATCH) --strict --no-tree --quiet --show-types -f $$files; \
	echo "check: clean"

demo: deps guest ## boot the guest with two mock GPUs and show what a CUDA client sees
	@scripts/demo

# Each part may add its own targets in mk/<part>.mk; a part that needs more
# binaries in the guest appends its target to GUEST_EXTRA (they must write
# into $(GUEST_BIN)).
GUEST_EXTRA :=
-include $(wildcard mk/*.mk)

clean: ## remove build outputs
	rm -rf build
	@for d in $(KMOD_DIRS); do $(MAKE) -s -C $$d clean KDIR=$(KDIR) || true; done
