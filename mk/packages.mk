# Packages: the .deb and the .rpm (nfpm v2.48.0, `go tool nfpm`), their
# checks, and the install test in a Debian 12 root. See packaging/README.md.
#   make packages                 dist/cgpu_<v>-1_amd64.deb, dist/cgpu-<v>-1.x86_64.rpm
#   make packages-check           unit files, lintian, rpm listing, rpmlint
#   make packages-install-test    dpkg -i / upgrade / purge in a bookworm root

# <v>: $(VERSION) (git describe) made a valid deb/rpm version; -1 is the
# packaging revision (deb) / release (rpm).
PKG_VERSION = $(shell packaging/pkg-version '$(VERSION)')
PKG_DEB = dist/cgpu_$(PKG_VERSION)-1_amd64.deb
PKG_RPM = dist/cgpu-$(PKG_VERSION)-1.x86_64.rpm

.PHONY: packages packages-check packages-install-test

packages: ## the .deb and .rpm in dist/ (version from git describe)
	@rm -f dist/cgpu_*_amd64.deb dist/cgpu-*.x86_64.rpm
	@packaging/build '$(VERSION)' dist

packages-check: deps packages ## systemd-analyze verify, lintian, rpm -qlp against the expected list, rpmlint
	@tests/pkg/check '$(PKG_DEB)' '$(PKG_RPM)'

packages-install-test: deps packages ## install, upgrade and purge the .deb in a cached Debian 12 root
	@tests/pkg/install-test '$(VERSION)' '$(PKG_DEB)'
