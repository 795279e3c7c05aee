# shellcheck shell=bash
# Failover topologies and measurements on top of cluster.sh, for the
# failover suite (check_failover.sh). Sources cluster.sh. As root:
#
#   . tests/e2e/failover.sh
#   P=mytest-
#   trap 'cluster_teardown "$P"' EXIT
#   cluster_setup "$P" 2 && start_backends "$P" && failover_ap_route "$P"
#   ... corosync, dataplane, syncd per node (cluster.sh) ...
#   failover_watch_start "$P"
#   failover_hold_start "$P" h 200
#   t=$(failover_now_us); cluster_dataplane_kill9 "$P" 1
#   failover_await_event "$P" "$t" garp ip="$TOPO_VIP4" mac="$(cluster_node_mac 2)"
#   failover_hold_stop "$P" h
#   failover_report NAME "$(failover_hold_json "$P" h)" TAKEOVER_MS
#
# Routes on the router (${P}r):
#   failover_ap_route PREFIX          active-passive: the VIPs on-link on br0
#                                     (VIP/32, VIP6/128 dev br0; cluster.sh's
#                                     VIP prefix routes removed), so the router
#                                     ARPs (solicits) for them and follows
#                                     gratuitous ARPs / unsolicited NAs
#   failover_aa_route PREFIX I...     active-active: VIP/32 and VIP6/128 through
#                                     nodes I... (ECMP, L4 hash); none: no route
#   failover_aa_withdraw PREFIX I     node I's next hop out of that route
#   failover_aa_restore PREFIX I      ... and back in
#   failover_nexthops PREFIX [4|6]    the next hops of the router's VIP route,
#                                     one address a line, sorted
#   failover_await_nexthops PREFIX K [TIMEOUT_S] [4|6]
#                                     until that route has exactly K next hops
#   failover_router_hash PREFIX       the router hashes flows over next hops
#                                     by their headers only (policy 3, fields
#                                     0x37: addresses, protocol, ports; no
#                                     flow label), as a hardware router: a
#                                     flow keeps its next hop across its
#                                     retransmissions (policy 1 follows the
#                                     sender's socket hash, which TCP changes
#                                     on a timeout, and moves it by itself)
#   failover_nexthop_of PREFIX SPORT [4|6]
#                                     the next hop the router picks for the
#                                     client's TCP flow from SPORT to the VIP
#                                     (ip route get, as forwarded from rc)
# Backends:
#   failover_backend_add PREFIX N     backend bN (N >= 4) like lib.sh's b1..b3
#                                     (l2, on br0, VIPs on lo), with lbserver;
#                                     joins TOPO_BACKENDS
# Nodes:
#   failover_config PREFIX I FILE CLUSTER_KEYS [BACKEND...]
#                                     cluster_config, plus CLUSTER_KEYS (e.g.
#                                     'mode = "active-active";') in the cluster
#                                     group, priority 250 - I (node 1 first),
#                                     and VIP "web6" (TOPO_VIP6, TOPO_PORT) to
#                                     the same backends' IPv6 addresses
#   failover_node_start PREFIX I CONFIG
#                                     corosync (unless running), dataplane, syncd
#   failover_node_kill9 PREFIX I      the whole node at once (SIGKILL to its
#                                     dataplane, syncd, corosync and bird), reaped
#   failover_reload PREFIX I CONFIG   dataplane and syncd of node I reload CONFIG
#   failover_cluster_json PREFIX I    maglbctl --json cluster of node I's syncd;
#                                     fails, saying why, where the command is
#                                     not supported (membership not built)
#   failover_cluster_value PREFIX I JQ
#                                     one value of it (jq -r JQ)
#   failover_await_cluster PREFIX I JQ [TIMEOUT_S]
#                                     until JQ (a jq predicate) holds on it
# What the router sees (started before the event, read after):
#   failover_watch_start PREFIX       l2watch on br0 (ARP, NA for the VIPs)
#                                     and `ip monitor route` in the router
#   failover_events PREFIX            every event so far, a line each:
#                                     "t_us=.. kind=garp|arp-reply|arp-request|
#                                     na|na-reply ip=.. mac=.." and
#                                     "t_us=.. kind=route-add|route-del dst=..
#                                     via=A,B,.." (route-add: the route as it
#                                     now is), t_us on CLOCK_REALTIME
#   failover_first_event_after PREFIX T_US KIND [FIELD=VALUE...]
#                                     the t_us of the first such event after
#                                     T_US; fails when there is none
#   failover_await_event PREFIX T_US KIND [FIELD=VALUE...]
#                                     ... awaited (10 s at most)
#   failover_now_us                   CLOCK_REALTIME in us, as t_us
#   failover_ms_since T_US T2_US      (T2 - T) in whole ms
# Connections (lbhold in ${P}c):
#   failover_hold_start PREFIX NAME CONNS [ADDR] [LBHOLD ARGS...]
#                                     CONNS held connections to ADDR (default
#                                     TOPO_VIP4) port TOPO_PORT, one line each
#                                     FAILOVER_INTERVAL_MS (100); returns once
#                                     all are answered (fails if one failed)
#   failover_hold_snapshot PREFIX NAME
#                                     its summary now (JSON, SIGUSR1)
#   failover_hold_await_replies PREFIX NAME T_US [TIMEOUT_S]
#                                     until every live connection has been
#                                     answered since T_US
#   failover_hold_stop PREFIX NAME    SIGTERM, await it; its summary is then in
#                                     failover_hold_json PREFIX NAME (a file)
#   failover_hold_merge JSON...       several summaries as one (sums, longest
#                                     gap), on stdout
#   failover_report SCENARIO JSON TAKEOVER_MS
#                                     prints "scenario=.. connections=N
#                                     survived=M takeover_ms=T max_gap_ms=G";
#                                     fails unless M = N
# bird2 (BGP: the router learns each node's VIP routes):
#   failover_bird_router_start PREFIX bird on the router (AS 65000) peering with
#                                     every node's lb0 address, v4 and v6; the
#                                     paths merged (ECMP) into its kernel table
#   failover_bird_node_start PREFIX I bird in node I (AS 6500I) announcing the
#                                     static routes of its include files
#                                     (failover_bird_routes_file I 4|6), empty
#                                     at start
#   failover_bird_announce PREFIX I on|off
#                                     writes those files (the VIPs' routes, or
#                                     none) and reconfigures, as the bird2 hook
#                                     does
#   failover_bird_socket PREFIX I, failover_bird_routes_file PREFIX I 4|6
#                                     node I's control socket and include files
#                                     (the hook's MAGLB_BIRD_SOCKET,
#                                     MAGLB_BIRD_ROUTES4, MAGLB_BIRD_ROUTES6)
#   failover_bird_await_sessions PREFIX K [TIMEOUT_S]
#                                     until exactly K BGP sessions of the
#                                     router are established (2 a node: v4, v6)
# bird2 with BFD (static routes; the nodes' dataplanes answer BFD):
#   failover_bfd_conf INTERVAL_MS MULT
#                                     the nodes' bfd section (CONF_EXTRA):
#                                     the router's br0 addresses as peers
#   failover_bfd_router_start PREFIX INTERVAL_MS MULT I...
#                                     bird on the router: BFD on br0 (min rx =
#                                     min tx = INTERVAL_MS, MULT), static ECMP
#                                     routes VIP/32 and VIP6/128 via nodes
#                                     I...'s data addresses, each next hop
#                                     "bfd", exported to the kernel
#                                     (packaging/router/bird2-static-bfd.conf's
#                                     shape); cluster.sh's VIP prefix routes
#                                     removed first
#   failover_bfd_bgp_router_start PREFIX INTERVAL_MS MULT I...
#                                     the same BFD, and BGP with nodes I...'s
#                                     bird (failover_bird_node_start) in
#                                     place of the static routes: each BGP
#                                     next hop resolved only through a host
#                                     route guarded by BFD
#                                     (packaging/router/bird2-bgp-bfd.conf's
#                                     shape), ECMP into the kernel
#   failover_bfd_sessions PREFIX      BIRD's `show bfd sessions` of the router
#   failover_first_route_without PREFIX T_US DST ADDR
#                                     the t_us of the first route event after
#                                     T_US for DST whose next hops lack ADDR
#                                     (a route-add without it, or a route-del);
#                                     fails when there is none
#
# cluster_teardown stops everything started here too (every pid file of the
# state folder).
#
# Knobs: FAILOVER_INTERVAL_MS (lbhold's, default 100), FAILOVER_DEAD_AFTER_MS
# (lbhold's, default 5000: a connection unanswered that long is broken).
# Needs bird2 (bird, birdc) for the BGP helpers only.

_failover_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/e2e/cluster.sh
. "$_failover_here/cluster.sh"

: "${FAILOVER_INTERVAL_MS:=100}"
: "${FAILOVER_DEAD_AFTER_MS:=5000}"

FAILOVER_VIP6_NAME=web6
FAILOVER_VIP_ROUTE4=$TOPO_VIP4/32
FAILOVER_VIP_ROUTE6=$TOPO_VIP6/128

failover_now_us() { echo "${EPOCHREALTIME/./}"; }
failover_ms_since() { echo $((($2 - $1) / 1000)); }

# ------------------------------------------------------------------ routes

failover_ap_route() {
	local r=${1}r
	ip -n "$r" route del "$TOPO_VIP_PREFIX4" 2>/dev/null
	ip -n "$r" -6 route del "$TOPO_VIP_PREFIX6" 2>/dev/null
	ip -n "$r" route replace "$FAILOVER_VIP_ROUTE4" dev br0 &&
		ip -n "$r" -6 route replace "$FAILOVER_VIP_ROUTE6" dev br0
}

failover_router_hash() {
	_sysctl "${1}r" net.ipv4.fib_multipath_hash_policy=3 net.ipv4.fib_multipath_hash_fields=0x37 \
		net.ipv6.fib_multipath_hash_policy=3 net.ipv6.fib_multipath_hash_fields=0x37
}

failover_nexthop_of() {
	local vip=$TOPO_VIP4 client=$TOPO_CLIENT4 family=-4
	[ "${3:-4}" = 6 ] && vip=$TOPO_VIP6 client=$TOPO_CLIENT6 family=-6
	ip -n "${1}r" "$family" route get "$vip" from "$client" iif rc ipproto tcp sport "$2" \
		dport "$TOPO_PORT" | grep -o 'via [0-9a-f.:]*' | cut -d' ' -f2
}

failover_aa_route() {
	local p=$1 r=${1}r i hops4=() hops6=()
	shift
	failover_router_hash "$p"
	ip -n "$r" route del "$TOPO_VIP_PREFIX4" 2>/dev/null
	ip -n "$r" -6 route del "$TOPO_VIP_PREFIX6" 2>/dev/null
	if [ $# -eq 0 ]; then
		ip -n "$r" route del "$FAILOVER_VIP_ROUTE4" 2>/dev/null
		ip -n "$r" -6 route del "$FAILOVER_VIP_ROUTE6" 2>/dev/null
		return 0
	fi
	for i in "$@"; do
		hops4+=(nexthop via "$(cluster_node_addr4 "$i")" dev br0)
		hops6+=(nexthop via "$(cluster_node_addr6 "$i")" dev br0)
	done
	ip -n "$r" route replace "$FAILOVER_VIP_ROUTE4" "${hops4[@]}" &&
		ip -n "$r" -6 route replace "$FAILOVER_VIP_ROUTE6" "${hops6[@]}"
}

failover_nexthops() {
	local route=$FAILOVER_VIP_ROUTE4 family=-4
	[ "${2:-4}" = 6 ] && route=$FAILOVER_VIP_ROUTE6 family=-6
	ip -n "${1}r" "$family" route show "$route" | grep -o 'via [0-9a-f.:]*' | cut -d' ' -f2 |
		sort -u
}

# The nodes among the next hops (the last digit of 198.18.0.1I).
_failover_nexthop_nodes() { failover_nexthops "$1" | sed -n 's/^198\.18\.0\.1\([1-9]\)$/\1/p'; }

failover_aa_withdraw() {
	local nodes
	mapfile -t nodes < <(_failover_nexthop_nodes "$1" | grep -vx "$2")
	failover_aa_route "$1" "${nodes[@]}"
}

failover_aa_restore() {
	local nodes
	mapfile -t nodes < <({ _failover_nexthop_nodes "$1"; echo "$2"; } | sort -u)
	failover_aa_route "$1" "${nodes[@]}"
}

_failover_nexthops_are() { [ "$(failover_nexthops "$1" "$3" | grep -c .)" -eq "$2" ]; }

failover_await_nexthops() {
	await_cond "${3:-10}" _failover_nexthops_are "$1" "$2" "${4:-4}"
}

# ---------------------------------------------------------------- backends

failover_backend_add() {
	local p=$1 n=$2
	_ns_new "${p}b$n"
	_topo_backend "$p" l2 1500 "$n" || return 1
	await_cond 10 _link_ready "${p}r" "rb$n" && await_cond 10 _link_ready "${p}b$n" eth0 ||
		return 1
	start_tool "$p" "lbserver-b$n" "${p}b$n" "$LBTOOLS/lbserver" --name "b$n" \
		--tcp "$TOPO_PORT" --udp "$TOPO_PORT" || return 1
	TOPO_BACKENDS+=("b$n")
}

# ------------------------------------------------------------------- nodes

failover_config() {
	local p=$1 i=$2 out=$3 keys=$4 n web6
	shift 4
	[ $# -gt 0 ] || set -- 1 2 3
	cluster_config "$p" "$i" "$out" "$@" || return 1
	web6="{ name = \"$FAILOVER_VIP6_NAME\"; address = \"$TOPO_VIP6\"; port = $TOPO_PORT;"
	web6+=" protocol = \"tcp\"; encap = \"l2\"; backends = ( "
	for n in "$@"; do
		web6+="{ address = \"$(topo_backend_addr6 l2 "$n")\"; mac = \"$(topo_backend_mac l2 "$n")\"; },"
	done
	web6="${web6%,} ); }"
	sed -i -e "s|^\(cluster = { hash_seed = \"[0-9a-f]*\";\) };|\1 $keys };|" \
		-e "s|^node = { id = $i; |node = { id = $i; priority = $((250 - i)); |" \
		-e "/^vips = (\$/,/^);\$/ s|^);\$|  , $web6\n);|" "$out"
	if ! grep -qF "$keys };" "$out" || ! grep -q "priority = $((250 - i));" "$out" ||
		! grep -qF "$web6" "$out"; then
		log "failover_config: cannot rewrite $out (cluster_config changed?)"
		return 1
	fi
}

failover_node_start() {
	local p=$1 i=$2 conf=$3
	_cluster_pid "$p" "corosync-n$i" >/dev/null || cluster_corosync_start "$p" "$i" || return 1
	cluster_dataplane_start "$p" "$i" "$conf" && cluster_syncd_start "$p" "$i" "$conf"
}

failover_node_kill9() {
	local p=$1 i=$2 name pids=()
	for name in dataplane syncd corosync bird; do
		pids+=("$(_cluster_pid "$p" "$name-n$i")")
	done
	# One kill(1) for all: the node dies at once, not one daemon after another.
	# shellcheck disable=SC2046 # the pids of the running ones, split
	kill -KILL $(printf '%s ' "${pids[@]}") 2>/dev/null
	cluster_dataplane_kill9 "$p" "$i"
	cluster_syncd_kill9 "$p" "$i"
	cluster_corosync_kill9 "$p" "$i"
	_cluster_daemon_stop "$p" "bird-n$i" KILL
	rm -f "$(failover_bird_socket "$p" "$i")"
}

failover_reload() {
	cluster_ctl "$1" "$2" reload >/dev/null &&
		cluster_syncd_ctl "$1" "$2" reload >/dev/null
}

failover_cluster_json() {
	local out rc=0
	out=$(cluster_syncd_ctl "$1" "$2" --json cluster 2>&1) || rc=$?
	if [ "$rc" -eq 2 ] || { [ "$rc" -ne 0 ] && [[ $out == *nknown* ]]; }; then
		log "failover: 'maglbctl cluster' is not supported by this build ($MAGLB_BUILD):" \
			"maglb-syncd's membership (roles, VIP ownership) is not there yet: ${out%%$'\n'*}"
		return 2
	fi
	[ "$rc" -eq 0 ] || { log "failover: maglbctl cluster on node $2: exit $rc: $out"; return 1; }
	printf '%s\n' "$out"
}

failover_cluster_value() {
	local out
	out=$(failover_cluster_json "$1" "$2") || return 1
	jq -r "$3" <<<"$out"
}

_failover_cluster_holds() {
	local out
	out=$(failover_cluster_json "$1" "$2" 2>/dev/null) && jq -e "$3" <<<"$out" >/dev/null
}

failover_await_cluster() {
	await_cond "${4:-30}" _failover_cluster_holds "$1" "$2" "$3"
}

# ------------------------------------------------- what the router sees

failover_watch_start() {
	local p=$1 dir marker=198.19.255.254/32 tries=0
	dir=$(topo_dir "$p")
	start_tool "$p" l2watch "${p}r" "$LBTOOLS/l2watch" --iface br0 \
		--ip "$TOPO_VIP4" --ip "$TOPO_VIP6" || return 1
	ip netns exec "${p}r" ip -ts -o monitor route >"$dir/routemon.out" 2>"$dir/routemon.err" &
	echo $! >"$dir/routemon.pid"
	# ip monitor says nothing once it listens: a marker route added until it
	# reports one proves it does.
	until grep -q "${marker%/*}" "$dir/routemon.out"; do
		if ((tries++ == 20)) || _pid_gone "$(<"$dir/routemon.pid")"; then
			log "ip monitor route reports nothing: $(cat "$dir/routemon.err")"
			return 1
		fi
		ip -n "${p}r" route del "$marker" 2>/dev/null
		ip -n "${p}r" route add "$marker" dev br0
		await_cond 1 grep -q "${marker%/*}" "$dir/routemon.out" 2>/dev/null
	done
	ip -n "${p}r" route del "$marker"
}

# The route monitor's lines about the VIP routes, as events: its stamp
# "[YYYY-MM-DDTHH:MM:SS.UUUUUU]" is local wall-clock time, which date reads.
_failover_route_events() {
	local line stamp kind rest dst via
	while IFS= read -r line; do
		[[ $line =~ ^\[([0-9T:.-]+)\]\ (Deleted\ )?([0-9a-f.:/]+)\ (.*)$ ]] || continue
		stamp=${BASH_REMATCH[1]} kind=route-add rest=${BASH_REMATCH[4]}
		dst=${BASH_REMATCH[3]}
		[ -n "${BASH_REMATCH[2]}" ] && kind="route-del"
		[ "$dst" = "$TOPO_VIP4" ] || [ "$dst" = "$TOPO_VIP6" ] || continue
		via=$(grep -o 'via [0-9a-f.:]*' <<<"$rest" | cut -d' ' -f2 | sort -u | paste -sd,)
		printf 't_us=%s kind=%s dst=%s via=%s\n' "$(date -d "$stamp" +%s%6N)" "$kind" \
			"$dst" "${via:--}"
	done <"$(topo_dir "$1")/routemon.out"
}

failover_events() {
	{
		grep '^t_us=' "$(topo_dir "$1")/l2watch.out"
		_failover_route_events "$1"
	} | sort -t= -k2,2n
}

failover_first_event_after() {
	local p=$1 t=$2 kind=$3
	shift 3
	failover_events "$p" | awk -v t="$t" -v kind="kind=$kind" -v want="$*" '
		BEGIN { n = split(want, w, " ") }
		{
			split($1, s, "="); if (s[2] + 0 <= t + 0 || $2 != kind) next
			for (i = 1; i <= n; i++) { found = 0
				for (j = 3; j <= NF; j++) if ($j == w[i]) found = 1
				if (!found) next }
			print s[2]; ok = 1; exit
		}
		END { exit !ok }'
}

_failover_event_seen() { failover_first_event_after "$@" >/dev/null; }

failover_await_event() {
	await_cond 10 _failover_event_seen "$@" && failover_first_event_after "$@"
}

# ------------------------------------------------------------ connections

failover_hold_json() { printf '%s/%s.json' "$(topo_dir "$1")" "$2"; }

_failover_file_or_gone() { [ -e "$1" ] || _pid_gone "$2"; }

failover_hold_start() {
	local p=$1 name=$2 conns=$3 addr=${4:-$TOPO_VIP4} dir pid
	shift 3
	[ $# -gt 0 ] && shift
	dir=$(topo_dir "$p")
	rm -f "$dir/$name.ready" "$dir/$name.snap"
	ip netns exec "${p}c" "$LBTOOLS/lbhold" --connect "$addr" "$TOPO_PORT" --conns "$conns" \
		--interval-ms "$FAILOVER_INTERVAL_MS" --dead-after-ms "$FAILOVER_DEAD_AFTER_MS" \
		--ready-file "$dir/$name.ready" --snapshot-file "$dir/$name.snap" --json "$@" \
		>"$dir/$name.json" 2>"$dir/$name.err" &
	pid=$!
	echo "$pid" >"$dir/$name.pid"
	await_cond 60 _failover_file_or_gone "$dir/$name.ready" "$pid"
	[ -e "$dir/$name.ready" ] && return 0
	log "lbhold $name: not all $conns connections were answered:"
	cat "$dir/$name.json" "$dir/$name.err" >&2
	return 1
}

failover_hold_snapshot() {
	local dir pid
	dir=$(topo_dir "$1")
	pid=$(<"$dir/$2.pid") || return 1
	rm -f "$dir/$2.snap"
	kill -USR1 "$pid" && await_cond 5 _failover_file_or_gone "$dir/$2.snap" "$pid" &&
		cat "$dir/$2.snap"
}

_failover_answered_since() {
	local snap
	snap=$(failover_hold_snapshot "$1" "$2" 2>/dev/null) &&
		jq -e --argjson t "$3" '.alive == 0 or .oldest_reply_t_us > $t' <<<"$snap" >/dev/null
}

failover_hold_await_replies() {
	await_cond "${4:-30}" _failover_answered_since "$1" "$2" "$3"
}

failover_hold_stop() {
	local dir pid
	dir=$(topo_dir "$1")
	[ -e "$dir/$2.pid" ] || return 0
	pid=$(<"$dir/$2.pid")
	rm -f "$dir/$2.pid"
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ -s "$dir/$2.json" ] || { log "lbhold $2 printed no summary: $(cat "$dir/$2.err")"; return 1; }
}

# failover_hold_merge JSON...: one summary of several lbhold summaries
# (conns, alive, failed, errors and per_backend added up, gaps the longest).
failover_hold_merge() {
	jq -s '{conns: (map(.conns) | add), alive: (map(.alive) | add), failed: (map(.failed) | add),
		backend_changed: (map(.backend_changed) | add), max_gap_ms: (map(.max_gap_ms) | max),
		errors: (map(.errors | to_entries[]) | group_by(.key) |
			map({key: .[0].key, value: (map(.value) | add)}) | from_entries),
		per_backend: (map(.per_backend | to_entries[]) | group_by(.key) |
			map({key: .[0].key, value: {conns: (map(.value.conns) | add),
				alive: (map(.value.alive) | add),
				max_gap_ms: (map(.value.max_gap_ms) | max)}}) | from_entries)}' "$@"
}

failover_report() {
	local scenario=$1 json=$2 takeover=$3 conns alive gap
	conns=$(jq -r .conns "$json") alive=$(jq -r .alive "$json") gap=$(jq -r .max_gap_ms "$json")
	printf 'scenario=%s connections=%s survived=%s takeover_ms=%s max_gap_ms=%s\n' \
		"$scenario" "$conns" "$alive" "$takeover" "$gap"
	[ "$alive" = "$conns" ]
}

# ------------------------------------------------------------------- bird2

failover_bird_socket() { printf '%s/bird-n%s.ctl' "$(topo_dir "$1")" "$2"; }
failover_bird_routes_file() { printf '%s/bird-n%s-vips%s.conf' "$(topo_dir "$1")" "$2" "$3"; }
_failover_bird_router_socket() { printf '%s/bird-r.ctl' "$(topo_dir "$1")"; }

_failover_bird_timers() {
	# Seconds, not minutes: a dead peer's routes go within hold time, and a
	# restarted one is retried at once.
	printf '\thold time 3; keepalive time 1; connect retry time 1; error wait time 1, 2;\n'
}

_failover_bird_router_conf() {
	local p=$1 i n
	n=$(_cluster_size "$p")
	cat <<CONF
router id $TOPO_ROUTER_ADDR4;
log "$(topo_dir "$p")/bird-r.log" all;
protocol device { scan time 10; }
protocol kernel kernel4 { ipv4 { import none; export all; }; merge paths on; }
protocol kernel kernel6 { ipv6 { import none; export all; }; merge paths on; }
CONF
	for ((i = 1; i <= n; i++)); do
		cat <<CONF
protocol bgp n${i}v4 {
	local $TOPO_ROUTER_ADDR4 as 65000; neighbor $(cluster_node_addr4 "$i") as $((65000 + i));
$(_failover_bird_timers)
	ipv4 { import all; export none; };
}
protocol bgp n${i}v6 {
	local $TOPO_ROUTER_ADDR6 as 65000; neighbor $(cluster_node_addr6 "$i") as $((65000 + i));
$(_failover_bird_timers)
	ipv6 { import all; export none; };
}
CONF
	done
}

_failover_bird_node_conf() {
	local p=$1 i=$2
	cat <<CONF
router id $(cluster_node_addr4 "$i");
log "$(topo_dir "$p")/bird-n$i.log" all;
protocol device { scan time 10; }
protocol static vips4 {
	ipv4;
	include "$(failover_bird_routes_file "$p" "$i" 4)";
}
protocol static vips6 {
	ipv6;
	include "$(failover_bird_routes_file "$p" "$i" 6)";
}
protocol bgp r4 {
	local $(cluster_node_addr4 "$i") as $((65000 + i)); neighbor $TOPO_ROUTER_ADDR4 as 65000;
$(_failover_bird_timers)
	ipv4 { import none; export where proto = "vips4"; };
}
protocol bgp r6 {
	local $(cluster_node_addr6 "$i") as $((65000 + i)); neighbor $TOPO_ROUTER_ADDR6 as 65000;
$(_failover_bird_timers)
	ipv6 { import none; export where proto = "vips6"; };
}
CONF
}

_failover_bird_up() { birdc -s "$1" show status >/dev/null 2>&1; }

# _failover_bird_start PREFIX NS NAME CONF SOCKET: bird -f in NS, pid in
# NAME.pid of the state folder; returns once its control socket answers.
_failover_bird_start() {
	local p=$1 ns=$2 name=$3 conf=$4 sock=$5 dir pid
	command -v bird >/dev/null || { log "bird missing (apt-get install bird2)"; return 1; }
	dir=$(topo_dir "$p")
	ip netns exec "$ns" bird -f -c "$conf" -s "$sock" >"$dir/$name.out" 2>"$dir/$name.err" &
	pid=$!
	echo "$pid" >"$dir/$name.pid"
	await_cond 20 _failover_up_or_gone "$sock" "$pid"
	_failover_bird_up "$sock" && return 0
	log "$name did not come up: $(cat "$dir/$name.err")"
	return 1
}

_failover_up_or_gone() { _failover_bird_up "$1" || _pid_gone "$2"; }

# _failover_bird_router_run WRITER PREFIX ARGS...: the router's bird on the
# config WRITER PREFIX ARGS... prints, cluster.sh's VIP prefix routes gone,
# flows hashed by their headers.
_failover_bird_router_run() {
	local writer=$1 p=$2 conf
	shift
	conf="$(topo_dir "$p")/bird-r.conf"
	"$writer" "$@" >"$conf"
	failover_router_hash "$p"
	ip -n "${p}r" route del "$TOPO_VIP_PREFIX4" 2>/dev/null
	ip -n "${p}r" -6 route del "$TOPO_VIP_PREFIX6" 2>/dev/null
	_failover_bird_start "$p" "${p}r" bird-r "$conf" "$(_failover_bird_router_socket "$p")"
}

failover_bird_router_start() { _failover_bird_router_run _failover_bird_router_conf "$1"; }

failover_bird_node_start() {
	local p=$1 i=$2 conf f
	conf="$(topo_dir "$p")/bird-n$i.conf"
	for f in 4 6; do
		f=$(failover_bird_routes_file "$p" "$i" "$f")
		[ -e "$f" ] || : >"$f"
	done
	_failover_bird_node_conf "$p" "$i" >"$conf"
	_failover_bird_start "$p" "$(cluster_ns "$p" "$i")" "bird-n$i" "$conf" \
		"$(failover_bird_socket "$p" "$i")"
}

failover_bird_announce() {
	local p=$1 i=$2 v4="" v6=""
	if [ "$3" = on ]; then
		v4="route $FAILOVER_VIP_ROUTE4 blackhole;"
		v6="route $FAILOVER_VIP_ROUTE6 blackhole;"
	fi
	printf '%s\n' "$v4" >"$(failover_bird_routes_file "$p" "$i" 4)"
	printf '%s\n' "$v6" >"$(failover_bird_routes_file "$p" "$i" 6)"
	birdc -s "$(failover_bird_socket "$p" "$i")" configure >/dev/null
}

_failover_bird_sessions_are() {
	local out
	out=$(birdc -s "$(_failover_bird_router_socket "$1")" show protocols 2>/dev/null) || return 1
	[ "$(grep -c ' BGP .* Established' <<<"$out")" -eq "$2" ]
}

failover_bird_await_sessions() {
	await_cond "${3:-30}" _failover_bird_sessions_are "$1" "$2"
}

# ------------------------------------------------------ bird2 with BFD

failover_bfd_conf() {
	printf 'bfd = { peers = ( "%s", "%s" ); interval_ms = %s; multiplier = %s; };\n' \
		"$TOPO_ROUTER_ADDR4" "$TOPO_ROUTER_ADDR6" "$1" "$2"
}

# _failover_bfd_router_head PREFIX INTERVAL_MS MULT: the router's id, log,
# device and BFD protocols.
_failover_bfd_router_head() {
	cat <<CONF
router id $TOPO_ROUTER_ADDR4;
log "$(topo_dir "$1")/bird-r.log" all;
protocol device { scan time 10; }
protocol bfd maglb_bfd {
	interface "br0" { interval $2 ms; multiplier $3; };
}
CONF
}

# _failover_bfd_router_conf PREFIX INTERVAL_MS MULT I...: static ECMP routes
# to the VIPs via nodes I..., each next hop guarded by BFD
# (packaging/router/bird2-static-bfd.conf).
_failover_bfd_router_conf() {
	local p=$1 i vip
	_failover_bfd_router_head "$1" "$2" "$3"
	shift 3
	for vip in 4 6; do
		printf 'protocol static maglb_vips%s {\n\tipv%s;\n\troute %s\n' "$vip" "$vip" \
			"$([ "$vip" = 4 ] && echo "$FAILOVER_VIP_ROUTE4" || echo "$FAILOVER_VIP_ROUTE6")"
		for i in "$@"; do
			printf '\t\tvia %s bfd\n' "$(cluster_node_addr$vip "$i")"
		done
		printf '\t;\n}\n'
	done
	cat <<CONF
protocol kernel { ipv4 { import none; export all; }; }
protocol kernel { ipv6 { import none; export all; }; }
CONF
}

failover_bfd_router_start() { _failover_bird_router_run _failover_bfd_router_conf "$@"; }

# _failover_bfd_bgp_router_conf PREFIX INTERVAL_MS MULT I...: the VIP routes
# learnt by BGP from nodes I... (their bird, the shipped hook), each BGP next
# hop (the node's data address, where its dataplane answers BFD) resolved
# only through a host route guarded by BFD, as
# packaging/router/bird2-bgp-bfd.conf does: a dataplane's session Down makes
# the node's routes unreachable while its BGP session lasts.
_failover_bfd_bgp_router_conf() {
	local p=$1 i f
	_failover_bfd_router_head "$1" "$2" "$3"
	shift 3
	for f in 4 6; do
		printf 'ipv%s table maglb_nodes%s;
' "$f" "$f"
		printf 'protocol static maglb_node_routes%s {
	ipv%s { table maglb_nodes%s; };
' \
			"$f" "$f" "$f"
		for i in "$@"; do
			printf '	route %s/%s via %s bfd;
' "$(cluster_node_addr$f "$i")" \
				"$([ "$f" = 4 ] && echo 32 || echo 128)" "$(cluster_node_addr$f "$i")"
		done
		printf '}
'
		for i in "$@"; do
			cat <<CONF
protocol bgp n${i}v$f {
	local $([ "$f" = 4 ] && echo "$TOPO_ROUTER_ADDR4" || echo "$TOPO_ROUTER_ADDR6") as 65000;
	neighbor $(cluster_node_addr$f "$i") as $((65000 + i));
$(_failover_bird_timers)
	ipv$f { import all; export none; gateway recursive; igp table maglb_nodes$f; };
}
CONF
		done
		# an unreachable best route (every next hop down) stays out of
		# the kernel rather than answering with ICMP errors
		printf 'protocol kernel kernel%s {
	ipv%s { import none; export where dest != RTD_UNREACHABLE; };
	merge paths on;
}
' \
			"$f" "$f"
	done
}

failover_bfd_bgp_router_start() { _failover_bird_router_run _failover_bfd_bgp_router_conf "$@"; }

failover_bfd_sessions() { birdc -s "$(_failover_bird_router_socket "$1")" show bfd sessions; }

failover_first_route_without() {
	_failover_route_events "$1" | sort -t= -k2,2n | awk -v t="$2" -v dst="dst=$3" -v addr="$4" '
		{ split($1, s, "="); if (s[2] + 0 <= t + 0 || $3 != dst) next
		  split($4, v, "="); n = split(v[2], hops, ","); found = 0
		  for (i = 1; i <= n; i++) if (hops[i] == addr) found = 1
		  if ($2 == "kind=route-del" || !found) { print s[2]; ok = 1; exit } }
		END { exit !ok }'
}
