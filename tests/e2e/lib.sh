# shellcheck shell=bash
# maglb end-to-end test library: network namespaces, the test topology and
# the test tools (tests/tools). Source it from a bash test, as root:
#
#   . tests/e2e/lib.sh
#   P=mytest-                            # unique namespace prefix per test
#   trap 'topo_teardown "$P"' EXIT
#   topo_setup "$P" l2                   # or: tunnel [MTU]
#   start_backends "$P"
#   run_in "${P}c" "$LBTOOLS/lbclient" --connect "$TOPO_VIP4" "$TOPO_PORT" --conns 20
#
# Needs: iproute2, ethtool, procps (sysctl), jq (to read lbclient --json), and
# the tools built: LBTOOLS (default: build/tests/tools of this checkout).
# Test traffic stays inside the namespaces created here, and uses only
# 198.18.0.0/15 and 2001:db8::/32.
#
# Topology. Namespaces are ${P}c (client), ${P}r (router), ${P}lb (the load
# balancer node), ${P}b1 ${P}b2 ${P}b3 (backends). MACs are fixed so that a
# dataplane config can name them.
#
#   ${P}c   c0  198.18.10.2/24  2001:db8:10::2/64  02:00:00:00:10:02
#            |   client segment
#   ${P}r   rc  198.18.10.1/24  2001:db8:10::1/64  02:00:00:00:10:01
#           br0 198.18.0.1/24   2001:db8::1/64     02:00:00:00:00:01  LB segment (bridge)
#            |-- rl == lb0 in ${P}lb: 198.18.0.10/24 2001:db8::10/64 02:00:00:00:00:10
#            |-- rb1..rb3 == eth0 in ${P}bN                          (l2 mode)
#                 198.18.0.21-23/24  2001:db8::21-23/64  02:00:00:00:00:21-23
#           br1 198.18.20.1/24  2001:db8:20::1/64  02:00:00:00:20:01  backend segment
#            |-- rb1..rb3 == eth0 in ${P}bN                          (tunnel mode)
#                 198.18.20.21-23/24 2001:db8:20::21-23/64 02:00:00:00:20:21-23
#
#   VIP prefixes 198.18.1.0/24 and 2001:db8:1::/64: the router routes them to
#   the LB node (198.18.0.10, 2001:db8::10). Every backend has the VIPs
#   198.18.1.1 and 2001:db8:1::1 on lo (more: backend_add_vip), serves
#   TOPO_PORT (8000, TCP and UDP) with lbserver, and routes by default through
#   the router, so replies leave with the VIP as source straight to the client
#   (DSR): rp_filter is off on the router and the backends.
#
#   l2:     backends sit on the LB segment; arp_ignore=1, arp_announce=2 keep
#           them from answering ARP for the VIP (IPv6 answers neighbour
#           solicitations only for addresses of the receiving interface, so a
#           VIP on lo stays silent). The LB rewrites the destination MAC.
#   tunnel: backends sit on their own segment behind the router; the LB sends
#           GRE or IP-in-IP from 198.18.0.10 / 2001:db8::10 to 198.18.20.2N /
#           2001:db8:20::2N through its default route (next hop: the router,
#           198.18.0.1 / 2001:db8::1, MAC 02:00:00:00:00:01). Each backend runs
#           decap (TUN "dtun", rp_filter off) so the kernel gets the inner packet.
#           The optional MTU sets the LB and backend segments (default 1500:
#           then encapsulated full-size packets need fragments or too-big replies).
#
# The LB node: lb0 has the node's address and default routes (management
# traffic), ip_forward off, no VIP, no forwarder: a test starts the dataplane
# there, with DPDK's net_af_packet on lb0 (see topo_lb_dataplane_args). TSO,
# GSO, GRO and TX checksum offload are off on every topology interface, above
# all on both ends of rl == lb0: af_packet must see wire-size frames with
# complete checksums.
#
# lb_kernel_standin makes the plain Linux kernel play the load balancer, to
# prove the topology without the dataplane (see there).

TOPO_VIP4=198.18.1.1
TOPO_VIP6=2001:db8:1::1
TOPO_VIP_PREFIX4=198.18.1.0/24
TOPO_VIP_PREFIX6=2001:db8:1::/64
TOPO_PORT=8000
TOPO_CLIENT4=198.18.10.2
TOPO_CLIENT6=2001:db8:10::2
TOPO_LB_IF=lb0
TOPO_LB_ADDR4=198.18.0.10
TOPO_LB_ADDR6=2001:db8::10
TOPO_LB_MAC=02:00:00:00:00:10
TOPO_ROUTER_ADDR4=198.18.0.1
TOPO_ROUTER_ADDR6=2001:db8::1
TOPO_ROUTER_MAC=02:00:00:00:00:01
TOPO_BACKENDS=(b1 b2 b3)
TOPO_OFFLOADS_OFF=(tso off gso off gro off tx off)
TOPO_ENCAPSEND_EXTRA=()   # more encapsend arguments for lb_kernel_standin

: "${LBTOOLS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/tests/tools}"

log() { printf '%s\n' "$*" >&2; }

# run_in NS CMD...: run CMD inside namespace NS.
run_in() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# await_cond TIMEOUT_S CMD...: poll CMD every 50 ms until it succeeds;
# returns 1 (and says so) if TIMEOUT_S seconds pass first.
await_cond() { await_cond_every 0.05 "$@"; }

# await_cond_every INTERVAL_S TIMEOUT_S CMD...: the same, polling every
# INTERVAL_S (where each poll costs what is measured).
await_cond_every() {
	local every=$1 timeout=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		if ((SECONDS >= deadline)); then
			log "await_cond: timed out after ${timeout}s: $*"
			return 1
		fi
		sleep "$every"
	done
}

# The state folder of a topology: logs, pids, mode.
topo_dir() { printf '%s/maglb-e2e.%s' "${TMPDIR:-/tmp}" "$1"; }

# eal_dirs EAL_PREFIX: the runtime folders a DPDK process of that --file-prefix
# leaves behind, --no-shconf or not: remove them once it has exited.
eal_dirs() { printf '%s\n' "/var/run/dpdk/$1" "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/$1"; }

# Backend N's address in MODE (l2: LB segment, tunnel: backend segment).
topo_backend_addr4() { [ "$1" = l2 ] && echo "198.18.0.2$2" || echo "198.18.20.2$2"; }
topo_backend_addr6() { [ "$1" = l2 ] && echo "2001:db8::2$2" || echo "2001:db8:20::2$2"; }
topo_backend_mac() { [ "$1" = l2 ] && echo "02:00:00:00:00:2$2" || echo "02:00:00:00:20:2$2"; }

# topo_lb_dataplane_args PREFIX: the EAL vdev for the LB node's port.
topo_lb_dataplane_args() {
	printf '%s\n' "--vdev=net_af_packet0,iface=$TOPO_LB_IF,qpairs=1" --no-pci
}

_pid_gone() {
	! kill -0 "$1" 2>/dev/null ||
		[ "$(sed -n 's/^[0-9]* (.*) \([A-Z]\).*/\1/p' "/proc/$1/stat" 2>/dev/null)" = Z ]
}

# _kill_pids PID...: SIGTERM, up to 5 s to exit, then SIGKILL.
_kill_pids() {
	local pid
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2>/dev/null || true
	for pid in "$@"; do
		await_cond 5 _pid_gone "$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}

# topo_cleanup_stale PREFIX: end the processes in, and delete, every namespace
# whose name starts with PREFIX (leftovers of an earlier run).
topo_cleanup_stale() {
	local prefix=$1 ns pids
	[ -n "$prefix" ] || { log "topo_cleanup_stale: empty prefix"; return 1; }
	for ns in $(ip netns list | awk '{print $1}'); do
		[[ $ns == "$prefix"* ]] || continue
		mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
		_kill_pids "${pids[@]}"
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "$(topo_dir "$prefix")"
}

# topo_teardown PREFIX: stop what the library started, delete the namespaces.
# Safe to call twice, and from an EXIT trap after a failure.
topo_teardown() {
	local prefix=$1 dir pidfile pids=()
	dir=$(topo_dir "$prefix")
	for pidfile in "$dir"/*.pid; do
		[ -e "$pidfile" ] && pids+=("$(<"$pidfile")")
	done
	_kill_pids "${pids[@]}"
	topo_cleanup_stale "$prefix"
}

_sysctl() {
	local ns=$1
	shift
	ip netns exec "$ns" sysctl -qw "$@" >/dev/null
}

_ns_new() {
	ip netns add "$1"
	ip -n "$1" link set dev lo up
	# Before any interface exists, so that every one inherits "default".
	_sysctl "$1" net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
		net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
}

# _link_up NS IF MAC MTU ADDR4/LEN ADDR6/LEN: configure and raise one interface.
_link_up() {
	local ns=$1 dev=$2 mac=$3 mtu=$4 addr4=$5 addr6=$6
	ip -n "$ns" link set dev "$dev" address "$mac" mtu "$mtu"
	ip netns exec "$ns" ethtool -K "$dev" "${TOPO_OFFLOADS_OFF[@]}" >/dev/null 2>&1 ||
		{ log "ethtool -K $dev failed in $ns"; return 1; }
	[ -z "$addr4" ] || ip -n "$ns" addr add "$addr4" dev "$dev"
	[ -z "$addr6" ] || ip -n "$ns" addr add "$addr6" dev "$dev" nodad
	ip -n "$ns" link set dev "$dev" up
}

# _veth NS_A IF_A NS_B IF_B: a veth pair between two namespaces.
_veth() {
	ip -n "$1" link add name "$2" type veth peer name "$4" netns "$3"
}

# True once IF carries traffic: carrier up and a real qdisc attached
# (until the link watcher runs, "qdisc noop" drops every packet).
_link_ready() {
	local out
	out=$(ip -n "$1" -o link show dev "$2" 2>/dev/null) || return 1
	[[ $out == *LOWER_UP* && $out != *"qdisc noop"* ]]
}

_topo_router() {
	local p=$1 mode=$2 mtu=$3 r=${1}r
	_sysctl "$r" net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
	_veth "$r" rc "${p}c" c0
	_link_up "${p}c" c0 02:00:00:00:10:02 1500 "$TOPO_CLIENT4/24" "$TOPO_CLIENT6/64"
	ip -n "${p}c" route add default via 198.18.10.1
	ip -n "${p}c" -6 route add default via 2001:db8:10::1
	_link_up "$r" rc 02:00:00:00:10:01 1500 198.18.10.1/24 2001:db8:10::1/64
	ip -n "$r" link add name br0 type bridge stp_state 0 mcast_snooping 0
	_link_up "$r" br0 "$TOPO_ROUTER_MAC" "$mtu" 198.18.0.1/24 2001:db8::1/64
	if [ "$mode" = tunnel ]; then
		ip -n "$r" link add name br1 type bridge stp_state 0 mcast_snooping 0
		_link_up "$r" br1 02:00:00:00:20:01 "$mtu" 198.18.20.1/24 2001:db8:20::1/64
	fi
	ip -n "$r" route add "$TOPO_VIP_PREFIX4" via "$TOPO_LB_ADDR4"
	ip -n "$r" -6 route add "$TOPO_VIP_PREFIX6" via "$TOPO_LB_ADDR6"
}

_topo_lb() {
	local p=$1 mtu=$2 lb=${1}lb
	_sysctl "$lb" net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0
	_veth "${p}r" rl "$lb" "$TOPO_LB_IF"
	_link_up "${p}r" rl 02:00:00:00:00:02 "$mtu" "" ""
	ip -n "${p}r" link set dev rl master br0
	_link_up "$lb" "$TOPO_LB_IF" "$TOPO_LB_MAC" "$mtu" "$TOPO_LB_ADDR4/24" "$TOPO_LB_ADDR6/64"
	ip -n "$lb" route add default via "$TOPO_ROUTER_ADDR4"
	ip -n "$lb" -6 route add default via "$TOPO_ROUTER_ADDR6"
}

_topo_backend() {
	local p=$1 mode=$2 mtu=$3 n=$4 b=${1}b$4 bridge=br0 gw4=198.18.0.1 gw6=2001:db8::1
	if [ "$mode" = tunnel ]; then
		bridge=br1 gw4=198.18.20.1 gw6=2001:db8:20::1
	fi
	_sysctl "$b" net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 \
		net.ipv4.conf.default.arp_ignore=1 net.ipv4.conf.default.arp_announce=2
	_veth "${p}r" "rb$n" "$b" eth0
	_link_up "${p}r" "rb$n" "02:00:00:00:0$n:0$n" "$mtu" "" ""
	ip -n "${p}r" link set dev "rb$n" master "$bridge"
	_link_up "$b" eth0 "$(topo_backend_mac "$mode" "$n")" "$mtu" \
		"$(topo_backend_addr4 "$mode" "$n")/24" "$(topo_backend_addr6 "$mode" "$n")/64"
	ip -n "$b" route add default via "$gw4"
	ip -n "$b" -6 route add default via "$gw6"
	backend_add_vip "$p" "b$n" "$TOPO_VIP4"
	backend_add_vip "$p" "b$n" "$TOPO_VIP6"
}

# backend_add_vip PREFIX BACKEND ADDR: put VIP ADDR (v4 or v6) on BACKEND's lo.
backend_add_vip() {
	local ns=${1}$2 addr=$3
	if [[ $addr == *:* ]]; then
		ip -n "$ns" addr add "$addr/128" dev lo nodad
	else
		ip -n "$ns" addr add "$addr/32" dev lo
	fi
}

# _topo_await_links PREFIX MODE: until every interface carries traffic.
_topo_await_links() {
	local p=$1 mode=$2 b dev
	local links=("${p}c c0" "${p}r rc" "${p}r br0" "${p}r rl" "${p}lb $TOPO_LB_IF")
	[ "$mode" = tunnel ] && links+=("${p}r br1")
	for b in 1 2 3; do
		links+=("${p}r rb$b" "${p}b$b eth0")
	done
	for dev in "${links[@]}"; do
		# shellcheck disable=SC2086 # "NS IF" splits on purpose
		await_cond 10 _link_ready $dev || return 1
	done
}

# topo_setup PREFIX MODE [MTU]: build the topology above (MODE l2 or tunnel)
# after removing leftovers with PREFIX. In tunnel mode, decap runs on every
# backend. Returns once every link carries traffic.
topo_setup() {
	local p=$1 mode=$2 mtu=${3:-1500} dir ns n
	case $mode in
	l2 | tunnel) ;;
	*) log "topo_setup: mode must be l2 or tunnel, not '$mode'"; return 2 ;;
	esac
	command -v ethtool >/dev/null || { log "topo_setup: ethtool missing (apt-get install ethtool)"; return 1; }
	topo_cleanup_stale "$p"
	dir=$(topo_dir "$p")
	mkdir -p "$dir"
	echo "$mode" >"$dir/mode"
	for ns in c r lb b1 b2 b3; do
		_ns_new "${p}$ns"
	done
	_topo_router "$p" "$mode" "$mtu"
	_topo_lb "$p" "$mtu"
	for n in 1 2 3; do
		_topo_backend "$p" "$mode" "$mtu" "$n"
	done
	_topo_await_links "$p" "$mode" || return 1
	if [ "$mode" = tunnel ]; then
		for n in 1 2 3; do
			start_tool "$p" "decap-b$n" "${p}b$n" "$LBTOOLS/decap" --tun dtun || return 1
			await_cond 10 _link_ready "${p}b$n" dtun || return 1
		done
	fi
}

# backend_sockets PREFIX: the backends' established connections to
# TOPO_PORT, printed; fails while one has unacknowledged data (its client's
# ACK has not crossed the load balancer yet).
backend_sockets() {
	local p=$1 b out sockets=0
	for b in "${TOPO_BACKENDS[@]}"; do
		out=$(run_in "${p}$b" ss -tinH state established "( sport = :$TOPO_PORT )") ||
			return 1
		[[ $out != *unacked:* ]] || return 1
		sockets=$((sockets + $(grep -c '^[0-9]' <<<"$out")))
	done
	echo "$sockets"
}

# start_tool PREFIX NAME NS CMD...: start CMD in NS in the background with
# stdout/stderr in $(topo_dir PREFIX)/NAME.out/.err, and wait (10 s at most)
# for its "ready" line. Fails, showing its stderr, if it exits or times out.
start_tool() {
	local p=$1 name=$2 ns=$3 dir pid
	shift 3
	dir=$(topo_dir "$p")
	# A "ready" left by an earlier run of NAME must not count: the shell
	# forked below truncates the file only some time after this one goes on.
	: >"$dir/$name.out"
	ip netns exec "$ns" "$@" >"$dir/$name.out" 2>"$dir/$name.err" &
	pid=$!
	echo "$pid" >"$dir/$name.pid"
	await_cond 10 _ready_or_gone "$dir/$name.out" "$pid" 2>/dev/null
	if ! grep -qx ready "$dir/$name.out"; then
		local status=running
		if _pid_gone "$pid"; then
			wait "$pid" && status="exit 0" || status="exit $?"
		fi
		log "start_tool: $name ($*) did not get ready ($status); stderr:"
		cat "$dir/$name.err" >&2
		return 1
	fi
}

_ready_or_gone() { grep -qx ready "$1" || _pid_gone "$2"; }

# stop_tool PREFIX NAME: SIGTERM the tool started as NAME, await its exit.
stop_tool() {
	local pidfile
	pidfile="$(topo_dir "$1")/$2.pid"
	[ -e "$pidfile" ] || return 0
	_kill_pids "$(<"$pidfile")"
	rm -f "$pidfile"
}

# tool_counters PREFIX NAME: SIGUSR1 to decap or encapsend started as NAME;
# prints the counter line it writes to stderr, as "key=value" words.
tool_counters() {
	local dir name=$2 before
	dir=$(topo_dir "$1")
	before=$(wc -l <"$dir/$name.err")
	kill -USR1 "$(<"$dir/$name.pid")"
	await_cond 5 _lines_above "$dir/$name.err" "$before" || return 1
	tail -n 1 "$dir/$name.err" | cut -d: -f2-
}

_lines_above() { [ "$(wc -l <"$1")" -gt "$2" ]; }

# counter_value NAME "COUNTER LINE": the value of NAME in a tool_counters line.
counter_value() {
	local word
	for word in $2; do
		[ "${word%%=*}" = "$1" ] && { echo "${word#*=}"; return 0; }
	done
	echo 0
}

# start_backends PREFIX [LBSERVER ARGS...]: lbserver b1..b3 on TOPO_PORT (TCP
# and UDP, all addresses), each awaited until ready.
start_backends() {
	local p=$1 b
	shift
	for b in "${TOPO_BACKENDS[@]}"; do
		start_tool "$p" "lbserver-$b" "${p}$b" "$LBTOOLS/lbserver" --name "$b" \
			--tcp "$TOPO_PORT" --udp "$TOPO_PORT" "$@" || return 1
	done
}

# lb_kernel_standin PREFIX l2 [BACKEND...]
# lb_kernel_standin PREFIX tunnel gre|ipip 4|6 [BACKEND...]
#   The plain kernel plays the load balancer in ${PREFIX}lb (for proving the
#   topology only; a dataplane test never calls this). Forwarding goes on, and
#   the VIP prefixes go to the backends (default b1 b2 b3):
#   l2: a multipath route through the backends' LB-segment addresses, hashed
#       per flow on addresses and ports (fib_multipath_hash_policy=1): the
#       kernel rewrites the MAC like L2 direct routing; replies bypass the LB.
#   tunnel: the VIPs are routed into TUN "lbt" where encapsend wraps each
#       packet in GRE or IP-in-IP over IPv4 (4) or IPv6 (6) to one backend,
#       hashed per flow; the backend's decap unwraps it.
#   Calling it again replaces the previous stand-in (a "backend change").
lb_kernel_standin() {
	local p=$1 mode=$2 lb=${1}lb encap family b n
	local hops4=() hops6=() targets=()
	shift 2
	if [ "$mode" = tunnel ]; then
		encap=$1 family=$2
		shift 2
	fi
	[ $# -gt 0 ] || set -- "${TOPO_BACKENDS[@]}"
	lb_kernel_standin_stop "$p"
	_sysctl "$lb" net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
		net.ipv4.conf.all.send_redirects=0 net.ipv4.conf."$TOPO_LB_IF".send_redirects=0 \
		net.ipv4.fib_multipath_hash_policy=1 net.ipv6.fib_multipath_hash_policy=1
	for b in "$@"; do
		n=${b#b}
		case $mode in
		l2)
			hops4+=(nexthop via "$(topo_backend_addr4 l2 "$n")" dev "$TOPO_LB_IF")
			hops6+=(nexthop via "$(topo_backend_addr6 l2 "$n")" dev "$TOPO_LB_IF")
			;;
		tunnel)
			if [ "$family" = 4 ]; then
				targets+=(--to "$(topo_backend_addr4 tunnel "$n")")
			else
				targets+=(--to "$(topo_backend_addr6 tunnel "$n")")
			fi
			;;
		esac
	done
	if [ "$mode" = l2 ]; then
		ip -n "$lb" route replace "$TOPO_VIP_PREFIX4" "${hops4[@]}"
		ip -n "$lb" -6 route replace "$TOPO_VIP_PREFIX6" "${hops6[@]}"
		return 0
	fi
	start_tool "$p" encapsend "$lb" "$LBTOOLS/encapsend" --tun lbt --encap "$encap" \
		"${targets[@]}" "${TOPO_ENCAPSEND_EXTRA[@]}" || return 1
	await_cond 10 _link_ready "$lb" lbt || return 1
	ip -n "$lb" route replace "$TOPO_VIP_PREFIX4" dev lbt
	ip -n "$lb" -6 route replace "$TOPO_VIP_PREFIX6" dev lbt
}

# lb_kernel_standin_stop PREFIX: back to an empty LB node (forwarding off).
lb_kernel_standin_stop() {
	local p=$1 lb=${1}lb
	stop_tool "$p" encapsend
	ip -n "$lb" route del "$TOPO_VIP_PREFIX4" 2>/dev/null || true
	ip -n "$lb" -6 route del "$TOPO_VIP_PREFIX6" 2>/dev/null || true
	_sysctl "$lb" net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0
}
