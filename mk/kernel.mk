# The daemon's kernel client and GPU discovery: their test binaries for the
# VM guest, and the suite that runs them there.

GUEST_EXTRA += guest-kernel-tests

.PHONY: guest-kernel-tests kclient-vm-test

guest-kernel-tests: ## static test binaries of daemon/internal/kernel and daemon/internal/gpu for the guest
	@mkdir -p $(GUEST_BIN)
	@CGO_ENABLED=0 $(GO) test -c -trimpath -ldflags '-s -w' -o $(GUEST_BIN)/kernel.test ./daemon/internal/kernel
	@CGO_ENABLED=0 $(GO) test -c -trimpath -ldflags '-s -w' -o $(GUEST_BIN)/gpu.test ./daemon/internal/gpu

kclient-vm-test: deps guest ## the Go kernel client against the real cgpu.ko in the VM
	tests/vm/run --suite kclient
