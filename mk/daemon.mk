# cgpud: the daemon's host tests, its VM suite and its benchmark.
#   make daemon-test       unit tests of the server, config and wiring
#   make daemon-vm-test    the real static cgpud on nvmock.ko + cgpu.ko
#   make bench-daemon      the host benchmark (kernel.Fake, everything else real)
#   make bench-daemon-vm   the same in the guest on cgpu.ko, eBPF filters, cgroups

GUEST_EXTRA += guest-daemon

.PHONY: guest-daemon daemon-test daemon-vm-test bench-daemon bench-daemon-vm

guest-daemon: ## apicall (one HTTP request over a Unix socket) and daemonbench for the guest
	@mkdir -p $(GUEST_BIN)
	@CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(GUEST_BIN)/ ./tests/apicall ./daemon/tools/daemonbench

daemon-test: ## cgpud's unit tests: API server, config, daemon wiring
	$(GO) test $(GOFLAGS) -count=1 ./daemon/internal/server/... ./daemon/internal/config/... ./daemon/internal/daemon/...

daemon-vm-test: deps guest ## cgpud end to end in the VM on nvmock.ko + cgpu.ko
	tests/vm/run --suite daemon

bench-daemon: ## host benchmark of cgpud's API stack: create+destroy rates, p50/p99, fsync floor, RSS
	$(GO) run ./daemon/tools/daemonbench

bench-daemon-vm: deps guest ## the daemon benchmark in the guest on the real module, 8 mock GPUs (nvmock.ko's most)
	tests/vm/run --timeout 900 --exec '. /opt/cgpu/lib.sh && reload_nvmock num_gpus=8 && daemonbench -real -seq $(or $(BENCH_DAEMON_N),150) -conc $(or $(BENCH_DAEMON_CONC),600) -fsync 150'
