# Units on RPM distributions: systemctl, as the %systemd_* macros use it.
daemon_reload() {
	if systemd_running; then systemctl --system daemon-reload >/dev/null || true; fi
}

# Enabled at the first install only; an upgrade keeps the admin's choice.
# systemctl enable is a file operation and works in a chroot too.
units_enable() {
	[ "$1" = 1 ] || return 0
	systemctl --no-reload enable cgpud.socket cgpud.service >/dev/null 2>&1 || say "systemctl enable cgpud failed"
}

units_disable() {
	systemctl --no-reload disable cgpud.socket cgpud.service >/dev/null 2>&1 || true
}

# RPM has no purge: an erase keeps /var/lib/cgpu, and a changed
# cgpud.toml is kept as cgpud.toml.rpmsave.
units_removed() { :; }
units_purged() { :; }
purge_state() { :; }

svc() {
	systemd_running || return 0
	systemctl "$@"
}
