# Packages: the .deb and the .rpm (nfpm v2.48.0, `go tool nfpm`), their
# checks, and the install test in a Debian 12 root. See packaging/README.md.
#   make packages                 dist/cgpu_<v>-1_amd64.deb, dist/cgpu-<v>-1.x86_64.rpm
#   make packages-check           unit files, lintian, rpm listing, rpmlint
#   make packages-install-test    dpkg -i / upgrade / purge in a bookworm root
#   make packages-vm-test         the same root booted with systemd as PID 1

# <v>: $(VERSION) (git describe) made a valid deb/rpm version; -1 is the
# packaging revision (deb) / release (rpm). Both taken once per make run
# (the Makefile's VERSION is re-read at each use, and a commit landing
# between `packages` and a check would name another file).
PKG_DESCRIBE := $(VERSION)
PKG_VERSION := $(shell packaging/pkg-version '$(PKG_DESCRIBE)' 2>/dev/null)
PKG_DEB = dist/cgpu_$(PKG_VERSION)-1_amd64.deb
PKG_RPM = dist/cgpu-$(PKG_VERSION)-1.x86_64.rpm

.PHONY: packages packages-check packages-install-test packages-vm-test install

packages: ## the .deb and .rpm in dist/ (version from git describe)
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
