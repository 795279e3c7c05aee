#!/usr/bin/env bash
# check_hooks_bgp: the example role-change hooks (packaging/hooks/) against
# real routing daemons. Two network namespaces, a node and a router, are
# joined by a veth with the example's addresses: router 198.18.0.1 and
# 2001:db8::1 (AS 65000, BIRD, accepting what the node sends), node
# 198.18.0.10 and 2001:db8::10 (AS 65001).
#
#   bird2  the node runs BIRD 2 with bird2.conf.example as shipped. active:
#          the node's BIRD holds a blackhole route per VIP, its kernel none
#          (its kernel protocols export all), and the router learns each VIP
#          with the node as next hop; passive: the router withdraws them;
#          a bad role, a bad address, an unreachable BIRD and a BIRD that
#          refuses its config exit 1 with a line on stderr.
#   frr    where FRR is installed, the node runs FRR's zebra and bgpd (in a
#          pathspace of their own) with the config of hooks/README.md.
#          active and passive as above, a second run of either changes
#          nothing, and a missing or wrong AS number and an FRR not running
#          exit 1.
#
# Needs root, iproute2 and bird2 (exits 77, skipped, without BIRD). The
# hooks also go through shellcheck where it is installed. Leaves no
# namespace, daemon or file.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
hooks=$here/../../packaging/hooks
P=mhkb$$-
frr_ns=maglb-hooks-test-$$      # FRR's pathspace: /etc/frr/NS, /run/frr/NS
tmp=
passed=0
failed=0
DEADLINE_S=30                   # BGP: a 5 s connect delay, then OPEN
VIPS4="198.18.1.1 198.18.1.2"
VIPS6="2001:db8:1::1"
PREFIXES="198.18.1.1/32 198.18.1.2/32 2001:db8:1::1/128"

log() { printf '%s\n' "$*" >&2; }
pass() { passed=$((passed + 1)); printf 'ok    %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$*"; }

if [ "$(id -u)" != 0 ]; then
	log "skipped: needs root (network namespaces)"
	exit 77
fi
for cmd in bird birdc ip; do
	command -v "$cmd" >/dev/null || { log "skipped: no $cmd (apt-get install bird2)"; exit 77; }
done

stop_pidfile() {
	[ -f "$1" ] && kill "$(cat "$1")" 2>/dev/null
	rm -f "$1"
}

finish() {
	local rc=$? f

	set +e
	for f in "$tmp"/*.pid /run/frr/"$frr_ns"/*.pid; do
		stop_pidfile "$f"
	done
	rm -rf "/etc/frr/$frr_ns" "/run/frr/$frr_ns"
	ip netns del "${P}node" 2>/dev/null
	ip netns del "${P}router" 2>/dev/null
	[ -n "$tmp" ] && rm -rf "$tmp"
	exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

tmp=$(mktemp -d /tmp/check_hooks_bgp.XXXXXX)

# ------------------------------------------------------------- topology
ip netns add "${P}node"
ip netns add "${P}router"
ip link add nr0 netns "${P}node" type veth peer name rn0 netns "${P}router"
ip -n "${P}node" link set lo up
ip -n "${P}node" link set nr0 up
ip -n "${P}node" addr add 198.18.0.10/24 dev nr0
ip -n "${P}node" addr add 2001:db8::10/64 dev nr0 nodad
ip -n "${P}router" link set lo up
ip -n "${P}router" link set rn0 up
ip -n "${P}router" addr add 198.18.0.1/24 dev rn0
ip -n "${P}router" addr add 2001:db8::1/64 dev rn0 nodad

# The router waits for the node's connections (passive): no collision of
# two connections, which FRR answers with a notification and BIRD with a
# minute of back-off.
cat >"$tmp/router.conf" <<CONF
router id 198.18.0.1;
protocol device {}
protocol bgp node4 {
	local as 65000;
	neighbor 198.18.0.10 as 65001;
	passive on;
	ipv4 { import all; export none; };
}
protocol bgp node6 {
	local as 65000;
	neighbor 2001:db8::10 as 65001;
	passive on;
	ipv6 { import all; export none; };
}
CONF
ip netns exec "${P}router" bird -c "$tmp/router.conf" -s "$tmp/router.ctl" -P "$tmp/router.pid" ||
	{ log "the router's bird did not start"; exit 1; }

router() { birdc -s "$tmp/router.ctl" "$@"; }

# await SECONDS COMMAND...: until COMMAND succeeds, or false after SECONDS.
await() {
	local until=$((SECONDS + $1))

	shift
	until "$@"; do
		[ $SECONDS -lt $until ] || return 1
		sleep 0.2
	done
}

established() { router show protocols "$1" | grep -q Established; }
# learnt PREFIX: the router has PREFIX from the node's AS.
learnt() { router show route "$1" all | grep -q 'BGP.as_path: 65001'; }
withdrawn() { ! router show route "$1" | grep -q "^$1"; }
all_prefixes() {
	local p

	for p in $PREFIXES; do
		"$@" "$p" || return 1
	done
}

# The router's sessions to a node daemon that just started.
sessions_up() {
	local what=$1

	if await "$DEADLINE_S" established node4 && await "$DEADLINE_S" established node6; then
		pass "$what: BGP sessions to the router up (IPv4, IPv6)"
	else
		fail "$what: BGP sessions to the router not established"
		router show protocols >&2
		exit 1
	fi
}

# announced WHAT: the router learns every VIP, next hop the node; the
# node's kernel has no route to them.
announced() {
	local what=$1 kernel

	if await "$DEADLINE_S" all_prefixes learnt; then
		pass "$what: the router learns the three VIPs from AS 65001"
	else
		fail "$what: the router lacks a VIP: $(router show route table all)"
	fi
	if router show route 198.18.1.1/32 | grep -q 'via 198.18.0.10 '; then
		pass "$what: next hop of 198.18.1.1/32 at the router: the node (198.18.0.10)"
	else
		fail "$what: next hop at the router: $(router show route 198.18.1.1/32)"
	fi
	kernel=$(ip -n "${P}node" route show table all; ip -n "${P}node" -6 route show table all)
	if grep -Eq '198\.18\.1\.|2001:db8:1::' <<<"$kernel"; then
		fail "$what: the node's kernel got a VIP route: $(grep -E '198\.18\.1\.|2001:db8:1::' <<<"$kernel")"
	else
		pass "$what: the node's kernel has no VIP route"
	fi
}

withdrawn_all() {
	if await "$DEADLINE_S" all_prefixes withdrawn; then
		pass "$1: the router withdraws the three VIPs"
	else
		fail "$1: the router still has a VIP: $(router show route table all)"
	fi
}

# expect_ok NAME COMMAND...: exit 0; its output in $out.
expect_ok() {
	local name=$1 rc=0

	shift
	out=$("$@" 2>&1) || rc=$?
	if [ $rc -eq 0 ]; then
		pass "$name: exit 0 ($out)"
	else
		fail "$name: exit $rc: $out"
	fi
}

# refused NAME STDERR_RE COMMAND...: exit 1 and the reason on stderr.
refused() {
	local name=$1 re=$2 rc=0

	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ $rc -eq 1 ] && grep -Eq "$re" "$tmp/err"; then
		pass "$name: exit 1, '$(head -n 1 "$tmp/err")'"
	else
		fail "$name: exit $rc, stderr '$(cat "$tmp/err")'"
	fi
}

# ---------------------------------------------------------------- bird2
bird2_scenario() {
	local routes

	# The example as shipped, its route files moved under $tmp, in a
	# bird.conf that exports everything of master4 and master6 to the
	# kernel.
	sed "s|/run/magl\[b\]/|$tmp/magl[b]/|" "$hooks/bird2.conf.example" >"$tmp/maglb.conf"
	cat >"$tmp/node.conf" <<-CONF
	router id 198.18.0.10;
	protocol device {}
	protocol kernel { ipv4 { export all; }; }
	protocol kernel { ipv6 { export all; }; }
	include "$tmp/maglb.conf";
	CONF
	ip netns exec "${P}node" bird -c "$tmp/node.conf" -s "$tmp/node.ctl" -P "$tmp/node.pid" ||
		{ log "the node's bird did not start"; exit 1; }
	sessions_up "bird2"

	export MAGLB_BIRD_ROUTES4=$tmp/maglb/bird-vips4.conf
	export MAGLB_BIRD_ROUTES6=$tmp/maglb/bird-vips6.conf
	export MAGLB_BIRD_SOCKET=$tmp/node.ctl
	expect_ok "bird2 active" env MAGLB_ROLE=active "$hooks/bird2" active
	routes=$(birdc -s "$tmp/node.ctl" show route table all)
	if grep -q '^198.18.1.1/32 .*blackhole' <<<"$routes" &&
		grep -q '^198.18.1.2/32 .*blackhole' <<<"$routes" &&
		grep -q '^2001:db8:1::1/128 .*blackhole' <<<"$routes"; then
		pass "bird2 active: the node's BIRD holds a blackhole route per VIP"
	else
		fail "bird2 active: routes missing in the node's BIRD: $routes"
	fi
	mode=$(stat -c %a "$MAGLB_BIRD_ROUTES4")
	if [ "$mode" = 644 ]; then
		pass "bird2 active: the route file is readable by BIRD's user (0644)"
	else
		fail "bird2 active: route file mode $mode, want 644"
	fi
	announced "bird2 active"

	expect_ok "bird2 passive" env MAGLB_ROLE=passive "$hooks/bird2" passive
	if birdc -s "$tmp/node.ctl" show route table all | grep -Eq '^(198\.18\.1\.|2001:db8:1::)'; then
		fail "bird2 passive: the node's BIRD still holds VIP routes"
	else
		pass "bird2 passive: the node's BIRD holds no VIP route"
	fi
	withdrawn_all "bird2 passive"

	refused "bird2 unknown role" "^bird2: role 'standby'" "$hooks/bird2" standby
	cp "$MAGLB_BIRD_ROUTES4" "$tmp/before"
	refused "bird2 bad IPv4 address" "^bird2: '198.18.1.1;' in MAGLB_VIPS4" \
		env MAGLB_VIPS4='198.18.1.1;' "$hooks/bird2" active
	if cmp -s "$tmp/before" "$MAGLB_BIRD_ROUTES4"; then
		pass "bird2 bad IPv4 address: the route file is untouched"
	else
		fail "bird2 bad IPv4 address: the route file changed"
	fi
	refused "bird2 bad IPv6 address" "^bird2: '2001:db8:1::1}' in MAGLB_VIPS6" \
		env MAGLB_VIPS6='2001:db8:1::1}' "$hooks/bird2" active
	refused "bird2 BIRD unreachable" "^bird2: birdc -s $tmp/nowhere.ctl configure failed" \
		env MAGLB_BIRD_SOCKET="$tmp/nowhere.ctl" "$hooks/bird2" passive
	# The operator broke bird.conf: BIRD refuses to reload and keeps
	# running what it had (no VIP route).
	echo 'this is not bird config' >>"$tmp/node.conf"
	refused "bird2 BIRD refuses its config" \
		"^bird2: birdc -s $tmp/node.ctl configure failed: .*syntax error" \
		"$hooks/bird2" active
	if birdc -s "$tmp/node.ctl" show route table all | grep -Eq '^(198\.18\.1\.|2001:db8:1::)'; then
		fail "bird2 BIRD refused: yet it runs the new routes"
	else
		pass "bird2 BIRD refused: it keeps its running config"
	fi
	unset MAGLB_BIRD_ROUTES4 MAGLB_BIRD_ROUTES6 MAGLB_BIRD_SOCKET
	stop_pidfile "$tmp/node.pid"
}

# ------------------------------------------------------------------ frr
# frr_unchanged ROLE: the hook run again for ROLE changes nothing.
frr_unchanged() {
	expect_ok "frr $1 again" "$hooks/frr" "$1"
	if [[ $out == *"(0 change(s))" ]]; then
		pass "frr $1 again: nothing to change"
	else
		fail "frr $1 again: $out"
	fi
}

frr_scenario() {
	local d daemon

	d=/etc/frr/$frr_ns
	mkdir -p "$d" "/run/frr/$frr_ns"
	# hooks/README.md's config for a node.
	cat >"$d/frr.conf" <<-CONF
	router bgp 65001
	 bgp router-id 198.18.0.10
	 no bgp default ipv4-unicast
	 no bgp ebgp-requires-policy
	 no bgp network import-check
	 neighbor 198.18.0.1 remote-as 65000
	 neighbor 198.18.0.1 timers 3 9
	 neighbor 2001:db8::1 remote-as 65000
	 neighbor 2001:db8::1 timers 3 9
	 address-family ipv4 unicast
	  neighbor 198.18.0.1 activate
	 exit-address-family
	 address-family ipv6 unicast
	  neighbor 2001:db8::1 activate
	 exit-address-family
	CONF
	: >"$d/vtysh.conf"
	chown -R frr:frr "$d" "/run/frr/$frr_ns"
	# The router's sessions start afresh, without the back-off of the
	# sessions BIRD closed.
	router restart '"node*"' >/dev/null
	for daemon in zebra bgpd; do
		ip netns exec "${P}node" "/usr/lib/frr/$daemon" -N "$frr_ns" -d \
			-f "$d/frr.conf" -i "/run/frr/$frr_ns/$daemon.pid" >"$tmp/$daemon.log" 2>&1 ||
			{ cat "$tmp/$daemon.log" >&2; log "frr: $daemon did not start"; exit 1; }
	done
	sessions_up "frr"

	export MAGLB_VTYSH="vtysh -N $frr_ns" MAGLB_FRR_ASN=65001
	expect_ok "frr active" env MAGLB_ROLE=active "$hooks/frr" active
	announced "frr active"
	frr_unchanged active

	expect_ok "frr passive" env MAGLB_ROLE=passive "$hooks/frr" passive
	withdrawn_all "frr passive"
	frr_unchanged passive
	if vtysh -N "$frr_ns" -c 'show running-config' | grep -Eq '^ +network '; then
		fail "frr passive: a network is left in the running config"
	else
		pass "frr passive: no network left in the running config"
	fi

	refused "frr unknown role" "^frr: role 'standby'" "$hooks/frr" standby
	refused "frr no AS number" "^frr: MAGLB_FRR_ASN is not set" \
		env MAGLB_FRR_ASN= "$hooks/frr" active
	refused "frr another AS number" "^frr: vtysh refused: .*AS is 65001" \
		env MAGLB_FRR_ASN=65002 "$hooks/frr" active
	refused "frr bad IPv4 address" "^frr: '198.18.1.1;' in MAGLB_VIPS4" \
		env MAGLB_VIPS4='198.18.1.1;' "$hooks/frr" active
	refused "frr not running" "^frr: vtysh cannot read FRR's running config" \
		env MAGLB_VTYSH="vtysh -N $frr_ns-nowhere" "$hooks/frr" active
	unset MAGLB_VTYSH MAGLB_FRR_ASN
}

export MAGLB_VIPS4=$VIPS4 MAGLB_VIPS6=$VIPS6
bird2_scenario
if [ -x /usr/lib/frr/bgpd ] && command -v vtysh >/dev/null; then
	frr_scenario
else
	log "frr: not installed (apt-get install frr), its hook untested"
fi

if command -v shellcheck >/dev/null; then
	if shellcheck -s sh "$hooks/bird2" "$hooks/frr"; then
		pass "shellcheck: bird2 and frr clean"
	else
		fail "shellcheck: bird2 or frr"
	fi
fi

printf '%d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
