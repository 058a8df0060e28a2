# cgpud: the daemon's host tests, its VM suite and its benchmark.
#   make daemon-test       unit tests of the server, config and wiring
#   make daemon-vm-test    the real static cgpud on nvmock.ko + cgpu.ko
#   make bench-daemon      the host benchmark (kernel.Fake, everything else real)

GUEST_EXTRA += guest-daemon

.PHONY: guest-daemon daemon-test daemon-vm-test bench-daemon

guest-daemon: ## apicall (one HTTP request over a Unix socket) for the daemon's VM suite
	@mkdir -p $(GUEST_BIN)
	@CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(GUEST_BIN)/ ./tests/apicall

daemon-test: ## cgpud's unit tests: API server, config, daemon wiring
	$(GO) test $(GOFLAGS) -count=1 ./internal/server/... ./internal/config/... ./internal/daemon/...

daemon-vm-test: deps guest ## cgpud end to end in the VM on nvmock.ko + cgpu.ko
	tests/vm/run --suite daemon

bench-daemon: ## host benchmark of cgpud's API stack: create+destroy rates, p50/p99, fsync floor, RSS
	$(GO) run ./tests/daemonbench
