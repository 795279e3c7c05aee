#!/usr/bin/env bash
# The package test (meson suite 'packaging'), on Debian 12 as root:
#
#   meson test -C build --suite packaging --print-errorlogs
#   packaging/test-packages.sh                 (the same, by hand)
#
# 1. copies the source tree to a temporary folder, makes packaging/debian its
#    debian/ there (the repository never has a debian/ at its root) and runs
#    dpkg-buildpackage -us -uc -b; lintian must report no error or warning;
# 2. installs the .deb on this machine and checks the installed files, the
#    maglb group, the units (systemd-analyze verify), the man pages, the
#    example configs (maglb-dataplane and maglb-syncd --check-config,
#    corosync -t) and hooks (they refuse an unknown role), runs the
#    installed dataplane with its unit's capabilities only (no hugepages, a
#    net_null port) while a maglb group member asks it
#    with maglbctl, then the installed maglb-syncd with its unit's
#    capabilities only, in a network namespace of its own (no corosync, no
#    dataplane to reach): it must stay up, answer maglbctl and reload;
# 3. builds the RPM with Debian's rpm (rpmbuild --nodeps) and checks its
#    file list, scripts and dependencies.
#
# Cleanup, even on failure: the package purged, the maglb group deleted if
# this test made it, the test dataplane and syncd stopped, the temporary
# folder gone (MAGLB_PACKAGES_KEEP=1 keeps it). Installs its own tools when
# missing: dpkg-dev debhelper lintian rpm systemd man-db corosync iproute2.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8

src=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n "s/^ *version: '\([^']*\)',\$/\1/p" "$src/meson.build" | head -n 1)
arch=$(dpkg --print-architecture)
unitdir=/lib/systemd/system   # set from systemd's pkg-config file below
tmp=
deb=
dataplane_pid=
syncd_pid=
group_made=no
installed=no
checks=0

log() { printf '== %s\n' "$*"; }
ok() { checks=$((checks + 1)); printf 'ok %d - %s\n' "$checks" "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

cleanup() {
	local rc=$?

	set +e
	if [ -n "$dataplane_pid" ]; then
		kill "$dataplane_pid" 2>/dev/null
		wait "$dataplane_pid" 2>/dev/null
	fi
	if [ -n "$syncd_pid" ]; then
		kill "$syncd_pid" 2>/dev/null
		wait "$syncd_pid" 2>/dev/null
	fi
	rm -rf /var/run/dpdk/maglb-pkgtest
	if [ $installed = yes ]; then
		log "cleanup: dpkg --purge maglb"
		dpkg --purge maglb >/dev/null
	fi
	if [ $group_made = yes ] && getent group maglb >/dev/null; then
		groupdel maglb
	fi
	if [ -n "$tmp" ]; then
		if [ "${MAGLB_PACKAGES_KEEP:-0}" = 1 ]; then
			log "kept $tmp"
		else
			rm -rf "$tmp"
		fi
	fi
	exit $rc
}

# The tools of this test, installed when missing.
deps() {
	local p missing=()

	for p in dpkg-dev debhelper lintian rpm systemd man-db corosync iproute2; do
		[[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == *'ok installed' ]] ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing ${missing[*]}"
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# Run "$@" with its output in $tmp/$name.log; show its tail if it fails.
run_logged() {
	local name=$1

	shift
	if ! "$@" >"$tmp/$name.log" 2>&1; then
		tail -n 60 "$tmp/$name.log" >&2
		fail "$name failed (log above)"
	fi
}

# Files (not folders) of the .deb, as dpkg-deb -c lists them.
deb_expected() {
	cat <<EOF
/etc/default/maglb-dataplane
/etc/default/maglb-monitor
/etc/default/maglb-syncd
$unitdir/maglb-dataplane.service
$unitdir/maglb-monitor.service
$unitdir/maglb-syncd.service
/usr/lib/sysusers.d/maglb.conf
/usr/sbin/maglb-dataplane
/usr/sbin/maglb-monitor
/usr/sbin/maglb-syncd
/usr/sbin/maglbctl
/usr/share/doc/maglb/changelog.Debian.gz
/usr/share/doc/maglb/copyright
/usr/share/doc/maglb/examples/corosync-pair.conf
/usr/share/doc/maglb/examples/corosync-pair-qdevice.conf
/usr/share/doc/maglb/examples/corosync-trio.conf
/usr/share/doc/maglb/examples/maglb.conf
/usr/share/doc/maglb/examples/prometheus/README.md
/usr/share/doc/maglb/examples/prometheus/maglb-alerts.test.yml
/usr/share/doc/maglb/examples/prometheus/maglb-alerts.yml
/usr/share/doc/maglb/examples/prometheus/prometheus.yml.example
/usr/share/doc/maglb/examples/router/README.md
/usr/share/doc/maglb/examples/router/bird2-bgp-bfd.conf
/usr/share/doc/maglb/examples/router/bird2-static-bfd.conf
/usr/share/doc/maglb/examples/router/frr-static-bfd.conf
/usr/share/doc/maglb/examples/sysctl-hugepages.conf
/usr/share/lintian/overrides/maglb
/usr/share/man/man5/maglb.conf.5.gz
/usr/share/man/man8/maglb-dataplane.8.gz
/usr/share/man/man8/maglb-monitor.8.gz
/usr/share/man/man8/maglb-syncd.8.gz
/usr/share/man/man8/maglbctl.8.gz
/usr/share/maglb/hooks/README.md
/usr/share/maglb/hooks/bird2
/usr/share/maglb/hooks/bird2.conf.example
/usr/share/maglb/hooks/frr
/usr/share/maglb/www/console.css
/usr/share/maglb/www/console.js
/usr/share/maglb/www/index.html
/usr/share/maglb/www/login.html
EOF
}

# Everything the RPM owns, as rpm -qlp lists it.
rpm_expected() {
	cat <<EOF
/etc/maglb
/etc/maglb/hooks.d
/etc/sysconfig/maglb-dataplane
/etc/sysconfig/maglb-monitor
/etc/sysconfig/maglb-syncd
$unitdir/maglb-dataplane.service
$unitdir/maglb-monitor.service
$unitdir/maglb-syncd.service
/usr/lib/sysusers.d/maglb.conf
/usr/sbin/maglb-dataplane
/usr/sbin/maglb-monitor
/usr/sbin/maglb-syncd
/usr/sbin/maglbctl
/usr/share/doc/maglb
/usr/share/doc/maglb/README.md
/usr/share/doc/maglb/examples
/usr/share/doc/maglb/examples/corosync-pair.conf
/usr/share/doc/maglb/examples/corosync-pair-qdevice.conf
/usr/share/doc/maglb/examples/corosync-trio.conf
/usr/share/doc/maglb/examples/maglb.conf
/usr/share/doc/maglb/examples/prometheus
/usr/share/doc/maglb/examples/prometheus/README.md
/usr/share/doc/maglb/examples/prometheus/maglb-alerts.test.yml
/usr/share/doc/maglb/examples/prometheus/maglb-alerts.yml
/usr/share/doc/maglb/examples/prometheus/prometheus.yml.example
/usr/share/doc/maglb/examples/router
/usr/share/doc/maglb/examples/router/README.md
/usr/share/doc/maglb/examples/router/bird2-bgp-bfd.conf
/usr/share/doc/maglb/examples/router/bird2-static-bfd.conf
/usr/share/doc/maglb/examples/router/frr-static-bfd.conf
/usr/share/doc/maglb/examples/sysctl-hugepages.conf
/usr/share/licenses/maglb
/usr/share/licenses/maglb/LICENSE
/usr/share/man/man5/maglb.conf.5
/usr/share/man/man8/maglb-dataplane.8
/usr/share/man/man8/maglb-monitor.8
/usr/share/man/man8/maglb-syncd.8
/usr/share/man/man8/maglbctl.8
/usr/share/maglb
/usr/share/maglb/hooks
/usr/share/maglb/hooks/README.md
/usr/share/maglb/hooks/bird2
/usr/share/maglb/hooks/bird2.conf.example
/usr/share/maglb/hooks/frr
/usr/share/maglb/www
/usr/share/maglb/www/console.css
/usr/share/maglb/www/console.js
/usr/share/maglb/www/index.html
/usr/share/maglb/www/login.html
EOF
}

# The example hooks, which an operator links into /etc/maglb/hooks.d.
hooks_examples='/usr/share/maglb/hooks/bird2 /usr/share/maglb/hooks/frr'

# Compare a list on stdin with the expected one; show the difference.
same_list() {
	local what=$1 expected=$2

	sort >"$tmp/$what.got"
	$expected | sort >"$tmp/$what.want"
	if ! diff -u "$tmp/$what.want" "$tmp/$what.got" >&2; then
		fail "$what: file list differs from the expected one (- expected, + got)"
	fi
}

# The source tree as git sees it (tracked and untracked, not ignored), else
# everything but the build folders.
copy_tree() {
	local dest=$1

	mkdir -p "$dest"
	if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$src" ls-files -z --cached --others --exclude-standard |
			tar -C "$src" --null -T - --ignore-failed-read -cf - 2>/dev/null |
			tar -C "$dest" -xf -
	else
		tar -C "$src" --exclude='./build*' --exclude=./debian -cf - . |
			tar -C "$dest" -xf -
	fi
}

build_deb() {
	log "dpkg-buildpackage -us -uc -b (maglb $version)"
	cp -a "$tmp/src/packaging/debian" "$tmp/src/debian"
	(cd "$tmp/src" && DEB_BUILD_OPTIONS="parallel=$(nproc)" \
		run_logged dpkg-buildpackage dpkg-buildpackage -us -uc -b)
	deb=$tmp/maglb_${version}-1_${arch}.deb
	[ -f "$deb" ] || fail "no $deb: is debian/changelog at version $version-1?"
	ok "dpkg-buildpackage built $(basename "$deb")"
	grep -q '^Ok: *[1-9]' "$tmp/dpkg-buildpackage.log" ||
		fail "the unit tests did not run in the package build"
	ok "unit tests ran in the package build"
	dpkg-deb -c "$deb" >"$tmp/deb.contents"
	awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }' "$tmp/deb.contents" |
		same_list deb deb_expected
	ok "the .deb holds the expected files"
	grep -q ' \./etc/maglb/$' "$tmp/deb.contents" || fail "the .deb has no /etc/maglb/"
	ok "the .deb makes /etc/maglb/"
	grep -q ' \./etc/maglb/hooks\.d/$' "$tmp/deb.contents" ||
		fail "the .deb has no /etc/maglb/hooks.d/"
	ok "the .deb makes /etc/maglb/hooks.d/, the hooks directory"
	# maglb-syncd links libcpg (shlibs); the corosync daemon is recommended.
	grep -q 'libcpg4' <<<"$(dpkg-deb -f "$deb" Depends)" || fail "the .deb does not depend on libcpg4"
	grep -qw 'corosync' <<<"$(dpkg-deb -f "$deb" Recommends)" ||
		fail "the .deb does not recommend corosync"
	ok "the .deb depends on libcpg4 and recommends corosync"
}

run_lintian() {
	local rc=0

	log "lintian"
	lintian --fail-on error,warning --info --display-experimental --pedantic \
		"$tmp/maglb_${version}-1_${arch}.changes" >"$tmp/lintian.log" 2>&1 || rc=$?
	grep -v 'running with root privileges' "$tmp/lintian.log" || true
	[ $rc -eq 0 ] || fail "lintian reports errors or warnings (exit $rc)"
	ok "lintian: no error, no warning"
}

install_deb() {
	local f

	log "installing the .deb on this machine"
	getent group maglb >/dev/null || group_made=yes
	installed=yes
	run_logged apt-install apt-get install -y -q --no-install-recommends "$deb"
	ok "apt-get installed the .deb"
	while read -r f; do
		[ -e "$f" ] || fail "$f is missing after install"
	done < <(deb_expected)
	[ -d /etc/maglb ] || fail "/etc/maglb is missing after install"
	ok "every file of the package is installed"
	[ -d /etc/maglb/hooks.d ] && [ -z "$(ls -A /etc/maglb/hooks.d)" ] ||
		fail "/etc/maglb/hooks.d is not an empty folder after install"
	ok "/etc/maglb/hooks.d is there, empty"
	getent group maglb >/dev/null || fail "no maglb group after install"
	ok "postinst made the maglb group (systemd-sysusers)"
	for f in /etc/default/maglb-dataplane /etc/default/maglb-syncd /etc/default/maglb-monitor; do
		grep -q "$f " <<<"$(dpkg-query -W -f='${Conffiles}\n' maglb)" ||
			fail "$f is not a conffile"
	done
	ok "/etc/default/maglb-{dataplane,syncd,monitor} are conffiles"
	id -nG maglb-monitor 2>/dev/null | grep -qw maglb ||
		fail "no maglb-monitor user in the maglb group after install"
	ok "postinst made the maglb-monitor user, in the maglb group"
}

check_unit() {
	local out unit want

	for unit in maglb-dataplane maglb-syncd maglb-monitor; do
		log "systemd-analyze verify $unitdir/$unit.service"
		out=$(systemd-analyze verify "$unitdir/$unit.service" 2>&1) ||
			fail "systemd-analyze verify $unit.service: $out"
		[ -z "$out" ] || fail "systemd-analyze verify $unit.service warns: $out"
		ok "systemd-analyze verify $unit.service: clean"
	done
	grep -q '^ExecStart=/usr/sbin/maglb-dataplane \$MAGLB_EAL_ARGS -- -c /etc/maglb/maglb.conf' \
		"$unitdir/maglb-dataplane.service" || fail "the unit's ExecStart has unexpected paths"
	ok "the unit runs /usr/sbin/maglb-dataplane with /etc/maglb/maglb.conf"
	unit=$unitdir/maglb-syncd.service
	grep -qx 'ExecStart=/usr/sbin/maglb-syncd -c /etc/maglb/maglb.conf \$MAGLB_SYNCD_ARGS' "$unit" ||
		fail "maglb-syncd.service's ExecStart has unexpected paths"
	grep -qx 'ConditionPathExists=/etc/maglb/maglb.conf' "$unit" ||
		fail "maglb-syncd.service does not wait for /etc/maglb/maglb.conf"
	ok "maglb-syncd.service runs /usr/sbin/maglb-syncd with /etc/maglb/maglb.conf"
	for want in 'After=.*\<corosync\.service\>' 'After=.*\<maglb-dataplane\.service\>' \
		'Wants=.*\<corosync\.service\>'; do
		grep -q "^$want" "$unit" || fail "maglb-syncd.service has no $want"
	done
	ok "maglb-syncd.service: After= corosync and the dataplane, Wants= corosync"
	unit=$unitdir/maglb-monitor.service
	grep -qx 'ExecStart=/usr/sbin/maglb-monitor -c ${CREDENTIALS_DIRECTORY}/maglb.conf \$MAGLB_MONITOR_ARGS' "$unit" &&
		grep -qx 'LoadCredential=maglb.conf:/etc/maglb/maglb.conf' "$unit" &&
		grep -qx 'User=maglb-monitor' "$unit" ||
		fail "maglb-monitor.service does not run /usr/sbin/maglb-monitor as maglb-monitor with /etc/maglb/maglb.conf"
	ok "maglb-monitor.service runs /usr/sbin/maglb-monitor as maglb-monitor, maglb.conf as a credential"
	out=$(systemd-analyze security --offline=true "$unit" 2>&1 | grep 'Overall exposure level') ||
		fail "systemd-analyze security maglb-monitor.service: no figure"
	awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+$/) exit !($i <= 2.0); exit 1 }' \
		<<<"$out" || fail "maglb-monitor.service: $out, over 2.0"
	ok "maglb-monitor.service: ${out#→ }"
}

check_man() {
	local page out

	log "man pages"
	for page in maglb-dataplane.8 maglb-syncd.8 maglb-monitor.8 maglbctl.8 maglb.conf.5; do
		out=$(MANWIDTH=80 man --warnings -E UTF-8 "${page##*.}" "${page%.*}" 2>&1 >/dev/null) ||
			fail "man ${page}: $out"
		[ -z "$out" ] || fail "man ${page} warns: $out"
	done
	ok "man renders maglb-dataplane(8), maglb-syncd(8), maglb-monitor(8), maglbctl(8), maglb.conf(5) without warnings"
	zcat /usr/share/man/man5/maglb.conf.5.gz |
		sed -n '/^\.SH EXAMPLE/,/^\.fi/p' | sed '1,2d;$d' >"$tmp/man-example.conf"
	run_logged man-example /usr/sbin/maglb-dataplane --check-config "$tmp/man-example.conf"
	ok "the EXAMPLE of maglb.conf(5) passes --check-config"
}

check_examples() {
	local f

	log "example configs"
	run_logged check-config /usr/sbin/maglb-dataplane \
		--check-config /usr/share/doc/maglb/examples/maglb.conf
	ok "maglb-dataplane --check-config examples/maglb.conf: $(head -n 1 "$tmp/check-config.log")"
	run_logged syncd-check-config /usr/sbin/maglb-syncd \
		--check-config /usr/share/doc/maglb/examples/maglb.conf
	ok "maglb-syncd --check-config: $(head -n 1 "$tmp/syncd-check-config.log")"
	# corosync -t wants a readable key and its own node among the addresses:
	# a copy with a test key, in a network namespace holding lb-a's addresses.
	corosync-keygen -l -k "$tmp/authkey" >/dev/null 2>&1
	for f in corosync-pair corosync-trio; do
		sed -e "s|^\(\s*\)crypto_hash: sha256|&\n\1keyfile: $tmp/authkey|" \
			-e 's/to_stderr: no/to_stderr: yes/' \
			"/usr/share/doc/maglb/examples/$f.conf" >"$tmp/$f.conf"
		grep -q '^\s*crypto_cipher: aes256$' "$tmp/$f.conf" ||
			fail "$f.conf: no crypto_cipher: aes256"
		run_logged "$f" unshare -n sh -c "ip link set lo up &&
			ip addr add 198.18.0.11/32 dev lo &&
			ip addr add 198.19.0.11/32 dev lo &&
			exec corosync -t -c '$tmp/$f.conf'"
		ok "corosync -t accepts examples/$f.conf"
	done
	grep -q '^\s*two_node: 1$' /usr/share/doc/maglb/examples/corosync-pair.conf ||
		fail "corosync-pair.conf: no two_node"
	ok "corosync-pair.conf sets two_node"
	check_hook_examples
}

# The installed example hooks run: executable, and they refuse a role they
# do not know (exit 1, a line on stderr) before touching anything.
check_hook_examples() {
	local f rc

	for f in $hooks_examples; do
		[ -x "$f" ] || fail "$f is not executable"
		rc=0
		"$f" standby >/dev/null 2>"$tmp/hook.err" || rc=$?
		[ $rc -eq 1 ] && grep -q "role 'standby'" "$tmp/hook.err" ||
			fail "$f standby: exit $rc, '$(cat "$tmp/hook.err")', want 1 and the role refused"
	done
	ok "the example hooks are executable and refuse an unknown role"
}

# The installed dataplane with nothing but the unit's capabilities, on a
# net_null port in ordinary memory; maglbctl as a maglb member, then not.
smoke() {
	local caps i rc

	log "installed dataplane with the unit's capabilities"
	caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unitdir/maglb-dataplane.service" |
		tr 'A-Z' 'a-z' | sed -e 's/cap_/+/g' -e 's/ /,/g')
	sed -e 's|device = "[^"]*";|device = "net_null0";|' \
		-e 's/^\(\s*\)capacity = [0-9]*;/\1capacity = 4096;/' \
		-e 's/shared_capacity = [0-9]*;/shared_capacity = 4096;/' \
		/usr/share/doc/maglb/examples/maglb.conf >"$tmp/smoke.conf"
	setpriv --bounding-set="-all,$caps" --inh-caps=-all --no-new-privs \
		/usr/sbin/maglb-dataplane --no-huge --no-pci --no-shconf --no-telemetry \
		--file-prefix=maglb-pkgtest -m 256 -l 0,1 --vdev=net_null0 -- \
		-c "$tmp/smoke.conf" -f --poll adaptive --service maglb-pkgtest \
		>"$tmp/smoke.log" 2>&1 &
	dataplane_pid=$!
	for i in $(seq 50); do
		grep -q "serving IPC" "$tmp/smoke.log" && break
		kill -0 "$dataplane_pid" 2>/dev/null || break
		sleep 0.2
	done
	grep -q "ipc maglb-pkgtest: serving, group $(getent group maglb | cut -d: -f3)" \
		"$tmp/smoke.log" || { cat "$tmp/smoke.log" >&2; fail "the dataplane did not start"; }
	ok "maglb-dataplane runs with CapabilityBoundingSet=$caps"
	run_logged maglbctl-member setpriv --reuid=nobody --regid=nogroup --groups=maglb \
		/usr/sbin/maglbctl --service maglb-pkgtest status
	ok "maglbctl status as a maglb member: $(head -n 1 "$tmp/maglbctl-member.log")"
	rc=0
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		/usr/sbin/maglbctl --service maglb-pkgtest status >/dev/null 2>&1 || rc=$?
	[ $rc -eq 3 ] || fail "maglbctl outside the maglb group: exit $rc, want 3 (refused)"
	ok "maglbctl outside the maglb group is refused (exit 3)"
	kill "$dataplane_pid"
	rc=0
	wait "$dataplane_pid" || rc=$?
	dataplane_pid=
	[ $rc -eq 0 ] || fail "the dataplane exited $rc on SIGTERM"
	ok "maglb-dataplane stops cleanly on SIGTERM"
}

# Wait up to 10 s for an extended regex in a log file, while pid lives.
wait_log() {
	local file=$1 re=$2 pid=$3

	for _ in $(seq 50); do
		grep -Eq -- "$re" "$file" && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	grep -Eq -- "$re" "$file"
}

# The installed maglb-syncd with nothing but its unit's capabilities, and
# no corosync and no dataplane to reach. libqb's IPC sockets are abstract,
# one set per network namespace: in a namespace of its own, it cannot join
# a corosync running on this machine by mistake, and maglbctl enters that
# namespace to ask it. With the unit's PrivateIPC=, an IPC namespace too
# (maglbctl stays outside it, as under systemd). It must stay up retrying
# both, answer maglbctl, a maglb member too (its IPC files go to
# root:maglb with CAP_CHOWN alone), reload on SIGHUP, keep its config when
# the file is bad, and exit 0 on SIGTERM.
smoke_syncd() {
	local unit=$unitdir/maglb-syncd.service svc=maglb-pkgtest-syncd-$$
	local caps ipc='' ns line rc

	log "installed maglb-syncd with the unit's capabilities"
	caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" |
		tr 'A-Z' 'a-z' | sed -e 's/cap_/+/g' -e 's/ /,/g')
	grep -qx 'PrivateIPC=yes' "$unit" && ipc=--ipc
	cp /usr/share/doc/maglb/examples/maglb.conf "$tmp/syncd.conf"
	unshare --net $ipc setpriv --bounding-set="-all,$caps" --inh-caps=-all --no-new-privs \
		/usr/sbin/maglb-syncd -c "$tmp/syncd.conf" -f --service "$svc" \
		--dataplane-service "$svc-no-dataplane" >"$tmp/syncd.log" 2>&1 &
	syncd_pid=$!
	wait_log "$tmp/syncd.log" "ipc $svc: serving, group $(getent group maglb | cut -d: -f3)\$" \
		"$syncd_pid" || { cat "$tmp/syncd.log" >&2; fail "maglb-syncd did not start"; }
	ok "maglb-syncd runs with CapabilityBoundingSet=$caps"
	wait_log "$tmp/syncd.log" 'corosync not reachable' "$syncd_pid" &&
		wait_log "$tmp/syncd.log" "ipc $svc-no-dataplane: .*; retrying" "$syncd_pid" ||
		{ cat "$tmp/syncd.log" >&2; fail "maglb-syncd did not try corosync and the dataplane"; }
	sleep 2
	kill -0 "$syncd_pid" 2>/dev/null ||
		{ cat "$tmp/syncd.log" >&2; fail "maglb-syncd exited with no corosync and no dataplane"; }
	ok "maglb-syncd stays up with no corosync and no dataplane, retrying both"
	ns="nsenter --net=/proc/$syncd_pid/ns/net"
	run_logged syncd-counters $ns /usr/sbin/maglbctl --service "$svc" counters sync
	grep -Eq '^sync +node_id +1$' "$tmp/syncd-counters.log" &&
		grep -Eq '^sync +synced +0$' "$tmp/syncd-counters.log" ||
		{ cat "$tmp/syncd-counters.log" >&2; fail "maglbctl counters sync: not node 1, or synced"; }
	ok "maglbctl --service $svc counters sync: node 1, not synced"
	run_logged syncd-member $ns setpriv --reuid=nobody --regid=nogroup --groups=maglb \
		/usr/sbin/maglbctl --service "$svc" counters sync
	ok "maglbctl counters sync as a maglb member"
	rc=0
	$ns setpriv --reuid=nobody --regid=nogroup --clear-groups \
		/usr/sbin/maglbctl --service "$svc" counters sync >/dev/null 2>&1 || rc=$?
	[ $rc -eq 3 ] || fail "maglbctl to maglb-syncd outside the maglb group: exit $rc, want 3"
	ok "maglbctl to maglb-syncd outside the maglb group is refused (exit 3)"
	# The unit's ExecReload is SIGHUP: a good file reloads; a bad one is
	# refused as file:line: reason and the running config stays.
	kill -HUP "$syncd_pid"
	wait_log "$tmp/syncd.log" "reloaded $tmp/syncd.conf" "$syncd_pid" ||
		{ cat "$tmp/syncd.log" >&2; fail "maglb-syncd did not reload on SIGHUP"; }
	echo 'no_such_key = 1;' >>"$tmp/syncd.conf"
	line=$(wc -l <"$tmp/syncd.conf")
	kill -HUP "$syncd_pid"
	wait_log "$tmp/syncd.log" "reload refused, running config kept: $tmp/syncd.conf:$line: " \
		"$syncd_pid" && kill -0 "$syncd_pid" 2>/dev/null ||
		{ cat "$tmp/syncd.log" >&2; fail "maglb-syncd did not refuse a bad file on SIGHUP"; }
	ok "SIGHUP reloads; a bad file is refused with file:line and the config stays"
	kill "$syncd_pid"
	rc=0
	wait "$syncd_pid" || rc=$?
	syncd_pid=
	[ $rc -eq 0 ] || { cat "$tmp/syncd.log" >&2; fail "maglb-syncd exited $rc on SIGTERM"; }
	ok "maglb-syncd stops cleanly on SIGTERM"
}

remove_deb() {
	local f

	log "dpkg --purge maglb"
	run_logged purge dpkg --purge maglb
	installed=no
	for f in /usr/sbin/maglb-dataplane /usr/sbin/maglb-syncd "$unitdir/maglb-dataplane.service" \
		"$unitdir/maglb-syncd.service" /etc/default/maglb-dataplane /etc/default/maglb-syncd \
		/etc/maglb/hooks.d /usr/share/maglb; do
		[ ! -e "$f" ] || fail "$f left after purge"
	done
	ok "purge removes the package and its conffiles"
}

build_rpm() {
	local rpm name

	log "rpmbuild --nodeps -bb packaging/rpm/maglb.spec"
	grep -q "^Version: *$version\$" "$tmp/src/packaging/rpm/maglb.spec" ||
		fail "maglb.spec's Version is not $version"
	mkdir -p "$tmp/rpm/SOURCES"
	tar -C "$tmp/src" --exclude=./debian --transform "s,^\.,maglb-$version," \
		-czf "$tmp/rpm/SOURCES/maglb-$version.tar.gz" .
	run_logged rpmbuild rpmbuild --define "_topdir $tmp/rpm" --nodeps \
		-bb "$tmp/src/packaging/rpm/maglb.spec"
	rpm=$(ls "$tmp"/rpm/RPMS/*/maglb-"$version"-1*.rpm 2>/dev/null | grep -v debug | head -n 1)
	[ -n "$rpm" ] || fail "rpmbuild made no maglb-$version RPM"
	name=$(basename "$rpm")
	ok "rpmbuild built $name"
	grep -q '^Ok: *[1-9]' "$tmp/rpmbuild.log" || fail "the unit tests did not run in %check"
	ok "unit tests ran in %check"
	# Fedora's rpm gzips man pages (brp-compress), Debian's leaves them.
	rpm -qlp "$rpm" 2>/dev/null | grep -v '^/usr/lib/\.build-id' | sed 's/\.gz$//' |
		same_list rpm rpm_expected
	ok "$name holds the expected files"
	# A file, not a pipe: grep -q leaving early would fail rpm (pipefail).
	rpm -qlvp "$rpm" 2>/dev/null >"$tmp/rpm-modes"
	for name in $hooks_examples; do
		grep -q "^-rwxr-xr-x .* $name\$" "$tmp/rpm-modes" ||
			fail "$name is not 0755 in the RPM"
	done
	ok "the example hooks are executable in the RPM"
	for name in /etc/sysconfig/maglb-dataplane /etc/sysconfig/maglb-syncd; do
		grep -qx "$name" <<<"$(rpm -qp --configfiles "$rpm" 2>/dev/null)" ||
			fail "$name is not %config"
	done
	ok "/etc/sysconfig/maglb-dataplane and /etc/sysconfig/maglb-syncd are %config"
	grep -q 'groupadd -r maglb' <<<"$(rpm -qp --scripts "$rpm" 2>/dev/null)" ||
		fail "no %pre making the maglb group"
	ok "%pre makes the maglb group"
	rpm -qp --requires "$rpm" 2>/dev/null >"$tmp/rpm-requires"
	for name in 'librte_eal\.so' 'libqb\.so' 'libcpg\.so' 'libconfig\.so' 'libprotobuf-c\.so' \
		'^dpdk$'; do
		grep -q "$name" "$tmp/rpm-requires" || fail "the RPM does not require $name"
	done
	ok "the RPM requires DPDK, libqb, libcpg, libconfig and libprotobuf-c"
	grep -qx corosync <<<"$(rpm -qp --recommends "$rpm" 2>/dev/null)" ||
		fail "the RPM does not recommend corosync"
	ok "the RPM recommends corosync"
}

main() {
	[ "$(id -u)" = 0 ] || fail "run as root: the test installs the package"
	[ -n "$version" ] || fail "no project version in $src/meson.build"
	[ ! -e "$src/debian" ] || fail "$src/debian exists: packaging/debian is the one debian folder"
	if [[ $(dpkg-query -W -f='${Status}' maglb 2>/dev/null || true) == *' installed' ]]; then
		fail "a maglb package is installed here; remove it first (the test installs its own)"
	fi
	deps
	unitdir=$(pkg-config --variable=systemdsystemunitdir systemd)
	tmp=$(mktemp -d /tmp/maglb-packages.XXXXXX)
	trap cleanup EXIT
	copy_tree "$tmp/src"
	build_deb
	run_lintian
	install_deb
	check_unit
	check_man
	check_examples
	smoke
	smoke_syncd
	remove_deb
	rm -rf "$tmp/src/debian"
	build_rpm
	printf '%d passed, 0 failed\n' "$checks"
}

main "$@"
