# cgpud's core: instance Manager, state store, cgroup resolver/watcher.
#   make instance-test    unit tests (race detector), as a normal user
#   make bench-instance   Manager-level create+destroy rates against the fsync floor
#   make cgroup-vm-test   daemon/internal/cgroup on the guest's real cgroup2 mount

GUEST_EXTRA += guest-cgroup

.PHONY: instance-test bench-instance guest-cgroup cgroup-vm-test

INSTANCE_PKGS = ./daemon/internal/instance/... ./daemon/internal/state/... ./daemon/internal/cgroup/...

instance-test: ## unit tests of the instance Manager, state store and cgroup watcher (race detector)
	$(GO) test $(GOFLAGS) -race -count=1 $(INSTANCE_PKGS)

bench-instance: ## Manager create+destroy, 1 and 32 clients, vs one fsync'd bbolt write (state on /var/tmp)
	CGPU_BENCH_DIR=$${CGPU_BENCH_DIR:-/var/tmp} $(GO) test $(GOFLAGS) -run '^$$' -bench . -benchtime 2s ./daemon/internal/instance/

guest-cgroup: ## the cgroup resolver/watcher test binary for the VM guest (build/guest/bin/cgroup.test)
	@mkdir -p $(GUEST_BIN)
	@CGO_ENABLED=0 $(GO) test -c -trimpath -o $(GUEST_BIN)/cgroup.test ./daemon/internal/cgroup

cgroup-vm-test: deps guest ## cgroup ids and removal watching on a real cgroup2 mount, in the VM
	tests/vm/run --suite cgroup
