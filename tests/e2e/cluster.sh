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
#                                     node.id = I, the node's addresses;
#                                     dp_l2_web_config's knobs (VIP_EXTRA,
#                                     VIPS_EXTRA, CONF_EXTRA, ...) set for
#                                     one call give that node a config of
#                                     its own (check_cluster_shards)
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
#   cluster_qnetd_setup PREFIX        a tie-breaker for a pair (before
#                                     corosync starts): namespace ${P}q on the
#                                     router's br0, the NSS dbs of qnetd (a copy
#                                     of the corosync-qnetd package's) and of
#                                     each node, the cluster's certificate made
#                                     and signed with corosync-qdevice-net-
#                                     certutil and corosync-qnetd-certutil
#                                     (below); from then on the nodes'
#                                     corosync.conf has a quorum.device
#                                     section (model net, ffsplit, TLS
#                                     required) instead of two_node
#   cluster_qnetd_start PREFIX        corosync-qnetd -f in ${P}q (TLS and client
#                                     certificates required); returns once it
#                                     answers corosync-qnetd-tool
#   cluster_qdevice_start PREFIX I    corosync-qdevice -f in node I, in a mount
#                                     namespace with the node's /run (as its
#                                     corosync: lock and socket files per
#                                     node); returns once it answers
#                                     corosync-qdevice-tool
#   cluster_qdevice_stop PREFIX I     SIGTERM, await its exit
#   cluster_qdevice_tool PREFIX I ARGS...
#                                     corosync-qdevice-tool of node I
#   cluster_qnetd_tool PREFIX ARGS... corosync-qnetd-tool of ${P}q
#   cluster_qdevice_voting PREFIX I   true while node I's votequorum counts
#                                     the qdevice's vote (corosync-quorumtool:
#                                     its flags A,V)
#   cluster_pause PID, cluster_resume PID
#                                     SIGSTOP, SIGCONT; still paused at exit:
#                                     resumed by cluster_on_exit's trap
#   cluster_on_exit PREFIX DIR [FN]   traps for a test: at its exit FN (its
#                                     own undoing), the logs if
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
# The tie-breaker (cluster_qnetd_setup): corosync-qnetd in ${P}q, whose q0
# (198.18.0.5/24, 02:00:00:00:00:05; no other host of the l2 topology has
# that address) is the router's port rq on br0, the LB segment: the nodes'
# kernels reach it over lb0 (their own addresses there; the dataplane on
# that port answers for the VIPs only), while corosync stays on the ring. So
# a cut ring leaves both nodes connected to qnetd, which gives its one vote
# to one side (ffsplit: equal halves, the lowest node id). corosync-qdevice
# reads its configuration from its node's corosync (cmap); its TLS
# certificates are in the state folder (tls/), made as corosync-qdevice(8)
# says with the packages' scripts, which know only /etc/corosync: each
# script runs in a mount namespace of its own with a folder of the state
# folder bound over /etc/corosync, so the machine's /etc is never written.
#
# Knobs: CLUSTER_TOKEN_MS (corosync's totem token, default 1000: a dead node
# leaves the membership after token + consensus = 2.2 s), DP_CORES (dp.sh's,
# the lcores of each dataplane, default "-l 0,1"), CLUSTER_QDEVICE_TIMEOUT_MS
# (quorum.device.timeout and sync_timeout, default 500; see
# _cluster_qdevice_conf).

_cluster_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$_cluster_here/lib.sh"
# shellcheck source=tests/e2e/dp.sh
. "$_cluster_here/dp.sh"

: "${CLUSTER_TOKEN_MS:=1000}"
: "${CLUSTER_QDEVICE_TIMEOUT_MS:=500}"
CLUSTER_QNETD_ADDR4=198.18.0.5
CLUSTER_QNETD_PORT=5403

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
# corosync files. A qnetd or qdevice left running is in a namespace of
# PREFIX (ended with it), unless that namespace was deleted under it: its
# pid file ends it then (when the pid is still one of those programs).
# Their lock, socket and NSS files are in the state folder, removed with it.
_cluster_cleanup_stale() {
	local p=$1 pids i f pid
	mapfile -t pids < <(_cluster_corosync_pids "$p")
	for f in "$(topo_dir "$p")"/qnetd.pid "$(topo_dir "$p")"/qdevice-n*.pid; do
		[ -e "$f" ] || continue
		pid=$(<"$f")
		case $(cat "/proc/$pid/comm" 2>/dev/null) in
		corosync-qnetd | corosync-qdevi*) _kill_pids "$pid" ;;
		esac
	done
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

# cluster_pair_start PREFIX DIR: the topology with two nodes and the
# backends, each node's corosync, dataplane and syncd running on a config
# of cluster_config written to DIR/nI.conf; fails (logged) when one does
# not come up.
cluster_pair_start() {
	local p=$1 dir=$2 i
	cluster_setup "$p" 2 && start_backends "$p" || return 1
	for i in 1 2; do
		cluster_corosync_start "$p" "$i" || return 1
	done
	cluster_await_members "$p" 1 2 || return 1
	for i in 1 2; do
		cluster_config "$p" "$i" "$dir/n$i.conf" &&
			cluster_dataplane_start "$p" "$i" "$dir/n$i.conf" &&
			cluster_syncd_start "$p" "$i" "$dir/n$i.conf" || return 1
	done
}

# ---------------------------------------------------------------- corosync

# The corosync.conf of node I: every node of the cluster in the nodelist, on
# its ring0 address; knet without crypto (the ring is a private bridge);
# votequorum (two_node in a pair, or a quorum device after
# cluster_qnetd_setup).
_cluster_corosync_conf() {
	local p=$1 i=$2 n j two_node=""
	n=$(_cluster_size "$p")
	[ "$n" -eq 2 ] && two_node=$'\ttwo_node: 1'
	[ -e "$(topo_dir "$p")/qnetd" ] && two_node=$(_cluster_qdevice_conf)
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

# -------------------------------------------------- quorum device (qnetd)

# quorum.device of corosync.conf (votequorum and corosync-qdevice read it).
# two_node goes: votequorum refuses it beside a device ("two_node and
# qdevice are not compatible"); expected votes are then 2 + 1, quorum 2.
# votes 1 and ffsplit: qnetd gives its vote to one half of a split pair.
#
# The timeouts, as small as the programs accept, and what bounds them:
# votequorum takes any quorum.device.timeout (no range) and counts the
# device's vote while the device polls it within that time; corosync-qdevice
# polls every timeout / 2 and sends qnetd a heartbeat every 0.8 x timeout
# (0.8 x sync_timeout during a membership change), which it clamps to its
# net_heartbeat_interval_min (-S, default 1000 ms: a timeout of 1250 ms at
# least) and qnetd refuses below its heartbeat_interval_min (-S, default
# 1000 ms); qnetd drops a client silent for 1.5 heartbeats (dead peer
# detection). Both minimums go down to the heartbeat here (-S), so the
# bound left is the machine: a poll late by timeout / 2 (a loaded core, a
# stopped process) loses the vote, and the half that keeps the vote in a
# split has no other; sync_timeout bounds how long votequorum waits, after
# a membership change, for the device's poll with the new ring (qnetd's
# answer: NACK to one half, then ACK to the other), which takes a few ms
# here, and then counts the device dead: both halves' changes must reach
# qnetd within it. CLUSTER_QDEVICE_TIMEOUT_MS sets both: 500 by default, a
# poll every 250 ms, a heartbeat every 400 ms (qnetd's dead peer detection
# after 600 ms); 300 passed here too, but this 2-core machine runs two
# dataplanes and others' tests beside it, and a late poll in a split takes
# the last vote of the side that must keep the VIPs.
_cluster_qdevice_conf() {
	cat <<CONF
	device {
		model: net
		votes: 1
		timeout: $CLUSTER_QDEVICE_TIMEOUT_MS
		sync_timeout: $CLUSTER_QDEVICE_TIMEOUT_MS
		net {
			host: $CLUSTER_QNETD_ADDR4
			port: $CLUSTER_QNETD_PORT
			algorithm: ffsplit
			tie_breaker: lowest
			tls: required
			force_ip_version: 4
		}
	}
CONF
}

# The heartbeat corosync-qdevice asks for: 0.8 x the device's timeout.
_cluster_qdevice_heartbeat_ms() { echo $((CLUSTER_QDEVICE_TIMEOUT_MS * 8 / 10)); }

# _cluster_etc_run ETC CMD...: CMD with folder ETC bound over /etc/corosync
# (a mount namespace of its own): the certutil scripts' fixed paths.
_cluster_etc_run() {
	local etc=$1
	shift
	# shellcheck disable=SC2016 # expanded by the inner sh
	unshare -m sh -c 'mount --bind "$1" /etc/corosync && shift && exec "$@"' sh "$etc" "$@"
}

# _cluster_tls PREFIX: the NSS dbs of the state folder's tls/, as
# corosync-qdevice(8) says (MODEL NET TLS CONFIGURATION): qnetd's (a copy
# of the one the corosync-qnetd package made: its CA and server
# certificate), node 1's (the CA imported, a certificate request for the
# cluster's name signed by qnetd's CA, exported with its key as PKCS#12),
# node 2's (the CA, that PKCS#12). Output in tls/certutil.log.
_cluster_tls() {
	local p=$1 tls i name ca crq crt p12
	tls="$(topo_dir "$p")/tls"
	name=$(_cluster_name "$p")
	mkdir -p "$tls/qnetd" || return 1
	if [ ! -r /etc/corosync/qnetd/nssdb/qnetd-cacert.crt ]; then
		log "cluster_qnetd_setup: no /etc/corosync/qnetd/nssdb (apt-get install corosync-qnetd)"
		return 1
	fi
	cp -a /etc/corosync/qnetd/nssdb "$tls/qnetd/" || return 1
	ca=$tls/qnetd/nssdb/qnetd-cacert.crt
	crq=$tls/n1/qdevice/net/nssdb/qdevice-net-node.crq
	crt=$tls/qnetd/nssdb/cluster-$name.crt
	p12=$tls/n1/qdevice/net/nssdb/qdevice-net-node.p12
	for i in 1 2; do
		mkdir -p "$tls/n$i" || return 1
	done
	{
		_cluster_etc_run "$tls/n1" corosync-qdevice-net-certutil -i -c "$ca" &&
			_cluster_etc_run "$tls/n1" corosync-qdevice-net-certutil -r -n "$name" &&
			_cluster_etc_run "$tls" corosync-qnetd-certutil -s -c "$crq" -n "$name" &&
			_cluster_etc_run "$tls/n1" corosync-qdevice-net-certutil -M -c "$crt" &&
			_cluster_etc_run "$tls/n2" corosync-qdevice-net-certutil -i -c "$ca" &&
			_cluster_etc_run "$tls/n2" corosync-qdevice-net-certutil -m -c "$p12"
	} >"$tls/certutil.log" 2>&1 && return 0
	log "cluster_qnetd_setup: certificates not made:"
	tail -n 20 "$tls/certutil.log" >&2
	return 1
}

_cluster_name() { printf 'maglb-e2e-%s' "${1%-}"; }
_cluster_qnetd_nssdb() { printf '%s/tls/qnetd/nssdb' "$(topo_dir "$1")"; }
_cluster_qdevice_nssdb() { printf '%s/tls/n%s/qdevice/net/nssdb' "$(topo_dir "$1")" "$2"; }

cluster_qnetd_setup() {
	local p=$1 q=${1}q dir
	dir=$(topo_dir "$p")
	[ "$(_cluster_size "$p")" = 2 ] || { log "cluster_qnetd_setup: a pair only"; return 2; }
	if ! command -v corosync-qnetd >/dev/null || ! command -v corosync-qdevice >/dev/null; then
		log "cluster_qnetd_setup: apt-get install corosync-qnetd corosync-qdevice"
		return 1
	fi
	_cluster_tls "$p" || return 1
	_ns_new "$q"
	_veth "${p}r" rq "$q" q0
	_link_up "${p}r" rq 02:00:00:00:01:05 1500 "" ""
	ip -n "${p}r" link set dev rq master br0
	_link_up "$q" q0 02:00:00:00:00:05 1500 "$CLUSTER_QNETD_ADDR4/24" ""
	ip -n "$q" route add default via "$TOPO_ROUTER_ADDR4"
	await_cond 10 _link_ready "${p}r" rq && await_cond 10 _link_ready "$q" q0 || return 1
	echo "$CLUSTER_QNETD_ADDR4" >"$dir/qnetd"
}

cluster_qnetd_tool() {
	local p=$1
	shift
	ip netns exec "${p}q" corosync-qnetd-tool -p "$(topo_dir "$p")/qnetd.sock" "$@"
}

_cluster_qnetd_up() { cluster_qnetd_tool "$1" -s >/dev/null 2>&1; }

cluster_qnetd_start() {
	local p=$1 dir pid hb
	dir=$(topo_dir "$p")
	hb=$(_cluster_qdevice_heartbeat_ms)
	[ -e "$dir/qnetd" ] || { log "cluster_qnetd_start: cluster_qnetd_setup first"; return 1; }
	# Not under _cluster_daemon_start: qnetd is no node. -d: its decisions
	# (ffsplit's partitions and votes) in the log. -s req, not "required"
	# as corosync-qnetd(8) says: 3.0.3 takes on, off or req.
	ip netns exec "${p}q" corosync-qnetd -f -d -4 -l "$CLUSTER_QNETD_ADDR4" \
		-p "$CLUSTER_QNETD_PORT" -s req -c on \
		-S "nss_db_dir=$(_cluster_qnetd_nssdb "$p"),lock_file=$dir/qnetd.lock,local_socket_file=$dir/qnetd.sock,heartbeat_interval_min=$hb" \
		>"$dir/qnetd.out" 2>"$dir/qnetd.err" &
	pid=$!
	echo "$pid" >"$dir/qnetd.pid"
	await_cond 20 _cluster_up_or_gone _cluster_qnetd_up "$p" q "$pid" 2>/dev/null
	_cluster_qnetd_up "$p" && return 0
	log "corosync-qnetd did not come up; stderr (last lines):"
	tail -n 30 "$dir/qnetd.err" >&2
	return 1
}

cluster_qdevice_tool() {
	local p=$1 i=$2
	shift 2
	# shellcheck disable=SC2016 # expanded by the inner sh
	cluster_run "$p" "$i" unshare -m sh -c 'mount --bind "$1" /run && shift && exec "$@"' sh \
		"$(topo_dir "$p")/corosync-n$i.run" corosync-qdevice-tool "$@"
}

_cluster_qdevice_up() { cluster_qdevice_tool "$1" "$2" -s >/dev/null 2>&1; }

cluster_qdevice_start() {
	local p=$1 i=$2 run hb
	run="$(topo_dir "$p")/corosync-n$i.run"
	hb=$(_cluster_qdevice_heartbeat_ms)
	# Its lock and socket in /run/corosync-qdevice, the node's /run (the
	# folder its corosync has as /run); its NSS db in the state folder.
	mkdir -p "$run/corosync-qdevice" || return 1
	# shellcheck disable=SC2016 # expanded by the inner sh
	_cluster_daemon_start "$p" "$i" qdevice _cluster_qdevice_up \
		unshare -m sh -c 'mount --bind "$1" /run && shift && exec "$@"' sh "$run" \
		corosync-qdevice -f -d \
		-S "net_nss_db_dir=$(_cluster_qdevice_nssdb "$p" "$i"),net_heartbeat_interval_min=$hb"
}

cluster_qdevice_stop() { _cluster_daemon_stop "$1" "qdevice-n$2" TERM; }

# corosync-quorumtool's membership row of this node ("(local)") has its
# device's flags: A (alive), V (casts its vote), NMW (not master wins).
cluster_qdevice_voting() {
	cluster_run "$1" "$2" corosync-quorumtool -s 2>/dev/null |
		grep -Eq '^ +[0-9]+ +[0-9]+ +A,V(,[A-Z]+)* .*\(local\)$'
}

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

# cluster_fail MESSAGE: log it and exit 1; the exit trap says it again
# after the nodes' logs, where a runner's truncated log still shows it.
cluster_fail() {
	_cluster_failure=$*
	log "$*"
	exit 1
}

# cluster_pause PID, cluster_resume PID: SIGSTOP and SIGCONT; what is
# still paused is resumed on exit (cluster_on_exit), before the teardown.
declare -A _cluster_paused=()
cluster_pause() { kill -STOP "$1" && _cluster_paused[$1]=1; }
cluster_resume() { kill -CONT "$1" && unset "_cluster_paused[$1]"; }

_cluster_on_exit() {
	local rc=$? p=${_cluster_exit_args[0]} dir=${_cluster_exit_args[1]}
	local fn=${_cluster_exit_args[2]:-} pid
	for pid in "${!_cluster_paused[@]}"; do
		kill -CONT "$pid" 2>/dev/null
	done
	[ -z "$fn" ] || "$fn"
	if [ "$rc" -ne 0 ]; then
		cluster_logs "$p"
		[ -z "${_cluster_failure:-}" ] || log "==> failed: $_cluster_failure"
	fi
	cluster_teardown "$p"
	rm -rf "$dir"
	exit "$rc"
}
