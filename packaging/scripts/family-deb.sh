# Units on Debian: deb-systemd-helper keeps the admin's enable/disable
# choice across upgrades (and works in a chroot, where it only writes the
# links); deb-systemd-invoke starts and stops, obeying policy-rc.d.
UNITS='cgpud.socket cgpud.service'

daemon_reload() {
	if systemd_running; then systemctl --system daemon-reload >/dev/null || true; fi
}

units_enable() {
	command -v deb-systemd-helper >/dev/null 2>&1 || return 0
	for u in $UNITS; do
		# Removes only a mask deb-systemd-helper made at removal.
		deb-systemd-helper unmask "$u" >/dev/null || true
		# was-enabled is true for a new install: enable; on upgrade it keeps
		# what the admin chose.
		if deb-systemd-helper --quiet was-enabled "$u"; then
			deb-systemd-helper enable "$u" >/dev/null || true
		else
			deb-systemd-helper update-state "$u" >/dev/null || true
		fi
	done
}

# After removal: masked so a unit file left behind cannot start; purge
# forgets the state.
units_removed() {
	command -v deb-systemd-helper >/dev/null 2>&1 || return 0
	for u in $UNITS; do deb-systemd-helper mask "$u" >/dev/null || true; done
}

units_purged() {
	command -v deb-systemd-helper >/dev/null 2>&1 || return 0
	for u in $UNITS; do
		deb-systemd-helper purge "$u" >/dev/null || true
		deb-systemd-helper unmask "$u" >/dev/null || true
	done
}

# Disabling on removal is deb-systemd-helper's mask and purge above.
units_disable() { :; }

# State and config go only on purge; the cgpu groups stay (files on
# shared storage or in images may carry their gids).
purge_state() {
	rm -rf /var/lib/cgpu /etc/cgpu /run/cgpu
}

# svc start|stop|restart UNIT...: only with systemd as PID 1.
svc() {
	systemd_running || return 0
	command -v deb-systemd-invoke >/dev/null 2>&1 || return 0
	deb-systemd-invoke "$@"
}
