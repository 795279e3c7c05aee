# shellcheck shell=bash
# A maglb cluster in network namespaces, for the cluster tests (meson suite
# cluster) and tests/bench/sync-vs-cpg: N load-balancer nodes, each with its
# own corosync, maglb-dataplane and maglb-syncd, on the l2 topology of
# lib.sh. Sources lib.sh and dp.sh. As root:
#
#   . tests/e2e/cluster.sh
#   P=mytest-
#   trap 'cluster_teardown "$P"' EXIT
#   cluster_setup "$P" 3 && start_backends "$P"
#   for i in 1 2 3; do cluster_corosync_start "$P" "$i"; done
#   cluster_await_members "$P" 1 3
#   cluster_config "$P" 1 "$dir/n1.conf" && cluster_dataplane_start "$P" 1 "$dir/n1.conf"
#
# Functions (I: a node, 1..N):
#   cluster_setup PREFIX N            the topology below, N = 2 or 3 (removes
#                                     leftovers of PREFIX first); the VIP
#                                     routes go to node 1
#   cluster_teardown PREFIX           stop everything, delete the namespaces
#                                     (safe twice, and from an EXIT trap)
#   cluster_route_to PREFIX I         the router's VIP routes (v4, v6) to node I
#   cluster_corosync_start PREFIX I   corosync of node I (own corosync.conf,
#                                     private /run and /var/lib/corosync, log
#                                     in the state folder); returns once its
#                                     IPC answers
#   cluster_corosync_stop PREFIX I    SIGTERM, await its exit
#   cluster_corosync_kill9 PREFIX I   SIGKILL (a node's death), reap it
#   cluster_ring_link PREFIX I up|down
#                                     node I's port on the ring switch: down
#                                     cuts its corosync off from the others'
#                                     (a partition), up heals it
#   cluster_members PREFIX I          how many members node I's corosync sees
#   cluster_await_members PREFIX I N [TIMEOUT_S]
#                                     until node I sees exactly N (default 30 s)
#   cluster_config PREFIX I FILE [BACKEND...]
#                                     a maglb.conf for node I: dp.sh's
#                                     dp_l2_web_config (one l2 TCP VIP "web",
#                                     same hash seed, VIPs and backends on
#                                     every node; default backends 1 2 3),
#                                     node.id = I, the node's addresses
#   cluster_dataplane_start PREFIX I CONFIG
#                                     maglb-dataplane on net_af_packet (lb0) in
#                                     node I, --no-huge, adaptive polling,
#                                     EAL file prefix and IPC service of its
#                                     own; returns once its IPC answers
#   cluster_dataplane_stop PREFIX I   SIGTERM, await a clean exit (fails else)
#   cluster_dataplane_kill9 PREFIX I  SIGKILL, reap it, remove its EAL folders
#   cluster_syncd_start PREFIX I CONFIG
#                                     maglb-syncd -c CONFIG -f in node I, with
#                                     an IPC service of its own
#                                     (cluster_syncd_service) and the node's
#                                     dataplane's (--dataplane-service);
#                                     returns once it is in a CPG group of
#                                     node I's corosync; fails with a clear
#                                     message when the binary is not built
#   cluster_syncd_stop PREFIX I / cluster_syncd_kill9 PREFIX I
#   cluster_ctl PREFIX I ARGS...      maglbctl against node I's dataplane
#   cluster_counter PREFIX I SCOPE NAME
#                                     one counter of node I's dataplane
#   cluster_flows PREFIX I own|peer   node I's dataplane's entries, a line
#                                     each: "PROTO VIP PORT CLIENT CPORT
#                                     BACKEND"; own: its workers' live ones
#                                     (neither from-peer nor closing), peer:
#                                     the synced table's (from-peer)
#   cluster_syncd_ctl PREFIX I ARGS...
#                                     maglbctl against node I's syncd (as
#                                     --service and --sync-service): sync,
#                                     sync verify, counters, reload, status
#   cluster_syncd_counter PREFIX I SCOPE NAME
#                                     one counter of node I's syncd
#   cluster_sync_json PREFIX I        maglbctl --json sync of node I's syncd
#   cluster_sync_value PREFIX I NAME  one value of its "node" object (synced,
#                                     entries, dataplane_synced, ...); fails
#                                     when syncd does not answer
#   cluster_await_synced PREFIX I [TIMEOUT_S]
#                                     until node I's syncd says synced: every
#                                     group and its dataplane (default 30 s)
#   cluster_cpg_pids PREFIX I         the pids of node I in CPG groups
#   cluster_run PREFIX I CMD...       CMD in node I (its network namespace:
#                                     enough for CPG and the dataplane's IPC)
#   cluster_logs PREFIX               the tail of every node's logs, to stderr
#   cluster_on_exit PREFIX DIR [FN]   traps for a test: at its exit FN (its
#                                     own undoing, e.g. SIGCONT), the logs if
#                                     it failed, cluster_teardown, DIR removed;
#                                     the exit status kept; INT and TERM exit
#                                     130 and 143
#
# Topology: lib.sh's l2 topology (client ${P}c, router ${P}r, backends
# ${P}b1..b3 on the LB segment, DSR) with the one LB node ${P}lb replaced by
# nodes ${P}n1..${P}nN, plus a cluster ring network of its own:
#
#   ${P}r   br0 198.18.0.1/24 2001:db8::1/64        LB segment (bridge)
#            |-- rnI == lb0 in ${P}nI: 198.18.0.1I/24 2001:db8::1I/64
#            |                         02:00:00:00:00:1I (the dataplane's port)
#            |-- rb1..rb3 == eth0 in ${P}b1..b3 (as in lib.sh, l2 mode)
#   ${P}sw  ring (bridge, no address)                cluster ring
#            |-- kI == ring0 in ${P}nI: 198.18.30.1I/24, 02:00:00:00:30:1I
#
# corosync binds to ring0 only (knet, its nodelist holds the ring0
# addresses), so its traffic never crosses lb0, the dataplane's af_packet
# port. The router routes the VIP prefixes to one node (cluster_route_to).
# Every node interface has the offloads off, as lib.sh's.
#
# How a node's programs reach its services: corosync's IPC (CPG, cmap,
# quorum) and the dataplane's are libqb IPC, found through abstract Unix
# sockets, which belong to the network namespace; their shared-memory rings
# are files in /dev/shm, named by process id, so nodes cannot mix them up.
# `ip netns exec ${P}nI CMD` is all a client needs (corosync-cmapctl,
# corosync-cpgtool, maglb-syncd, cpgbench): no mount namespace. corosync
# itself runs in a mount namespace of its own (unshare -m) so that its pid
# file in /run and its ring id in /var/lib/corosync are per node, and so that
# its /etc/resolv.conf names only 127.0.0.1: corosync looks up the name of
# every local address at start and stop, which the machine's resolver, out
# of reach from a namespace, answers after 5 s each (and the queries would
# go out through the test router).
#
# Knobs: CLUSTER_TOKEN_MS (corosync's totem token, default 1000: a dead node
# leaves the membership after token + consensus = 2.2 s), DP_CORES (dp.sh's,
# the lcores of each dataplane, default "-l 0,1").

_cluster_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$_cluster_here/lib.sh"
# shellcheck source=tests/e2e/dp.sh
. "$_cluster_here/dp.sh"

: "${CLUSTER_TOKEN_MS:=1000}"

cluster_ns() { printf '%s' "${1}n$2"; }
cluster_node_addr4() { printf '198.18.0.1%s' "$1"; }
cluster_node_addr6() { printf '2001:db8::1%s' "$1"; }
cluster_node_mac() { printf '02:00:00:00:00:1%s' "$1"; }
cluster_ring_addr4() { printf '198.18.30.1%s' "$1"; }
# The IPC services of node I's dataplane and syncd, the dataplane's EAL
# file prefix.
cluster_service() { printf 'maglb-e2e-%s-n%s' "${1%-}" "$2"; }
cluster_syncd_service() { printf 'maglb-e2e-%s-n%s-syncd' "${1%-}" "$2"; }
cluster_eal_prefix() { printf '%sdp%s' "$1" "$2"; }

cluster_run() {
	local p=$1 i=$2
	shift 2
	ip netns exec "$(cluster_ns "$p" "$i")" "$@"
}

# The number of nodes of the cluster PREFIX (0 when there is none).
_cluster_size() { cat "$(topo_dir "$1")/nodes" 2>/dev/null || echo 0; }

_cluster_node() {
	local p=$1 i=$2 ns
	ns=$(cluster_ns "$p" "$i")
	_sysctl "$ns" net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0
	_veth "${p}r" "rn$i" "$ns" "$TOPO_LB_IF"
	_link_up "${p}r" "rn$i" "02:00:00:00:01:1$i" 1500 "" ""
	ip -n "${p}r" link set dev "rn$i" master br0
	_link_up "$ns" "$TOPO_LB_IF" "$(cluster_node_mac "$i")" 1500 \
		"$(cluster_node_addr4 "$i")/24" "$(cluster_node_addr6 "$i")/64"
	ip -n "$ns" route add default via "$TOPO_ROUTER_ADDR4"
	ip -n "$ns" -6 route add default via "$TOPO_ROUTER_ADDR6"
	_veth "${p}sw" "k$i" "$ns" ring0
	_link_up "${p}sw" "k$i" "02:00:00:00:31:1$i" 1500 "" ""
	ip -n "${p}sw" link set dev "k$i" master ring
	_link_up "$ns" ring0 "02:00:00:00:30:1$i" 1500 "$(cluster_ring_addr4 "$i")/24" ""
}

cluster_setup() {
	local p=$1 n=$2 dir ns i links=() link
	case $n in
	2 | 3) ;;
	*) log "cluster_setup: N must be 2 or 3, not '$n'"; return 2 ;;
	esac
	command -v ethtool >/dev/null || { log "cluster_setup: ethtool missing (apt-get install ethtool)"; return 1; }
	command -v corosync >/dev/null || { log "cluster_setup: corosync missing (apt-get install corosync)"; return 1; }
	_cluster_cleanup_stale "$p"
	dir=$(topo_dir "$p")
	mkdir -p "$dir"
	echo cluster >"$dir/mode"
	echo "$n" >"$dir/nodes"
	for ns in c r sw b1 b2 b3; do
		_ns_new "${p}$ns"
	done
	for ((i = 1; i <= n; i++)); do
		_ns_new "$(cluster_ns "$p" "$i")"
	done
	_topo_router "$p" l2 1500
	ip -n "${p}sw" link add name ring type bridge stp_state 0 mcast_snooping 0
	_link_up "${p}sw" ring 02:00:00:00:30:01 1500 "" ""
	for ((i = 1; i <= n; i++)); do
		_cluster_node "$p" "$i"
		links+=("${p}r rn$i" "$(cluster_ns "$p" "$i") $TOPO_LB_IF" "${p}sw k$i"
			"$(cluster_ns "$p" "$i") ring0")
	done
	for i in 1 2 3; do
		_topo_backend "$p" l2 1500 "$i"
		links+=("${p}r rb$i" "${p}b$i eth0")
	done
	links+=("${p}c c0" "${p}r rc" "${p}r br0" "${p}sw ring")
	for link in "${links[@]}"; do
		# shellcheck disable=SC2086 # "NS IF" splits on purpose
		await_cond 10 _link_ready $link || return 1
	done
	cluster_route_to "$p" 1
}

cluster_route_to() {
	local p=$1 i=$2
	ip -n "${p}r" route replace "$TOPO_VIP_PREFIX4" via "$(cluster_node_addr4 "$i")"
	ip -n "${p}r" -6 route replace "$TOPO_VIP_PREFIX6" via "$(cluster_node_addr6 "$i")"
}

# _cluster_forget_shm PID...: the files corosync processes PID... (gone by
# now) left in /dev/shm: its blackbox and its IPC rings, and the folder of
# each client connection (qb-PID-CLIENT-...). A clean exit removes them;
# SIGKILL does not.
_cluster_forget_shm() {
	local pid
	for pid in "$@"; do
		rm -rf /dev/shm/qb-corosync-"$pid"-* /dev/shm/qb-"$pid"-*
	done
}

_cluster_corosync_pids() {
	local f
	for f in "$(topo_dir "$1")"/corosync-n*.pid; do
		[ -e "$f" ] && cat "$f"
	done
}

# Leftovers of an earlier run of PREFIX: namespaces, processes, EAL and
# corosync files.
_cluster_cleanup_stale() {
	local p=$1 pids i
	mapfile -t pids < <(_cluster_corosync_pids "$p")
	topo_cleanup_stale "$p"
	_cluster_forget_shm "${pids[@]}"
	for i in 1 2 3; do
		eal_dirs "$(cluster_eal_prefix "$p" "$i")" | xargs rm -rf
	done
}

cluster_teardown() {
	local p=$1 i n pids
	n=$(_cluster_size "$p")
	for ((i = 1; i <= n; i++)); do
		cluster_syncd_stop "$p" "$i" 2>/dev/null
		cluster_dataplane_stop "$p" "$i" 2>/dev/null
	done
	mapfile -t pids < <(_cluster_corosync_pids "$p")
	topo_teardown "$p"
	_cluster_forget_shm "${pids[@]}"
	for ((i = 1; i <= n; i++)); do
		eal_dirs "$(cluster_eal_prefix "$p" "$i")" | xargs rm -rf
	done
	return 0
}

# ------------------------------------------------------------ daemons of a node

# _cluster_daemon_start PREFIX I NAME UP_FN CMD...: start CMD in node I in the
# background (stdout/stderr in NAME-nI.out/.err of the state folder, its pid
# in NAME-nI.pid), then wait (20 s at most) until UP_FN PREFIX I PID holds.
# Fails, showing its stderr, if it exits or does not come up.
_cluster_daemon_start() {
	local p=$1 i=$2 name=$3-n$2 up=$4 dir pid status=running
	shift 4
	dir=$(topo_dir "$p")
	[ -d "$dir" ] || { log "$name: no cluster $p (cluster_setup first)"; return 1; }
	# Not through cluster_run: $! must be the daemon itself (ip netns exec
	# and unshare exec it), not a subshell.
	ip netns exec "$(cluster_ns "$p" "$i")" "$@" >"$dir/$name.out" 2>"$dir/$name.err" &
	pid=$!
	echo "$pid" >"$dir/$name.pid"
	await_cond 20 _cluster_up_or_gone "$up" "$p" "$i" "$pid" 2>/dev/null
	"$up" "$p" "$i" "$pid" && return 0
	if _pid_gone "$pid"; then
		wait "$pid" && status="exit 0" || status="exit $?"
		rm -f "$dir/$name.pid"
	fi
	log "$name did not come up ($status): $*"
	log "$name stderr (last lines):"
	tail -n 30 "$dir/$name.err" >&2
	return 1
}

_cluster_up_or_gone() {
	"$1" "$2" "$3" "$4" || _pid_gone "$4"
}

_cluster_pid() {
	local f
	f="$(topo_dir "$1")/$2.pid"
	[ -e "$f" ] && cat "$f"
}

# _cluster_daemon_stop PREFIX NAME SIGNAL: send SIGNAL, await the exit (10 s,
# then SIGKILL), reap it. Returns its exit status (0 when it was not running).
_cluster_daemon_stop() {
	local p=$1 name=$2 sig=$3 pid rc=0
	pid=$(_cluster_pid "$p" "$name") || return 0
	rm -f "$(topo_dir "$p")/$name.pid"
	kill "-$sig" "$pid" 2>/dev/null || return 0
	if ! await_cond 10 _pid_gone "$pid" 2>/dev/null; then
		log "$name did not exit on SIG$sig within 10 s: SIGKILL"
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null || rc=$?
	[ "$sig" = KILL ] && return 0
	[ "$rc" -eq 0 ] || log "$name exited with status $rc"
	return "$rc"
}

# ---------------------------------------------------------------- corosync

# The corosync.conf of node I: every node of the cluster in the nodelist, on
# its ring0 address; knet without crypto (the ring is a private bridge);
# votequorum (two_node in a pair).
_cluster_corosync_conf() {
	local p=$1 i=$2 n j two_node=""
	n=$(_cluster_size "$p")
	[ "$n" -eq 2 ] && two_node=$'\ttwo_node: 1'
	cat <<CONF
totem {
	version: 2
	cluster_name: maglb-e2e-${p%-}
	transport: knet
	crypto_cipher: none
	crypto_hash: none
	token: $CLUSTER_TOKEN_MS
	token_coefficient: 0
	join: 50
}

nodelist {
$(for ((j = 1; j <= n; j++)); do
		printf '\tnode {\n\t\tname: n%s\n\t\tnodeid: %s\n\t\tring0_addr: %s\n\t}\n' \
			"$j" "$j" "$(cluster_ring_addr4 "$j")"
	done)
}

quorum {
	provider: corosync_votequorum
$two_node
}

logging {
	to_syslog: no
	to_stderr: no
	to_logfile: yes
	logfile: $(topo_dir "$p")/corosync-n$i.log
	timestamp: on
}
CONF
}

_cluster_corosync_up() { cluster_run "$1" "$2" corosync-cmapctl -g totem.token >/dev/null 2>&1; }

cluster_corosync_start() {
	local p=$1 i=$2 dir node
	dir=$(topo_dir "$p")
	node="$dir/corosync-n$i"
	mkdir -p "$node.run" "$node.lib"
	_cluster_corosync_conf "$p" "$i" >"$node.conf" || return 1
	printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$node.resolv.conf"
	# shellcheck disable=SC2016 # expanded by the inner sh
	_cluster_daemon_start "$p" "$i" corosync _cluster_corosync_up \
		unshare -m sh -c 'mount --bind "$1" /etc/resolv.conf && mount --bind "$2" /run &&
			mount --bind "$3" /var/lib/corosync && exec corosync -f -c "$4"' \
		corosync "$node.resolv.conf" "$node.run" "$node.lib" "$node.conf"
}

cluster_corosync_stop() { _cluster_daemon_stop "$1" "corosync-n$2" TERM; }

cluster_corosync_kill9() {
	local pid
	pid=$(_cluster_pid "$1" "corosync-n$2") || return 0
	_cluster_daemon_stop "$1" "corosync-n$2" KILL
	_cluster_forget_shm "$pid"
}

cluster_ring_link() { ip -n "${1}sw" link set dev "k$2" "$3"; }

# cluster_members PREFIX I: the members node I's corosync has joined (cmap's
# runtime.members.*.status); fails when it does not answer.
cluster_members() {
	local out
	out=$(cluster_run "$1" "$2" corosync-cmapctl -b runtime.members 2>/dev/null) || return 1
	grep -c '\.status (str) = joined$' <<<"$out"
}

_cluster_members_are() { [ "$(cluster_members "$1" "$2")" = "$3" ]; }

cluster_await_members() {
	await_cond "${4:-30}" _cluster_members_are "$1" "$2" "$3"
}

cluster_cpg_pids() {
	# Lines "GROUP PID NODEID" after a header, for every node: keep node I's.
	cluster_run "$1" "$2" corosync-cpgtool -d ' ' 2>/dev/null |
		awk -v node="$2" 'NR > 1 && $NF == node { print $(NF - 1) }'
}

# ---------------------------------------------------------------- maglb

cluster_config() {
	local p=$1 i=$2 out=$3
	shift 3
	[ $# -gt 0 ] || set -- 1 2 3
	TOPO_LB_ADDR4=$(cluster_node_addr4 "$i") dp_l2_web_config "$out" "$@" || return 1
	sed -i "s|^node = { id = 1; \(address = \"[^\"]*\";\)|node = { id = $i; \1 address6 = \"$(cluster_node_addr6 "$i")\";|" "$out"
	grep -q "^node = { id = $i; " "$out" ||
		{ log "cluster_config: no node line to rewrite in $out (dp_l2_web_config changed?)"; return 1; }
}

cluster_ctl() {
	local p=$1 i=$2
	shift 2
	cluster_run "$p" "$i" "$MAGLB_BUILD/ctl/maglbctl" --service "$(cluster_service "$p" "$i")" "$@"
}

cluster_counter() {
	cluster_ctl "$1" "$2" --json counters "$3" |
		jq -r --arg s "$3" --arg n "$4" \
			'[.counters[] | select(.scope == $s and .name == $n) | .value] | add // 0'
}

cluster_flows() {
	cluster_ctl "$1" "$2" --json flows | jq -r --arg which "$3" '.flows[] |
		select(if $which == "peer" then (.flags | index("from-peer")) != null
		       else (.flags | index("from-peer") == null and index("closing") == null) end) |
		"\(.protocol) \(.vip) \(.vip_port) \(.client) \(.client_port) \(.backend)"'
}

_cluster_dp_up() { cluster_ctl "$1" "$2" status >/dev/null 2>&1; }

cluster_dataplane_start() {
	local p=$1 i=$2 conf=$3 cores
	read -ra cores <<<"${DP_CORES:--l 0,1}"
	_cluster_daemon_start "$p" "$i" dataplane _cluster_dp_up \
		"$MAGLB_BUILD/dataplane/maglb-dataplane" --no-huge --no-shconf -m 512 --no-pci \
		"${cores[@]}" --file-prefix "$(cluster_eal_prefix "$p" "$i")" \
		--log-level=lib.eal:warning -- \
		-c "$conf" -f --poll adaptive --service "$(cluster_service "$p" "$i")"
}

cluster_dataplane_stop() {
	local rc=0
	_cluster_daemon_stop "$1" "dataplane-n$2" TERM || rc=$?
	eal_dirs "$(cluster_eal_prefix "$1" "$2")" | xargs rm -rf
	return "$rc"
}

cluster_dataplane_kill9() {
	_cluster_daemon_stop "$1" "dataplane-n$2" KILL
	eal_dirs "$(cluster_eal_prefix "$1" "$2")" | xargs rm -rf
}

# syncd is up once it has joined a CPG group of its node's corosync.
_cluster_syncd_up() { cluster_cpg_pids "$1" "$2" | grep -qx "$3"; }

cluster_syncd_start() {
	local p=$1 i=$2 conf=$3 bin=$MAGLB_BUILD/syncd/maglb-syncd
	if [ ! -x "$bin" ]; then
		log "cluster_syncd_start: $bin is missing: maglb-syncd is not built in $MAGLB_BUILD"
		return 1
	fi
	_cluster_daemon_start "$p" "$i" syncd _cluster_syncd_up \
		"$bin" -c "$conf" -f --service "$(cluster_syncd_service "$p" "$i")" \
		--dataplane-service "$(cluster_service "$p" "$i")"
}

cluster_syncd_stop() { _cluster_daemon_stop "$1" "syncd-n$2" TERM; }
cluster_syncd_kill9() { _cluster_daemon_stop "$1" "syncd-n$2" KILL; }

cluster_syncd_ctl() {
	local p=$1 i=$2 service
	shift 2
	service=$(cluster_syncd_service "$p" "$i")
	cluster_run "$p" "$i" "$MAGLB_BUILD/ctl/maglbctl" --service "$service" \
		--sync-service "$service" "$@"
}

cluster_syncd_counter() {
	cluster_syncd_ctl "$1" "$2" --json counters "$3" |
		jq -r --arg s "$3" --arg n "$4" \
			'[.counters[] | select(.scope == $s and .name == $n) | .value] | add // 0'
}

cluster_sync_json() { cluster_syncd_ctl "$1" "$2" --json sync; }

cluster_sync_value() {
	local out
	out=$(cluster_sync_json "$1" "$2" 2>/dev/null) || return 1
	jq -er --arg n "$3" '.node[$n]' <<<"$out"
}

_cluster_synced() { [ "$(cluster_sync_value "$1" "$2" synced)" = 1 ]; }

cluster_await_synced() {
	await_cond "${3:-30}" _cluster_synced "$1" "$2"
}

cluster_logs() {
	local dir f
	dir=$(topo_dir "$1")
	for f in "$dir"/corosync-n*.log "$dir"/*-n*.err; do
		[ -s "$f" ] || continue
		log "==> $f (last 20 lines)"
		tail -n 20 "$f" >&2
	done
}

cluster_on_exit() {
	_cluster_exit_args=("$@")
	trap _cluster_on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

_cluster_on_exit() {
	local rc=$? p=${_cluster_exit_args[0]} dir=${_cluster_exit_args[1]}
	local fn=${_cluster_exit_args[2]:-}
	[ -z "$fn" ] || "$fn"
	[ "$rc" -eq 0 ] || cluster_logs "$p"
	cluster_teardown "$p"
	rm -rf "$dir"
	exit "$rc"
}
