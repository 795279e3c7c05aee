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
#    maglb group, the unit (systemd-analyze verify), the man pages, the
#    example configs (maglb-dataplane --check-config, corosync -t), and runs
#    the installed dataplane with the unit's capabilities only (no hugepages,
#    a net_null port) while a maglb group member asks it with maglbctl;
# 3. builds the RPM with Debian's rpm (rpmbuild --nodeps) and checks its
#    file list, scripts and dependencies.
#
# Cleanup, even on failure: the package purged, the maglb group deleted if
# this test made it, the test dataplane stopped, the temporary folder gone
# (MAGLB_PACKAGES_KEEP=1 keeps it). Installs its own tools when missing:
# dpkg-dev debhelper lintian rpm systemd man-db corosync iproute2.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8

src=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n "s/^ *version: '\([^']*\)',\$/\1/p" "$src/meson.build" | head -n 1)
arch=$(dpkg --print-architecture)
unitdir=/lib/systemd/system   # set from systemd's pkg-config file below
tmp=
deb=
dataplane_pid=
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
$unitdir/maglb-dataplane.service
/usr/lib/sysusers.d/maglb.conf
/usr/sbin/maglb-dataplane
/usr/sbin/maglbctl
/usr/share/doc/maglb/changelog.Debian.gz
/usr/share/doc/maglb/copyright
/usr/share/doc/maglb/examples/corosync-pair.conf
/usr/share/doc/maglb/examples/corosync-trio.conf
/usr/share/doc/maglb/examples/maglb.conf
/usr/share/doc/maglb/examples/sysctl-hugepages.conf
/usr/share/lintian/overrides/maglb
/usr/share/man/man5/maglb.conf.5.gz
/usr/share/man/man8/maglb-dataplane.8.gz
/usr/share/man/man8/maglbctl.8.gz
EOF
}

# Everything the RPM owns, as rpm -qlp lists it.
rpm_expected() {
	cat <<EOF
/etc/maglb
/etc/sysconfig/maglb-dataplane
$unitdir/maglb-dataplane.service
/usr/lib/sysusers.d/maglb.conf
/usr/sbin/maglb-dataplane
/usr/sbin/maglbctl
/usr/share/doc/maglb
/usr/share/doc/maglb/README.md
/usr/share/doc/maglb/examples
/usr/share/doc/maglb/examples/corosync-pair.conf
/usr/share/doc/maglb/examples/corosync-trio.conf
/usr/share/doc/maglb/examples/maglb.conf
/usr/share/doc/maglb/examples/sysctl-hugepages.conf
/usr/share/licenses/maglb
/usr/share/licenses/maglb/LICENSE
/usr/share/man/man5/maglb.conf.5
/usr/share/man/man8/maglb-dataplane.8
/usr/share/man/man8/maglbctl.8
EOF
}

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
	getent group maglb >/dev/null || fail "no maglb group after install"
	ok "postinst made the maglb group (systemd-sysusers)"
	grep -q '/etc/default/maglb-dataplane ' <<<"$(dpkg-query -W -f='${Conffiles}\n' maglb)" ||
		fail "/etc/default/maglb-dataplane is not a conffile"
	ok "/etc/default/maglb-dataplane is a conffile"
}

check_unit() {
	local out

	log "systemd-analyze verify $unitdir/maglb-dataplane.service"
	out=$(systemd-analyze verify "$unitdir/maglb-dataplane.service" 2>&1) ||
		fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify warns: $out"
	ok "systemd-analyze verify: clean"
	grep -q '^ExecStart=/usr/sbin/maglb-dataplane \$MAGLB_EAL_ARGS -- -c /etc/maglb/maglb.conf' \
		"$unitdir/maglb-dataplane.service" || fail "the unit's ExecStart has unexpected paths"
	ok "the unit runs /usr/sbin/maglb-dataplane with /etc/maglb/maglb.conf"
}

check_man() {
	local page out

	log "man pages"
	for page in maglb-dataplane.8 maglbctl.8 maglb.conf.5; do
		out=$(MANWIDTH=80 man --warnings -E UTF-8 "${page##*.}" "${page%.*}" 2>&1 >/dev/null) ||
			fail "man ${page}: $out"
		[ -z "$out" ] || fail "man ${page} warns: $out"
	done
	ok "man renders maglb-dataplane(8), maglbctl(8), maglb.conf(5) without warnings"
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

remove_deb() {
	log "dpkg --purge maglb"
	run_logged purge dpkg --purge maglb
	installed=no
	[ ! -e /usr/sbin/maglb-dataplane ] && [ ! -e "$unitdir/maglb-dataplane.service" ] &&
		[ ! -e /etc/default/maglb-dataplane ] || fail "files left after purge"
	ok "purge removes the package and its conffile"
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
	grep -qx /etc/sysconfig/maglb-dataplane <<<"$(rpm -qp --configfiles "$rpm" 2>/dev/null)" ||
		fail "/etc/sysconfig/maglb-dataplane is not %config"
	ok "/etc/sysconfig/maglb-dataplane is %config"
	grep -q 'groupadd -r maglb' <<<"$(rpm -qp --scripts "$rpm" 2>/dev/null)" ||
		fail "no %pre making the maglb group"
	ok "%pre makes the maglb group"
	rpm -qp --requires "$rpm" 2>/dev/null >"$tmp/rpm-requires"
	for name in 'librte_eal\.so' 'libqb\.so' 'libconfig\.so' 'libprotobuf-c\.so' '^dpdk$'; do
		grep -q "$name" "$tmp/rpm-requires" || fail "the RPM does not require $name"
	done
	ok "the RPM requires DPDK, libqb, libconfig and libprotobuf-c"
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
	remove_deb
	rm -rf "$tmp/src/debian"
	build_rpm
	printf '%d passed, 0 failed\n' "$checks"
}

main "$@"
