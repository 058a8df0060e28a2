# cgpuctl: the host binary, the hook benchmark.
CGPUCTL_BIN := $(ROOT)/build/cgpuctl

.PHONY: cgpuctl bench-hook

cgpuctl: ## build cgpuctl for this host into build/cgpuctl
	@mkdir -p $(dir $(CGPUCTL_BIN))
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X github.com/cgpu-dev/cgpu/internal/buildinfo.Version=$(VERSION)" -o $(CGPUCTL_BIN) ./cgpuctl

bench-hook: cgpuctl ## the OCI hook's own run (stdin state -> daemon -> exit) against `true`, on the host
	$(GO) run ./tests/hookbench -cgpuctl $(CGPUCTL_BIN) -n $(or $(HOOKBENCH_N),300)

.PHONY: cgpuctl-test cgpuctl-vm-test

cgpuctl-test: ## cgpuctl's unit tests: api/v1 client, CLI tables (golden), hook, integration files
	$(GO) test $(GOFLAGS) -count=1 ./daemon/api/v1/ ./cgpuctl/internal/cli/... ./cgpuctl/internal/hook/... ./internal/integration/...

cgpuctl-vm-test: deps guest ## cgpuctl and its OCI hook against the real cgpud in the VM (tests/vm/suites/runtime)
	tests/vm/run --suite runtime
