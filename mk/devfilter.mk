# daemon/internal/devfilter: the eBPF device filter. Its behaviour tests need root,
# cgroup2, bpffs and nvmock.ko, so they run in the VM guest from a static
# test binary (tests/vm/suites/devfilter runs it with CGPU_VM=1).

GUEST_EXTRA += guest-devfilter

.PHONY: guest-devfilter devfilter-test devfilter-vm-test

guest-devfilter: ## the device-filter test binary for the VM guest (build/guest/bin/devfilter.test)
	@mkdir -p $(GUEST_BIN)
	@CGO_ENABLED=0 $(GO) test -c -trimpath -o $(GUEST_BIN)/devfilter.test ./daemon/internal/devfilter

devfilter-test: ## device-filter unit tests on the host (golden programs, resolution)
	$(GO) test $(GOFLAGS) -count=1 ./daemon/internal/devfilter/...

devfilter-vm-test: deps guest ## device-filter behaviour in the VM (real cgroups, nvmock.ko)
	tests/vm/run --suite devfilter
