# Shared by the maintainer scripts of the .deb and the .rpm; packaging/build
# pastes it, then family-deb.sh or family-rpm.sh (what differs between the
# families: units, purge), at the top of each one and puts the package version in
# place of @PKG_VERSION@. Debian passes words (install, upgrade, configure, remove,
# purge, ...), RPM passes how many copies will be installed after the step
# (%pre/%post: 1 install, 2 upgrade; %preun/%postun: 0 erase, 1 upgrade).

CGPU_VERSION='@PKG_VERSION@'
CGPU_PROC=/proc/cgpu_km

say() { echo "cgpu: $*" >&2; }

# systemd is PID 1 here (not a chroot, a container build or an image build):
# the test deb-systemd-helper and rpm's %systemd macros make too.
systemd_running() { [ -d /run/systemd/system ]; }

# Loaded cgpu.ko's instances: /proc/cgpu_km/<gpu>/<instance>/ directories.
cgpu_instances() {
	[ -d "$CGPU_PROC" ] || return 0
	for g in "$CGPU_PROC"/*/; do
		[ -d "$g" ] || continue
		for i in "$g"*/; do
			[ -d "$i" ] && echo "${i%/}"
		done
	done
}

module_loaded() { [ -d /sys/module/cgpu ]; }

# Refuses, with how to drain, when a loaded cgpu.ko still has instances.
refuse_if_instances() {
	module_loaded || return 0
	insts=$(cgpu_instances)
	[ -z "$insts" ] && return 0
	n=$(echo "$insts" | wc -l)
	say "refusing to $1: the loaded cgpu module has $n instance(s):"
	echo "$insts" | sed 's|^|cgpu:   |' >&2
	say "containers with GPU memory slices are running; replacing or removing"
	say "the module under them would drop their isolation. Drain the node first:"
	say "  kubectl drain <node> (or stop those containers with your runtime),"
	say "  then check 'cgpuctl instance ls' lists nothing, and $1 again."
	return 1
}

# The kernels DKMS should build for: the running one and every one whose
# headers are installed (a chroot or image build runs another kernel).
dkms_kernels() {
	{
		uname -r
		for b in /lib/modules/*/build; do
			[ -e "$b/Makefile" ] && basename "$(dirname "$b")"
		done
	} | sort -u
}

dkms_install() {
	if ! command -v dkms >/dev/null 2>&1; then
		say "dkms is not installed: the module is not built (install dkms, then: dkms install cgpu/$CGPU_VERSION)"
		return 0
	fi
	dkms status -m cgpu -v "$CGPU_VERSION" 2>/dev/null | grep . >/dev/null ||
		dkms add -m cgpu -v "$CGPU_VERSION" || return 1
	for k in $(dkms_kernels); do
		if [ ! -e "/lib/modules/$k/build/Makefile" ]; then
			say "no headers for kernel $k: cgpu is not built for it (install linux-headers-$k; DKMS builds it then)"
			continue
		fi
		# A failed build is reported and does not fail the package: the
		# daemon reports the missing module and the package can be fixed
		# by installing headers and running dkms install again.
		dkms install -m cgpu -v "$CGPU_VERSION" -k "$k" ||
			say "DKMS could not build cgpu $CGPU_VERSION for $k; see /var/lib/dkms/cgpu/$CGPU_VERSION/build/make.log"
	done
	return 0
}

dkms_remove() {
	command -v dkms >/dev/null 2>&1 || return 0
	dkms status -m cgpu -v "$CGPU_VERSION" 2>/dev/null | grep . >/dev/null || return 0
	dkms remove -m cgpu -v "$CGPU_VERSION" --all || say "dkms remove cgpu/$CGPU_VERSION failed"
	return 0
}

# The groups of sysusers.d/cgpu.conf; groupadd where systemd-sysusers is
# missing (containers, chroots without systemd).
add_group() {
	if command -v systemd-sysusers >/dev/null 2>&1; then
		systemd-sysusers cgpu.conf && return 0
	fi
	for g in cgpu cgpu-admin; do
		getent group "$g" >/dev/null || groupadd -r "$g"
	done
}

load_module() {
	systemd_running || return 0
	module_loaded && return 0
	modprobe cgpu || say "modprobe cgpu failed; cgpud reports why the module is missing"
	return 0
}

# Unloads cgpu.ko when no instance is left; else says why it stays.
unload_module() {
	module_loaded || return 0
	if [ -n "$(cgpu_instances)" ]; then
		say "cgpu.ko stays loaded: instances exist (it unloads at the next reboot or by 'rmmod cgpu' after a drain)"
		return 0
	fi
	rmmod cgpu || say "rmmod cgpu failed; the module stays loaded until reboot"
	return 0
}
