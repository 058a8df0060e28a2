# Container runtimes in the VM guest: Debian's runc (and its libraries)
# staged into build/guest/root, a shared busybox + fakecuda container rootfs,
# the end-to-end containers suite and the container start benchmark.
#   make containers-vm-test   runc + the cgpuctl hook + cgpud, end to end
#   make containerd-vm-test   the same suite with containerd staged (opt-in: 83 MB)
#   make podman-vm-test       the same suite with podman staged (opt-in: 43 MB)
#   make bench-runtime        container start latency with and without the hook

GUEST_ROOT := $(ROOT)/build/guest/root

GUEST_EXTRA += guest-runtime

.PHONY: guest-runtime containers-vm-test containerd-vm-test podman-vm-test bench-runtime

guest-runtime: ## stage runc, its libraries and a busybox+fakecuda container rootfs into build/guest/root
	@CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(GUEST_BIN)/ ./tests/containers/runtimebench
	@tests/containers/stage $(GUEST_ROOT) $(GUEST_BIN)

containers-vm-test: deps guest ## containers end to end in the VM: runc, the cgpuctl OCI hook, cgpud, cgpu.ko
	tests/vm/run --suite containers

containerd-vm-test: deps ## the containers suite with Debian's containerd staged too (CGPU_CONTAINERD=1, +83 MB initramfs)
	CGPU_CONTAINERD=1 tests/vm/run --suite containers

podman-vm-test: deps ## the containers suite with Debian's podman staged too (CGPU_PODMAN=1, +43 MB initramfs)
	CGPU_PODMAN=1 tests/vm/run --suite containers

bench-runtime: deps guest ## runc container start in the VM with and without the cgpu hook: p50/p99, ratios, `bench:` lines
	tests/vm/run --timeout 2400 --exec 'cgpu-bench-runtime $(or $(BENCH_RUNTIME_N),50)'
