#!/usr/bin/env bash
# Failover scenarios (suite failover): check_failover.sh SCENARIO. Nodes of
# cluster.sh (corosync with CLUSTER_TOKEN_MS, default 1000; dataplane; syncd)
# behind the router of failover.sh; FAILOVER_CONNS (default 200) lbhold
# connections to the IPv4 VIP and FAILOVER_CONNS6 (default 100) to the IPv6
# one from the client, each sending a line every 100 ms and checking its
# echo and backend. Each scenario prints one line
#   scenario=NAME connections=N survived=M takeover_ms=T max_gap_ms=G
# and fails unless M = N (aa-reshuffle-nosync: unless some broke).
#
#   ap-dataplane   active-passive pair, the router ARPs (solicits) for the
#                  VIPs; the active's dataplane killed (SIGKILL): the passive
#                  takes over by gratuitous ARP and unsolicited NA within
#                  200 ms (T: kill to the later of the router's first
#                  gratuitous ARP and first unsolicited NA from the passive)
#   ap-node        the same, the whole active node killed (dataplane, syncd,
#                  corosync): within token + consensus (1.2 token) + 200 ms
#   aa-reshuffle   active-active trio, the router's ECMP route (L4 hash) to
#                  the three; connections open, a 4th backend added to every
#                  node's config (Maglev moves about a quarter of the flows),
#                  node 3 put in standby, its next hop withdrawn (here by the
#                  test: static routes), node 3 killed: every connection
#                  survives on synced entries (T: standby to the router's
#                  route without node 3)
#   aa-reshuffle-nosync
#                  the same with syncd stopped before the connections open
#                  (no membership: the test withdraws node 3); passes when
#                  some connections broke, as Maglev alone moves them
#   rejoin         aa-reshuffle, then node 3 restarted: it resyncs, becomes
#                  eligible, gets its next hop back (flows reshuffled onto
#                  it), then node 1 is put in standby, withdrawn and killed
#                  (T: node 3's restart to the router's route through it)
#   ap-hung-dataplane
#                  ap-dataplane with the active's dataplane stopped (SIGSTOP),
#                  not dead: its syncd, unanswered for 120 ms, withdraws and
#                  the passive takes over within 200 ms (T: stop to its
#                  announcements); node 1 then in standby, its dataplane
#                  continued owns no VIP and the router stays on node 2;
#                  standby off, node 1 takes the role back (preempt)
#   ap-syncd       the active's syncd killed (SIGKILL): the passive takes
#                  over within 200 ms (T: kill to its announcements); node
#                  1's dataplane, still running, gives the VIPs up when its
#                  lease ends (LEASE_EXPIRED), within lease_ms + 100 ms;
#                  syncd restarted, node 1 is never eligible unsynced (polled
#                  from the start), then takes the role back
#   ap-quorum      active-passive trio, node 1's ring link cut: alone and
#                  without quorum it withdraws and answers for no VIP while
#                  nodes 2 and 3 keep quorum and node 2 takes over within
#                  token + consensus + 200 ms (T: cut to its announcements);
#                  healed, node 1 resyncs and takes the role back
#   ap-corosync    the pair, corosync killed on the active node: its syncd
#                  loses votequorum at once and withdraws (passive, no
#                  VIPs); node 2 takes over once its corosync sees node 1
#                  gone, within token + consensus + 200 ms (T: kill to its
#                  announcements), and node 1 answers for no VIP meanwhile;
#                  corosync started again, node 1 takes the role back
#   ap-split-qdevice
#                  active-passive pair with a tie-breaker: corosync-qdevice
#                  (model net, ffsplit, TLS with verified client
#                  certificates) on each node, corosync-qnetd in a third
#                  namespace on the LB segment (cluster.sh), no two_node;
#                  the ring link between the nodes cut while both reach
#                  qnetd: from within token + consensus + the device's
#                  timeout (CLUSTER_QDEVICE_TIMEOUT_MS, 500) + 200 ms until
#                  the heal exactly one node (node 1, qnetd's choice) owns
#                  the VIPs and node 2 is without quorum (both sampled every
#                  100 ms), no sample shows both owning, the router stays on
#                  node 1 and hears no announcement or answer from node 2
#                  from the cut on (T: cut to node 2's first sample without
#                  quorum); healed, node 1 alone active, the router on it,
#                  and `sync verify` agrees
#   ap-split-two-node
#                  the same cut under two_node, no tie-breaker: both halves
#                  keep quorum and both may own the VIPs; prints the owners
#                  (sampled every 100 ms) and the announcements the router
#                  heard, by node; asserts what maglb promises there: no
#                  established connection is lost (both nodes hold the
#                  entries and the same Maglev tables), new connections
#                  during the split are served, after healing the roles,
#                  the router's neighbour and `sync verify` converge within
#                  10 s (and hold for 1 s) with at most one role change per
#                  node, and no node that ends passive announces after the
#                  heal (T: cut to node 2's announcements)
#   backend-down   active-active trio with TCP health checks (200 ms, fall 2):
#                  backend b2's server stopped under traffic; every node
#                  marks it down within fall x interval + one interval + one
#                  CPG round (T; 150 ms allowed for the round and polling),
#                  `sync verify` shows one Maglev digest on every node, not
#                  the one of before,
#                  new connections avoid it, and every connection on the
#                  other backends survives (N, M count only those)
#   bgp            aa-reshuffle with bird2: the router learns each active
#                  node's VIP routes by BGP, announced by packaging/hooks/bird2
#                  as syncd runs it; standby withdraws node 3's (T: standby to
#                  the router's route without node 3)
#
#   aa-node-death  active-active trio, the router's bird holding static ECMP
#                  routes to the VIPs, each node's next hop guarded by BFD
#                  with its dataplane (failover_bfd_router_start; the nodes'
#                  bfd section: interval FAILOVER_BFD_INTERVAL_MS, default
#                  100, multiplier 3), new connections opened all along
#                  (their failures counted and printed, not asserted): node
#                  3 dies as a machine does, its links down (lb0, ring0: its
#                  kernel sends no FIN, RST or ARP), then every process of it
#                  killed (SIGKILL); the router's routes lose node 3 within
#                  interval x multiplier + 150 ms (T: its links going down to the
#                  later of the two routes' first events without node 3) and
#                  every connection survives on nodes 1 and 2
#   aa-bgp-node-death
#                  aa-node-death with the router learning the VIP routes by
#                  BGP from each node's bird (announced by
#                  packaging/hooks/bird2 as syncd runs it), each BGP next hop
#                  usable only while BFD with that node's dataplane is Up
#                  (failover_bfd_bgp_router_start); node 3's bird dies with
#                  it, its BGP session lasting until the hold time: the same
#                  bound, not BGP's
#   aa-dataplane-death
#                  the same with node 3's dataplane killed (SIGKILL) alone;
#                  the same bound
#   aa-hung-dataplane
#                  the same with node 3's dataplane stopped (SIGSTOP); the
#                  same bound
#   aa-syncd-death the same with node 3's syncd killed (SIGKILL): its
#                  dataplane serves until the lease ends, then says Down;
#                  the routes lose node 3 within lease_ms + interval x
#                  multiplier + 150 ms, and node 3's connections survive on
#                  its peers' entries
#   aa-standby     the trio with BFD, node 3 put in standby under the held
#                  connections and the stream: its syncd ends serving, its
#                  dataplane's sessions go Down at once (diag Concatenated
#                  Path Down, bird's not Up) and the router's routes lose
#                  it within 150 ms (T: standby to the later of the two
#                  routes' first events without node 3); standby off, node
#                  3 is active again, its sessions Up, its next hop back
#   aa-quorum      the same with node 3's ring link cut: alone, without
#                  quorum, it ends serving (T: the cut to the routes without
#                  node 3, within token + consensus + 200 ms, as ap-node);
#                  healed, it resyncs and comes back
#   aa-corosync    the same with node 3's corosync killed: its syncd loses
#                  votequorum at once and ends serving, within 150 ms as
#                  standby (the others see node 3 leave the ring only after
#                  token + consensus); corosync started again, it resyncs
#                  and comes back
#   aa-flap        the trio with BFD, under load for FAILOVER_FLAP_S (60):
#                  the held connections, the stream of new ones and a yes(1)
#                  pinned to each core; no false down: no BFD state change
#                  on any dataplane (maglbctl bfd), bird's sessions all Up
#                  and unchanged, no event of the VIP routes
#
# Every active-active scenario has the router hash flows by their headers
# (addresses, protocol, ports: policy 3, fields 0x37), as a hardware router
# does, and checks that a flow keeps its next hop (ip route get) while
# source ports spread over all of them: with policy 1 a flow follows its
# sender's socket hash, which TCP changes at a retransmission timeout, and
# a flow stuck on a dead next hop would move by itself.
#
# Every scenario but aa-reshuffle-nosync needs syncd's membership (roles,
# VIP ownership, standby, hooks, agreed health): where `maglbctl cluster` is
# not supported it fails, saying so. SCENARIO-manual runs the same steps with
# an operator's hand instead of the membership (vip own --announce on the
# passive after the kill, no standby, the test's own next hop or bird route
# changes, backend down on every node): where a scenario fails, it tells the
# membership's part from the tools', the topology's and the flow sync's.
# ap-hung-dataplane, ap-syncd, ap-quorum, ap-corosync and the ap-split pair
# test the membership's own rules and have no -manual; nor have the BFD scenarios
# (bird2 on the router).
#
# Cleans up on exit, leftovers of its prefix first (MAGLB_E2E_PREFIX).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/failover.sh

SCENARIO=${1:-}
BASE=${SCENARIO%-manual}
MANUAL=0
[ "$BASE" = "$SCENARIO" ] || MANUAL=1
usage() {
	log "usage: check_failover.sh ap-dataplane|ap-node|aa-reshuffle|aa-reshuffle-nosync|rejoin|backend-down|bgp[-manual]"
	log "       check_failover.sh ap-hung-dataplane|ap-syncd|ap-quorum|ap-corosync|ap-split-qdevice"
	log "       check_failover.sh ap-split-two-node"
	log "       check_failover.sh aa-node-death|aa-bgp-node-death|aa-dataplane-death|aa-hung-dataplane"
	log "       check_failover.sh aa-syncd-death|aa-standby|aa-quorum|aa-corosync|aa-flap"
	exit 2
}
BFD=0
BGP=0 # the nodes' bird announces the VIPs, by syncd's hook (or by hand)
case $BASE in
ap-dataplane | ap-node | aa-reshuffle | aa-reshuffle-nosync | rejoin | backend-down) ;;
bgp) BGP=1 ;;
ap-hung-dataplane | ap-syncd | ap-quorum | ap-corosync | ap-split-qdevice | ap-split-two-node)
	[ "$MANUAL" = 0 ] || usage
	;;
aa-node-death | aa-bgp-node-death | aa-dataplane-death | aa-hung-dataplane | aa-syncd-death | \
	aa-standby | aa-quorum | aa-corosync | aa-flap)
	[ "$MANUAL" = 0 ] || usage
	BFD=1
	[ "$BASE" != aa-bgp-node-death ] || BGP=1
	;;
*) usage ;;
esac

P=${MAGLB_E2E_PREFIX:-e2efo-}
CONNS=${FAILOVER_CONNS:-200}
CONNS6=${FAILOVER_CONNS6:-100}
HOLDS=()        # the lbhold sets running: h (IPv4), h6 (IPv6)
HUNG_PID=""     # a dataplane stopped (SIGSTOP): continued on exit
SAMPLER_PID=""  # background polls of `maglbctl cluster` (pids): ended on exit
AP_DATAPLANE_BOUND_MS=200
AP_NODE_BOUND_MS=$((CLUSTER_TOKEN_MS + CLUSTER_TOKEN_MS * 12 / 10 + 200))
# A split pair settles once corosync's membership changed (token +
# consensus) and votequorum heard the device's poll for the new ring (within
# sync_timeout, the device's timeout here: cluster.sh's
# _cluster_qdevice_conf).
AP_SPLIT_BOUND_MS=$((AP_NODE_BOUND_MS + CLUSTER_QDEVICE_TIMEOUT_MS))
SPLIT_CONVERGE_S=10
HEALTH_INTERVAL_MS=200
HEALTH_FALL=2
# fall x interval, one interval (the nodes' probes are not in step), then
# 150 ms for the CPG round and this test's polling (the three nodes asked
# at once, then 50 ms of sleep, a round).
HEALTH_BOUND_MS=$((HEALTH_FALL * HEALTH_INTERVAL_MS + HEALTH_INTERVAL_MS + 150))
# BFD between the router's bird and the nodes' dataplanes (the aa-*-death
# scenarios and aa-flap): interval both ways, detection after MULT missed.
# 100 ms: the shortest that holds on this two-core machine under the whole
# suite (multiplier 3). 50 ms held in five 60 s aa-flap runs, but in a
# sixth, in CI, the router's bird timed node 1's session out (its packets
# more than 150 ms late: the dataplane's control thread shares the cores)
# and dropped it for 0.9 s; at 100 ms the routes went 254-306 ms after a
# dataplane's death.
BFD_INTERVAL_MS=${FAILOVER_BFD_INTERVAL_MS:-100}
BFD_MULT=3
BFD_DETECT_MS=$((BFD_INTERVAL_MS * BFD_MULT))
# detection, then 150 ms for bird's reaction, the kernel's route change and
# this test's reading of it
BFD_BOUND_MS=$((BFD_DETECT_MS + 150))
# A node taken out of service says so in one BFD packet, sent at once: the
# same 150 ms for bird, the kernel and this test.
STANDBY_BOUND_MS=150
FLAP_WATCH_S=${FAILOVER_FLAP_S:-60}
[ "$BFD" = 0 ] || CONF_EXTRA=$(failover_bfd_conf "$BFD_INTERVAL_MS" "$BFD_MULT")
LOAD_PIDS=""    # processes keeping the cores busy (aa-flap): ended on exit
STREAM_PID=""   # the loop opening new connections: stopped on exit

dir=$(mktemp -d)
CUT_US=""       # ap-split: the ring cut; until reported, the timeline is printed on exit
HEAL_US=""
undo() {
	[ -z "$HUNG_PID" ] || kill -CONT "$HUNG_PID" 2>/dev/null
	# shellcheck disable=SC2086 # several pids
	[ -z "$LOAD_PIDS" ] || kill $LOAD_PIDS 2>/dev/null
	[ -z "$STREAM_PID" ] || { : >"$dir/stream.stop"; wait "$STREAM_PID" 2>/dev/null; }
	# shellcheck disable=SC2086 # one pid, or several (ap-split)
	[ -z "$SAMPLER_PID" ] || kill $SAMPLER_PID 2>/dev/null
	[ -z "$CUT_US" ] || split_report
}
cluster_on_exit "$P" "$dir" undo

fail() { cluster_fail "$SCENARIO: $*"; }
step() { printf '%s: t_us=%s %s\n' "$SCENARIO" "$(failover_now_us)" "$*"; }

# ------------------------------------------------------------- membership

# The real scenarios need `maglbctl cluster`; a build without it fails here.
need_membership() {
	[ "$MANUAL" = 1 ] || [ "$BASE" = aa-reshuffle-nosync ] && return 0
	failover_cluster_json "$P" 1 >/dev/null ||
		fail "needs maglb-syncd's membership; $BASE-manual runs the rest by hand"
}

cluster_state() { failover_cluster_json "$P" "$1" 2>&1 | jq -c . 2>/dev/null; }

# await_role I ROLE: node I's syncd says it has ROLE.
await_role() {
	failover_await_cluster "$P" "$1" ".role == \"$2\"" ||
		fail "node $1 is not $2: $(cluster_state "$1")"
}

# standby I: node I out of the roles by hand, awaited.
standby() {
	[ "$MANUAL" = 1 ] || [ "$BASE" = aa-reshuffle-nosync ] && return 0
	cluster_syncd_ctl "$P" "$1" cluster standby on >/dev/null ||
		fail "cluster standby on node $1 refused"
	failover_await_cluster "$P" "$1" '.role != "active" and .eligible == false' ||
		fail "node $1 in standby is still active: $(cluster_state "$1")"
}

# ------------------------------------------------------------------ set-up

# node_start I: node I's daemons on $dir/nI.conf (corosync unless running);
# with BGP, its bird first, and the bird2 hook's environment for its syncd.
node_start() {
	local i=$1
	if [ "$BGP" = 0 ]; then
		failover_node_start "$P" "$i" "$dir/n$i.conf" || exit 1
		return 0
	fi
	failover_bird_node_start "$P" "$i" || exit 1
	MAGLB_BIRD_SOCKET=$(failover_bird_socket "$P" "$i") \
		MAGLB_BIRD_ROUTES4=$(failover_bird_routes_file "$P" "$i" 4) \
		MAGLB_BIRD_ROUTES6=$(failover_bird_routes_file "$P" "$i" 6) \
		failover_node_start "$P" "$i" "$dir/n$i.conf" || exit 1
}

# announce I: node I's next hop on the router: the test's static route, the
# operator's bird routes (bgp-manual), or nothing (bgp: syncd's hook; BFD:
# the router's bird, once node I's session is Up).
announce() {
	[ "$BFD" = 0 ] || return 0
	case $BASE/$MANUAL in
	bgp/1) failover_bird_announce "$P" "$1" on ;;
	bgp/0) ;;
	*) failover_aa_restore "$P" "$1" ;;
	esac
}

# nodes N KEYS [BACKEND...]: N nodes on the same config (KEYS in its cluster
# group), corosync members of one ring, syncd synced.
nodes() {
	local n=$1 keys=$2 i
	shift 2
	cluster_setup "$P" "$n" && start_backends "$P" || exit 1
	[ "$BFD" = 0 ] || quiet_kernels "$n"
	if [ "$BASE" = ap-split-qdevice ]; then
		cluster_qnetd_setup "$P" && cluster_qnetd_start "$P" || exit 1
	fi
	for ((i = 1; i <= n; i++)); do
		cluster_corosync_start "$P" "$i" || exit 1
		failover_config "$P" "$i" "$dir/n$i.conf" "$keys" "$@" || exit 1
	done
	for ((i = 1; i <= n; i++)); do
		cluster_await_members "$P" "$i" "$n" || exit 1
	done
	[ "$BASE" != ap-split-qdevice ] || qdevices_start "$n"
	# shellcheck disable=SC2046 # the node numbers, split
	case $BFD/$BGP in
	0/1) failover_bird_router_start "$P" || exit 1 ;;
	1/0) failover_bfd_router_start "$P" "$BFD_INTERVAL_MS" "$BFD_MULT" $(seq "$n") || exit 1 ;;
	1/1) failover_bfd_bgp_router_start "$P" "$BFD_INTERVAL_MS" "$BFD_MULT" $(seq "$n") || exit 1 ;;
	esac
	for ((i = 1; i <= n; i++)); do
		node_start "$i"
	done
	for ((i = 1; i <= n; i++)); do
		cluster_await_synced "$P" "$i" || fail "node $i's syncd is not synced"
	done
}

# quiet_kernels N: nodes 1..N's kernels send (almost) no ICMP error. Here
# (af_packet) each node's kernel holds the node's data address on lb0 too
# and gets a copy of every frame the dataplane gets, the router's BFD
# packets among them: with no socket on port 3784 it answers them with ICMP
# and ICMPv6 port unreachables (18 and 86 from node 1 in a 12 s run of
# aa-dataplane-death, within the kernel's default rate limits), which a real
# node's kernel, without the DPDK port, never sees nor sends. bird logged
# nothing of them and its sessions stayed Up, but they are traffic the
# router would not get from a real node, so they go: port unreachable is
# among the types the global ICMP limit covers (icmp_ratemask, and
# icmp.ratemask for IPv6, under the same limit), and a limit of 0 without
# burst lets none through once the namespace's initial credit is spent (4
# IPv4, 0 IPv6 in the same run). The tests need no other ICMP error from a
# node's kernel.
quiet_kernels() {
	local i
	for ((i = 1; i <= $1; i++)); do
		_sysctl "$(cluster_ns "$P" "$i")" net.ipv4.icmp_msgs_per_sec=0 net.ipv4.icmp_msgs_burst=0 ||
			fail "node $i: cannot set the ICMP limit"
	done
}

# qdevices_start N: corosync-qdevice on nodes 1..N, each counted as a vote
# by its node's votequorum (connected to qnetd, its vote cast), each a
# client of qnetd over TLS with its certificate verified.
qdevices_start() {
	local i tls
	for ((i = 1; i <= $1; i++)); do
		cluster_qdevice_start "$P" "$i" || exit 1
	done
	for ((i = 1; i <= $1; i++)); do
		await_cond 30 cluster_qdevice_voting "$P" "$i" ||
			fail "node $i's votequorum counts no qdevice vote:" \
				"$(cluster_run "$P" "$i" corosync-quorumtool -s 2>&1 | tail -n 4)" \
				"$(cluster_qdevice_tool "$P" "$i" -s 2>&1)"
	done
	tls=$(cluster_qnetd_tool "$P" -l -v | grep -c 'TLS active:.*Yes (client certificate verified)')
	[ "$tls" = "$1" ] || fail "qnetd has $tls TLS clients with verified certificates, not $1:" \
		"$(cluster_qnetd_tool "$P" -l -v 2>&1)"
	step "qdevice on $1 nodes voting, qnetd's clients over TLS, certificates verified"
}

# node_flows I: node I's entries (its own and those synced from peers), a
# line each, sorted.
node_flows() { { cluster_flows "$P" "$1" own && cluster_flows "$P" "$1" peer; } | sort -u; }

# The held connections' entries, once the nodes that made them (their own
# entries, all nodes together) hold one each: in $dir/held.flows.
held_recorded() {
	local i n
	n=$(_cluster_size "$P")
	for ((i = 1; i <= n; i++)); do
		cluster_flows "$P" "$i" own || return 1
	done | sort -u >"$dir/held.flows"
	[ "$(wc -l <"$dir/held.flows")" -eq $((CONNS + CONNS6)) ]
}

# missing I: how many held connections node I has no entry for.
missing() { node_flows "$1" | comm -23 "$dir/held.flows" - | wc -l; }

# Every running node holds an entry for every held connection, to its
# backend.
synced_everywhere() {
	local i n
	n=$(_cluster_size "$P")
	for ((i = 1; i <= n; i++)); do
		_cluster_pid "$P" "dataplane-n$i" >/dev/null || continue
		[ "$(missing "$i")" -eq 0 ] || return 1
	done
}

# await_synced_everywhere WHEN: synced_everywhere, or say who lacks how
# many and fail. Before a kill that is fatal (the test would race the
# replication); after one, the connections tell what it costs.
await_synced_everywhere() {
	local i n out=""
	await_cond 10 synced_everywhere 2>/dev/null && return 0
	n=$(_cluster_size "$P")
	for ((i = 1; i <= n; i++)); do
		_cluster_pid "$P" "dataplane-n$i" >/dev/null || continue
		out+=" node $i lacks $(missing "$i") (syncd: $(cluster_sync_value "$P" "$i" entries) entries);"
	done
	log "$SCENARIO: $1: not every node holds the $((CONNS + CONNS6)) held connections' entries:$out"
	return 1
}

hold() {
	local t0
	t0=$(failover_now_us)
	failover_hold_start "$P" h "$CONNS" || exit 1
	HOLDS=(h)
	if [ "$CONNS6" -gt 0 ]; then
		failover_hold_start "$P" h6 "$CONNS6" "$TOPO_VIP6" || exit 1
		HOLDS+=(h6)
	fi
	step "$CONNS + $CONNS6 connections held in $(failover_ms_since "$t0" "$(failover_now_us)") ms"
}

# settle T_US WHAT: every live connection answered since T_US.
settle() {
	local h
	for h in "${HOLDS[@]}"; do
		failover_hold_await_replies "$P" "$h" "$1" 30 ||
			fail "connections still unanswered after $2: $(failover_hold_snapshot "$P" "$h")"
	done
}

# stop_hold: every lbhold set stopped; their summary in $dir/held.json.
stop_hold() {
	local h jsons=()
	for h in "${HOLDS[@]}"; do
		failover_hold_stop "$P" "$h" || exit 1
		jsons+=("$(failover_hold_json "$P" "$h")")
		log "lbhold $h: $(cat "${jsons[-1]}")"
		grep -m 10 failed "$(topo_dir "$P")/$h.err" >&2
	done
	failover_hold_merge "${jsons[@]}" >"$dir/held.json"
}

# report JSON TAKEOVER_MS: the scenario's line; fails unless all survived.
report() { failover_report "$SCENARIO" "$1" "$2"; }

# ------------------------------------------------------ active-passive

# router_neighbours: the MACs the router reaches the VIPs at, v4 then v6.
router_neighbours() {
	local vip
	for vip in "$TOPO_VIP4" "$TOPO_VIP6"; do
		ip -n "${P}r" neigh show "$vip" dev br0 | awk '{ print $3 }'
	done | paste -sd' '
}

# own_by_hand I: node I's dataplane owns both VIPs and announces them.
own_by_hand() {
	if ! cluster_ctl "$P" "$1" vip own web --announce ||
		! cluster_ctl "$P" "$1" vip own "$FAILOVER_VIP6_NAME" --announce; then
		fail "vip own on node $1 refused"
	fi
}

# neighbours_at I WHEN: the router reaches both VIPs at node I's MAC.
neighbours_at() {
	local mac
	mac=$(cluster_node_mac "$1")
	[ "$(router_neighbours)" = "$mac $mac" ] ||
		fail "$2: the router reaches the VIPs at '$(router_neighbours)', not node $1's $mac"
}

# owns_none I: node I's dataplane owns no VIP (it answers ARP/ND for none).
owns_none() {
	cluster_ctl "$P" "$1" --json vips | jq -e '.vips | length > 0 and all(.owned == false)' \
		>/dev/null
}

# ap_start N: N nodes active-passive, the router on-link, node 1 active,
# the connections held through it and their entries on every node.
ap_start() {
	local i
	# preempt: node 1, of the highest priority, is active whichever node's
	# syncd became eligible first.
	nodes "$1" 'mode = "active-passive"; preempt = true;'
	need_membership
	failover_ap_route "$P" || exit 1
	if [ "$MANUAL" = 1 ]; then
		own_by_hand 1
	else
		await_role 1 active
		for ((i = 2; i <= $1; i++)); do
			await_role "$i" passive
		done
	fi
	failover_watch_start "$P" || exit 1
	hold
	neighbours_at 1 "once held"
	await_cond 10 held_recorded || fail "node 1 made $(wc -l <"$dir/held.flows") entries"
	await_synced_everywhere "before the failure" || exit 1
}

# announced T_US I WHAT: ANNOUNCED_US, the later of node I's first
# gratuitous ARP and first unsolicited NA the router got after T_US.
announced() {
	local mac garp_us na_us
	mac=$(cluster_node_mac "$2")
	garp_us=$(failover_await_event "$P" "$1" garp ip="$TOPO_VIP4" mac="$mac") ||
		fail "no gratuitous ARP from node $2 after $3"
	na_us=$(failover_await_event "$P" "$1" na ip="$TOPO_VIP6" mac="$mac") ||
		fail "no unsolicited neighbour advertisement from node $2 after $3"
	ANNOUNCED_US=$((na_us > garp_us ? na_us : garp_us))
}

# takeover T_US WHAT: node 2 took over after WHAT at T_US: TAKEOVER_MS to
# its announcements; every connection answered since, through node 2.
takeover() {
	announced "$1" 2 "$2"
	TAKEOVER_MS=$(failover_ms_since "$1" "$ANNOUNCED_US")
	settle "$1" "$2"
	neighbours_at 2 "after $2"
	[ "$MANUAL" = 1 ] || await_role 2 active
	step "node 2 took over $TAKEOVER_MS ms after $2"
}

# take_back T_US WHAT: node 1, eligible again after WHAT at T_US, takes the
# role back (preempt) and the router back by its announcements.
take_back() {
	await_role 1 active
	announced "$1" 1 "$2"
	settle "$1" "node 1's return"
	neighbours_at 1 "after node 1's return"
	await_role 2 passive
	step "node 1 active again $(failover_ms_since "$1" "$ANNOUNCED_US") ms after $2"
}

# report_ap BOUND_MS: the line, then TAKEOVER_MS within BOUND_MS.
report_ap() {
	stop_hold
	report "$dir/held.json" "$TAKEOVER_MS" || exit 1
	[ "$MANUAL" = 1 ] || [ "$TAKEOVER_MS" -le "$1" ] ||
		fail "takeover took $TAKEOVER_MS ms, over $1 ms"
}

scenario_ap() {
	local kill_us bound=$AP_DATAPLANE_BOUND_MS
	[ "$BASE" = ap-node ] && bound=$AP_NODE_BOUND_MS
	ap_start 2
	kill_us=$(failover_now_us)
	if [ "$BASE" = ap-node ]; then
		failover_node_kill9 "$P" 1
	else
		cluster_dataplane_kill9 "$P" 1
	fi
	[ "$MANUAL" = 0 ] || own_by_hand 2
	takeover "$kill_us" "the kill"
	report_ap "$bound"
}

# ap-hung-dataplane: node 1's dataplane stopped, not dead (SIGSTOP), until
# node 2 took over; once it runs again it answers for no VIP, and node 1
# takes the role back only once eligible.
scenario_ap_hung() {
	local stop_us cont_us back_us
	ap_start 2
	HUNG_PID=$(_cluster_pid "$P" dataplane-n1) || fail "node 1's dataplane has no pid"
	stop_us=$(failover_now_us)
	kill -STOP "$HUNG_PID"
	takeover "$stop_us" "node 1's dataplane stopped"
	# With preempt node 1 is eligible again, and owns the VIPs again, about
	# 10 ms after its dataplane answers: standby (syncd answers meanwhile)
	# keeps it out long enough to read what the dataplane owns once it runs.
	standby 1
	cont_us=$(failover_now_us)
	kill -CONT "$HUNG_PID"
	HUNG_PID=""
	step "node 1's dataplane continued after $(failover_ms_since "$stop_us" "$cont_us") ms"
	failover_await_cluster "$P" 1 '.members[] | select(.id == 1) | .dataplane' ||
		fail "node 1's syncd does not hear its dataplane again: $(cluster_state 1)"
	await_cond 10 owns_none 1 ||
		fail "node 1's dataplane, running again, still owns the VIPs: $(cluster_ctl "$P" 1 vips)"
	neighbours_at 2 "node 1's dataplane running again"
	step "node 1's dataplane owns no VIP (LEASE_EXPIRED" \
		"$(cluster_counter "$P" 1 control LEASE_EXPIRED)), the router is on node 2"
	back_us=$(failover_now_us)
	cluster_syncd_ctl "$P" 1 cluster standby off >/dev/null || fail "cluster standby off refused"
	take_back "$back_us" "node 1's standby off"
	report_ap "$AP_DATAPLANE_BOUND_MS"
}

# owns_none_timed I: owns_none I, timed: OWNED_US, the start of the last call
# that saw a VIP owned (it was owned then or later); DISOWNED_US, the end of
# the one that saw none.
owns_none_timed() {
	local t
	t=$(failover_now_us)
	if owns_none "$1"; then
		DISOWNED_US=$(failover_now_us)
		return 0
	fi
	OWNED_US=$t
	return 1
}

# sample_until_active I: node I's `maglbctl --json cluster` now, added to
# $dir/samples; true once node I is active.
sample_until_active() {
	local out
	out=$(failover_cluster_json "$P" "$1" 2>/dev/null) || return 1
	printf '%s\n' "$out" >>"$dir/samples"
	[ "$(jq -r .role <<<"$out")" = active ]
}

# eligible_unsynced: the samples in which the node is eligible while its own
# entry (its last announcement) says it is not synced, as a JSON list. The
# header is the node now, its entry what it last said: one sample may fall
# between its resync and the announcement of it (a 10 ms tick and a CPG
# round), so a passive node whose next sample says synced is not counted.
eligible_unsynced() {
	jq -sc 'map(. as $s | {eligible, role,
			synced: ($s.members | map(select(.id == $s.node_id)) | .[0].synced == true)}) |
		. as $v | [range(length) | select($v[.].eligible and ($v[.].synced | not) and
			($v[.].role == "active" or ($v[. + 1].synced | not))) | $v[.]]' "$dir/samples"
}

# ap-syncd: node 1's syncd killed; node 2 takes over at once, node 1's
# dataplane gives the VIPs up when its lease ends; the restarted syncd is
# eligible only once synced, then takes the role back.
scenario_ap_syncd() {
	local kill_us start_us lease_ms owned_ms expired early
	ap_start 2
	lease_ms=$(failover_cluster_value "$P" 1 .lease_ms) || exit 1
	kill_us=$(failover_now_us)
	cluster_syncd_kill9 "$P" 1
	# First: the lease ends 750-1000 ms after the kill (renewed every
	# lease / 4), and this times when.
	OWNED_US=$kill_us
	await_cond 5 owns_none_timed 1 ||
		fail "node 1's dataplane still owns the VIPs 5 s after its syncd's death"
	owned_ms=$(failover_ms_since "$kill_us" "$OWNED_US")
	expired=$(cluster_counter "$P" 1 control LEASE_EXPIRED)
	step "node 1's dataplane owned the VIPs $owned_ms ms after its syncd's death, none" \
		"$(failover_ms_since "$kill_us" "$DISOWNED_US") ms after (lease $lease_ms ms," \
		"LEASE_EXPIRED $expired)"
	[ "$expired" -ge 1 ] || fail "node 1's dataplane disowned the VIPs, but not as a lease ending"
	takeover "$kill_us" "node 1's syncd killed"
	# Sampled from before the start: syncd resyncs 300 entries in a few ms.
	: >"$dir/samples"
	await_cond 30 sample_until_active 1 2>/dev/null &
	SAMPLER_PID=$!
	start_us=$(failover_now_us)
	cluster_syncd_start "$P" 1 "$dir/n1.conf" || exit 1
	wait "$SAMPLER_PID" || fail "node 1 is not active again: $(cluster_state 1)"
	SAMPLER_PID=""
	early=$(eligible_unsynced)
	step "node 1's syncd restarted: $(jq -s 'map(select(.eligible | not)) | length' \
		"$dir/samples") samples not eligible, then active"
	[ "$early" = "[]" ] || fail "node 1 eligible before synced: $early"
	take_back "$start_us" "node 1's syncd restarted"
	report_ap "$AP_DATAPLANE_BOUND_MS"
	((owned_ms <= lease_ms + 100)) ||
		fail "node 1's dataplane still owned the VIPs $owned_ms ms after its syncd's death," \
			"over the lease ($lease_ms ms) + 100 ms"
}

# answers_from I T_US: the router's events of node I answering for or
# announcing a VIP after T_US, a line each.
answers_from() {
	local mac
	mac=$(cluster_node_mac "$1")
	failover_events "$P" | awk -v t="$2" -v mac="mac=$mac" '
		{ split($1, s, "=") }
		s[2] + 0 > t + 0 && $NF == mac && $2 ~ /^kind=(garp|arp-reply|na|na-reply)$/'
}

# ap-quorum: three nodes, node 1 cut off the ring: alone, without quorum, it
# withdraws while nodes 2 and 3 keep quorum and node 2 takes over; healed,
# node 1 takes the role back.
scenario_ap_quorum() {
	local cut_us heal_us since i
	ap_start 3
	cut_us=$(failover_now_us)
	cluster_ring_link "$P" 1 down || fail "cannot cut node 1's ring link"
	takeover "$cut_us" "node 1's ring link cut"
	since=$ANNOUNCED_US
	failover_await_cluster "$P" 1 '.quorate == false and .role == "passive"' ||
		fail "node 1, cut off, is quorate or active: $(cluster_state 1)"
	neighbours_at 2 "node 1 without quorum"
	await_cond 10 owns_none 1 || fail "node 1's dataplane, without quorum, still owns the VIPs"
	neighbours_at 2 "node 1's dataplane without VIPs"
	cluster_await_members "$P" 1 1 || fail "node 1's corosync is not alone"
	for i in 2 3; do
		cluster_await_members "$P" "$i" 2 || fail "node $i's corosync still sees node 1"
		failover_await_cluster "$P" "$i" '.quorate == true' ||
			fail "node $i lost quorum: $(cluster_state "$i")"
	done
	neighbours_at 2 "the partition"
	[ -z "$(answers_from 1 "$since")" ] ||
		fail "node 1 answered for the VIPs while cut off: $(answers_from 1 "$since")"
	heal_us=$(failover_now_us)
	step "partition of $(failover_ms_since "$cut_us" "$heal_us") ms healed"
	cluster_ring_link "$P" 1 up || fail "cannot heal node 1's ring link"
	for i in 1 2 3; do
		cluster_await_members "$P" "$i" 3 || fail "node $i's corosync sees no 3 members"
	done
	take_back "$heal_us" "the ring healed"
	report_ap "$AP_NODE_BOUND_MS"
}

# ap-corosync: corosync killed on the active node of a pair: its syncd
# loses votequorum at once and withdraws (no quorum: passive, no VIPs);
# node 2 sees node 1 leave the ring after token + consensus and takes
# over; node 1 answers for no VIP meanwhile. corosync started again, node
# 1 rejoins, resyncs and takes the role back.
scenario_ap_corosync() {
	local kill_us start_us since
	ap_start 2
	kill_us=$(failover_now_us)
	cluster_corosync_kill9 "$P" 1
	failover_await_cluster "$P" 1 '.quorate == false and .role == "passive"' ||
		fail "node 1, without corosync, is quorate or active: $(cluster_state 1)"
	await_cond 10 owns_none 1 || fail "node 1's dataplane, without corosync, still owns the VIPs"
	step "node 1 withdrew $(failover_ms_since "$kill_us" "$(failover_now_us)") ms after" \
		"its corosync's death (polled)"
	takeover "$kill_us" "node 1's corosync killed"
	since=$ANNOUNCED_US
	[ -z "$(answers_from 1 "$since")" ] ||
		fail "node 1 answered for the VIPs without corosync: $(answers_from 1 "$since")"
	start_us=$(failover_now_us)
	cluster_corosync_start "$P" 1 || exit 1
	cluster_await_members "$P" 1 2 || fail "node 1's corosync, restarted, sees no 2 members"
	take_back "$start_us" "node 1's corosync restarted"
	report_ap "$AP_NODE_BOUND_MS"
}

# ------------------------------------------------------- a pair cut in two

# node_sample I: node I now, "ROLE/q" (quorate) or "ROLE/nq", ",owned=K"
# (the VIPs its dataplane owns), ",changes=N" (its syncd's role changes: a
# change between two samples shows there); "-" for what does not answer.
# Read without jq: sampled every 100 ms.
node_sample() {
	local c d role=- q=- owned=- changes=-
	c=$(cluster_syncd_ctl "$P" "$1" --json cluster 2>/dev/null)
	d=$(cluster_ctl "$P" "$1" --json status 2>/dev/null)
	[[ $c =~ \"quorate\":\ *(true|false) ]] && q=${BASH_REMATCH[1]/true/q} && q=${q/false/nq}
	[[ $c =~ \"role\":\ *\"([a-z]+)\" ]] && role=${BASH_REMATCH[1]}
	[[ $c =~ \"role_changes\":\ *([0-9]+) ]] && changes=${BASH_REMATCH[1]}
	[[ $d =~ \"vips_owned\":\ *([0-9]+) ]] && owned=${BASH_REMATCH[1]}
	printf '%s/%s,owned=%s,changes=%s' "$role" "$q" "$owned" "$changes"
}

# sample_node I: every 100 ms a line "t_us=T nI=STATE" (node_sample) to
# $dir/owners-nI, until killed.
sample_node() {
	local t next
	next=$(failover_now_us)
	while :; do
		t=$(failover_now_us)
		printf 't_us=%s n%s=%s\n' "$t" "$1" "$(node_sample "$1")" >>"$dir/owners-n$1"
		next=$((next + 100000))
		t=$(failover_now_us)
		# the sampling period, not a wait for an event
		((next <= t)) || sleep "$(printf '0.%06d' $((next - t)))"
	done
}

# sampler_start: a sampler a node (in parallel: one maglbctl pair each),
# their pids in SAMPLER_PID.
sampler_start() {
	local i
	SAMPLER_PID=""
	for i in 1 2; do
		: >"$dir/owners-n$i"
		sample_node "$i" &
		SAMPLER_PID+=" $!"
	done
}

sampler_stop() {
	local pid
	for pid in $SAMPLER_PID; do
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	SAMPLER_PID=""
}

# owners T_US: both nodes' samples since T_US merged in time order, a line
# each "T_US n1=STATE n2=STATE" (a node's last state carried on).
owners() {
	sort -t= -k2,2n "$dir"/owners-n1 "$dir"/owners-n2 | awk -v t="$1" '
		{ split($1, s, "="); node = substr($2, 1, 2); st[node] = substr($2, 4)
		  if (s[2] + 0 >= t + 0 && ("n1" in st) && ("n2" in st))
			print s[2], "n1=" st["n1"], "n2=" st["n2"] }'
}

# owners_timeline T_US: the merged samples since T_US at which either
# node's state changed, "+MS n1=.. n2=..", then how many samples there were.
owners_timeline() {
	owners "$1" | awk -v t="$1" '{ n++; st = $2 " " $3
		if (st != last) printf "  +%d ms %s\n", ($1 - t) / 1000, st
		last = st } END { printf "  (%d samples of both nodes)\n", n }'
}

# two_owners_since T_US: the merged samples since T_US in which both
# dataplanes owned VIPs.
two_owners_since() { owners "$1" | awk '$2 ~ /owned=[1-9]/ && $3 ~ /owned=[1-9]/'; }

# settled_since T_US HEAL_US: ms from T_US to the first sample of the last
# run, before HEAL_US, of samples showing a split decided for node 1: node
# 1 active, quorate, owning both VIPs, node 2 passive without quorum,
# owning none. Nothing when the last sample before HEAL_US does not.
settled_since() {
	owners "$1" | awk -v t="$1" -v heal="$2" '$1 + 0 >= heal + 0 { exit }
		{ if ($2 ~ /^n1=active\/q,owned=2,/ && $3 ~ /^n2=passive\/nq,owned=0,/) {
			if (start == "") start = $1 } else start = "" }
		END { if (start != "") print int((start - t) / 1000) }'
}

# announcements T_US: the router's events after T_US of a node announcing
# (garp, na) or answering (arp-reply, na-reply) for a VIP, "+MS nI KIND IP".
announcements() {
	failover_events "$P" | awk -v t="$1" '
		{ split($1, s, "="); if (s[2] + 0 <= t + 0) next
		  if ($2 !~ /^kind=(garp|arp-reply|na|na-reply)$/) next
		  node = $NF; sub("mac=02:00:00:00:00:1", "n", node)
		  kind = $2; sub("kind=", "", kind); ip = $3; sub("ip=", "", ip)
		  printf "  +%d ms %s %s %s\n", (s[2] - t) / 1000, node, kind, ip }'
}

# split_report: the owners from the cut and what the router heard, by node
# (printed on exit, whatever failed).
split_report() {
	sampler_stop
	[ -s "$dir/owners-n1" ] || return 0
	printf '%s: owners from the cut (nI=ROLE/quorum,owned=VIPS,changes=ROLE CHANGES):\n' "$SCENARIO"
	owners_timeline "$CUT_US"
	printf '%s: announcements and answers the router heard from the cut%s:\n' "$SCENARIO" \
		"${HEAL_US:+ (heal at +$(failover_ms_since "$CUT_US" "$HEAL_US") ms)}"
	announcements "$CUT_US" | tee "$dir/announcements"
	printf '%s: by node: %s\n' "$SCENARIO" "$(awk '{ n[$3 " " $4]++ }
		END { for (k in n) print k, n[k] }' "$dir/announcements" | sort | paste -sd,)"
}

# role_changes I: node I's syncd's count of its role changes.
role_changes() { failover_cluster_value "$P" "$1" .role_changes; }

# one_owner I: node I is active, quorate and owns both VIPs; the other is
# passive and owns none.
one_owner() {
	[[ $(node_sample "$1") == active/q,owned=2,* ]] &&
		[[ $(node_sample $((3 - $1))) == passive/*,owned=0,* ]]
}

# verify_agrees: `sync verify` from node 1: both members answered and agree
# on their entries and Maglev tables (its JSON in $dir/verify.json).
verify_agrees() {
	cluster_syncd_ctl "$P" 1 --json sync verify >"$dir/verify.json" 2>&1 &&
		jq -e '.agree and all(.groups[]; .members == 2)' "$dir/verify.json" >/dev/null
}

# converged [router]: one node (ACTIVE) active, owning the VIPs, the other
# passive owning none; with router, the router reaches the VIPs at ACTIVE;
# `sync verify` agrees.
converged() {
	local i mac
	ACTIVE=""
	for i in 1 2; do
		! one_owner "$i" || ACTIVE=$i
	done
	[ -n "$ACTIVE" ] || return 1
	mac=$(cluster_node_mac "$ACTIVE")
	[ "${1:-}" != router ] || [ "$(router_neighbours)" = "$mac $mac" ] || return 1
	verify_agrees
}

# converged_1s [router]: converged, with the same ACTIVE, for 1 s on end
# (STREAK_US: since when).
converged_1s() {
	local was=$ACTIVE now
	now=$(failover_now_us)
	if ! converged "$@"; then
		STREAK_US=""
		return 1
	fi
	[ -n "$STREAK_US" ] && [ "$ACTIVE" = "$was" ] || STREAK_US=$now
	((now - STREAK_US >= 1000000))
}

# pair_state: both nodes in a line, for failure messages.
pair_state() {
	printf 'node 1 %s (%s), node 2 %s (%s), router at %s' "$(node_sample 1)" "$(cluster_state 1)" \
		"$(node_sample 2)" "$(cluster_state 2)" "$(router_neighbours)"
}

# ring_link STATE MEMBERS: node 2's ring link STATE (down: cut, up: healed),
# then each node's corosync sees MEMBERS members. LINK_US: the change.
ring_link() {
	local i
	LINK_US=$(failover_now_us)
	cluster_ring_link "$P" 2 "$1" || fail "cannot set node 2's ring link $1"
	for i in 1 2; do
		cluster_await_members "$P" "$i" "$2" || fail "node $i's corosync does not see $2 member(s)"
	done
}

# split_cut: the ring cut, each corosync alone. CUT_US: the cut.
split_cut() {
	ring_link down 1
	CUT_US=$LINK_US
	step "ring cut: each corosync alone $(failover_ms_since "$CUT_US" "$(failover_now_us)") ms after"
}

# split_heal [router]: the ring link up, both corosyncs members again; then
# the pair converges for 1 s (converged_1s) within SPLIT_CONVERGE_S.
# HEAL_US; CONVERGE_MS (to the start of that second); false when it did not.
split_heal() {
	ring_link up 2
	HEAL_US=$LINK_US STREAK_US="" ACTIVE=""
	if ! await_cond $((SPLIT_CONVERGE_S + 1)) converged_1s "$@" 2>/dev/null ||
		(((STREAK_US - HEAL_US) / 1000 > SPLIT_CONVERGE_S * 1000)); then
		CONVERGE_MS=none
		return 1
	fi
	CONVERGE_MS=$(failover_ms_since "$HEAL_US" "$STREAK_US")
	step "healed: node $ACTIVE active${1:+, the router on it}, sync verify agrees" \
		"$CONVERGE_MS ms after, and for 1 s"
}

# ap-split-qdevice: the ring cut, both nodes reaching qnetd: qnetd's vote
# goes to node 1 (ffsplit, equal halves: the lowest id), node 2 loses quorum
# and never owns or announces; healed, node 1 stays active.
scenario_ap_split_qdevice() {
	local settled_ms rc1 rc2 cut errors=()
	ap_start 2
	rc1=$(role_changes 1) && rc2=$(role_changes 2) || exit 1
	sampler_start
	split_cut
	failover_await_cluster "$P" 2 '.quorate == false and .role == "passive"' ||
		fail "node 2, on the side qnetd did not choose, is quorate or active: $(cluster_state 2)"
	await_cond 10 one_owner 1 || fail "node 1 does not own the VIPs alone: $(pair_state)"
	settle "$CUT_US" "the cut"
	await_synced_everywhere "during the split" || errors+=("a node lost entries in the split")
	[ "$(router_neighbours)" = "$(cluster_node_mac 1) $(cluster_node_mac 1)" ] ||
		errors+=("the router reaches the VIPs at '$(router_neighbours)' after the cut, not node 1")
	split_heal || fail "the pair has not converged ${SPLIT_CONVERGE_S} s after the heal: $(pair_state)"
	split_report
	cut=$CUT_US CUT_US=""
	# Timed by the samples (every 100 ms a node): node 2's first without
	# quorum, and the first of those that show the split's end state
	# until the heal.
	TAKEOVER_MS=$(owners "$cut" | awk -v t="$cut" '$3 ~ /^n2=[a-z-]*\/nq,/ {
		print int(($1 - t) / 1000); exit }')
	settled_ms=$(settled_since "$cut" "$HEAL_US")
	step "node 2 without quorum ${TAKEOVER_MS:=none} ms after the cut (sampled), the split's" \
		"state (node 1 alone active and owning, node 2 passive without quorum) from" \
		"${settled_ms:=none} ms until the heal"
	step "role changes from the cut: node 1 $(($(role_changes 1) - rc1))," \
		"node 2 $(($(role_changes 2) - rc2))"
	[ "$ACTIVE" = 1 ] || errors+=("node $ACTIVE is active after the heal, not node 1")
	[ "$(router_neighbours)" = "$(cluster_node_mac 1) $(cluster_node_mac 1)" ] ||
		errors+=("the router reaches the VIPs at '$(router_neighbours)' after the heal, not node 1")
	[ -z "$(two_owners_since "$cut")" ] ||
		errors+=("both nodes owned the VIPs: $(two_owners_since "$cut" | head -n 3 | paste -sd';')")
	[ -z "$(answers_from 2 "$cut")" ] ||
		errors+=("node 2 announced or answered for the VIPs after the cut (ms from the cut):$(
			announcements "$cut" | grep ' n2 ' | head -n 4 | paste -sd',')")
	[ "$settled_ms" != none ] && ((settled_ms <= AP_SPLIT_BOUND_MS)) ||
		errors+=("the split's state held from $settled_ms ms after the cut, not within $AP_SPLIT_BOUND_MS ms")
	stop_hold
	report "$dir/held.json" "$TAKEOVER_MS" || errors+=("connections were lost")
	[ ${#errors[@]} -eq 0 ] || fail "$(printf '%s; ' "${errors[@]}")"
}

# announced_times T_US I KIND IP: how many KIND events from node I for IP
# the router heard after T_US.
announced_times() {
	failover_events "$P" | awk -v t="$1" -v mac="mac=$(cluster_node_mac "$2")" -v kind="kind=$3" \
		-v ip="ip=$4" '{ split($1, s, "=") } s[2] + 0 > t + 0 && $2 == kind && $3 == ip && $NF == mac' |
		wc -l
}

# announced_all T_US I: node I's whole announcement after T_US was heard: a
# gratuitous ARP and an unsolicited NA, 5 times each (the dataplane's
# CONTROL_ANNOUNCE_TIMES, the last 800 ms after the first).
announced_all() {
	[ "$(announced_times "$1" "$2" garp "$TOPO_VIP4")" -ge 5 ] &&
		[ "$(announced_times "$1" "$2" na "$TOPO_VIP6")" -ge 5 ]
}

# ap-split-two-node: the ring cut under two_node: both halves keep quorum
# and node 2 takes the VIPs too; connections survive, new ones are served;
# healed, the pair converges with at most one role change per node and no
# announcement from the node that ends passive.
scenario_ap_split_two_node() {
	local rc1 rc2 ch1 ch2 passive errors=()
	ap_start 2
	sampler_start
	split_cut
	announced "$CUT_US" 2 "the cut"
	TAKEOVER_MS=$(failover_ms_since "$CUT_US" "$ANNOUNCED_US")
	settle "$CUT_US" "the cut"
	neighbours_at 2 "node 2's announcements"
	await_synced_everywhere "during the split" || errors+=("a node lost entries in the split")
	step "node 2 announced the VIPs $TAKEOVER_MS ms after the cut; node 1: $(node_sample 1)"
	run_in "${P}c" "$LBTOOLS/lbclient" --connect "$TOPO_VIP4" "$TOPO_PORT" --conns 60 --json \
		>"$dir/new.json" 2>"$dir/new.err"
	clients_ok "$dir/new.json" || fail "new connections during the split failed: $(cat "$dir/new.err")"
	step "60 new connections during the split served"
	# The heal after node 2's last announcement: one still due would tell
	# nothing of the heal.
	await_cond 10 announced_all "$CUT_US" 2 || fail "node 2's announcements did not all arrive"
	rc1=$(role_changes 1) && rc2=$(role_changes 2) || exit 1
	split_heal router ||
		errors+=("the pair has not converged ${SPLIT_CONVERGE_S} s after the heal: $(pair_state)")
	settle "$HEAL_US" "the heal"
	ch1=$(($(role_changes 1) - rc1)) ch2=$(($(role_changes 2) - rc2))
	split_report
	CUT_US=""
	step "role changes from the heal: node 1 $ch1, node 2 $ch2; node ${ACTIVE:-none} active"
	((ch1 <= 1)) || errors+=("node 1 changed its role $ch1 times after the heal")
	((ch2 <= 1)) || errors+=("node 2 changed its role $ch2 times after the heal")
	if [ -n "$ACTIVE" ]; then
		passive=$((3 - ACTIVE))
		! announcements "$HEAL_US" | grep -Eq " n$passive (garp|na) " ||
			errors+=("node $passive, passive in the end, announced after the heal (ms from the heal):$(
				announcements "$HEAL_US" | grep -E " n$passive (garp|na) " | head -n 4 | paste -sd',')")
	fi
	stop_hold
	report "$dir/held.json" "$TAKEOVER_MS" || errors+=("connections were lost")
	[ ${#errors[@]} -eq 0 ] || fail "$(printf '%s; ' "${errors[@]}")"
}

# ------------------------------------------------------- active-active

CLUSTER_KEYS='mode = "active-active";'

# aa_start: three active nodes behind the router's ECMP route, connections
# held and their entries everywhere (aa-reshuffle-nosync: syncd stopped
# first).
aa_start() {
	local i
	if [ "$BGP" = 1 ] && [ "$MANUAL" = 0 ]; then
		[ -x packaging/hooks/bird2 ] ||
			fail "packaging/hooks/bird2 is missing: the bird2 hook has not landed"
		mkdir -p "$dir/hooks" && ln -sf "$PWD/packaging/hooks/bird2" "$dir/hooks/bird2"
		CLUSTER_KEYS+=" hooks_dir = \"$dir/hooks\";"
	fi
	nodes 3 "$CLUSTER_KEYS"
	need_membership
	for i in 1 2 3; do
		[ "$MANUAL" = 1 ] || [ "$BASE" = aa-reshuffle-nosync ] || await_role "$i" active
		announce "$i" || exit 1
	done
	if ! failover_await_nexthops "$P" 3 30 || ! failover_await_nexthops "$P" 3 10 6; then
		[ "$BFD" = 0 ] || log "$SCENARIO: the router's BFD sessions: $(failover_bfd_sessions "$P" 2>&1)"
		fail "the router's VIP routes are not through the 3 nodes"
	fi
	hashed_by_headers 3
	failover_watch_start "$P" || exit 1
	if [ "$BASE" = aa-reshuffle-nosync ]; then
		for i in 1 2 3; do
			cluster_syncd_stop "$P" "$i" || exit 1
		done
	fi
	hold
	await_cond 10 held_recorded ||
		fail "the nodes made $(wc -l <"$dir/held.flows") entries, not $((CONNS + CONNS6))"
	[ "$BASE" = aa-reshuffle-nosync ] || await_synced_everywhere "once held" || exit 1
}

# hashed_by_headers K: the router spreads flows over its K next hops by their
# headers alone (failover_router_hash): each of 32 client source ports gets
# the same next hop when asked three times, and together they get all K,
# v4 and v6. With policy 1 a flow follows its sender's socket hash, which
# TCP changes at every retransmission timeout: a flow stuck on a dead next
# hop would move by itself and hide the failure.
hashed_by_headers() {
	local f policy fields sport hop again hops=()
	for f in 4 6; do
		policy=$(ip netns exec "${P}r" sysctl -n "net.ipv$f.fib_multipath_hash_policy")
		fields=$(ip netns exec "${P}r" sysctl -n "net.ipv$f.fib_multipath_hash_fields")
		if [ "$policy" != 3 ] || ((fields != 0x37)); then
			fail "the router's IPv$f multipath hash is policy $policy, fields $fields, not 3, 0x37"
		fi
		hops=()
		for ((sport = 40000; sport < 40032; sport++)); do
			hop=$(failover_nexthop_of "$P" "$sport" "$f")
			[ -n "$hop" ] || fail "the router has no IPv$f next hop for source port $sport"
			for again in 2 3; do
				[ "$(failover_nexthop_of "$P" "$sport" "$f")" = "$hop" ] ||
					fail "source port $sport: IPv$f next hop $hop, then another (ask $again)"
			done
			hops+=("$hop")
		done
		[ "$(printf '%s\n' "${hops[@]}" | sort -u | wc -l)" -eq "$1" ] ||
			fail "32 source ports over IPv$f next hops $(printf '%s\n' "${hops[@]}" | sort |
				uniq -c | paste -sd,), not all $1"
	done
	step "the router hashes by headers: 32 source ports keep their next hops, over all $1"
}

# add_backend4: backend b4 in every running node's config, reloaded.
add_backend4() {
	local i
	failover_backend_add "$P" 4 || exit 1
	for i in 1 2 3; do
		failover_config "$P" "$i" "$dir/n$i.conf" "$CLUSTER_KEYS" 1 2 3 4 || exit 1
		if _cluster_pid "$P" "syncd-n$i" >/dev/null; then
			failover_reload "$P" "$i" || fail "node $i refused the reload"
		else
			cluster_ctl "$P" "$i" reload >/dev/null || fail "node $i's dataplane refused the reload"
		fi
	done
	step "backend b4 added on every node"
}

# withdraw I: node I off the router's route: standby, then its hook (bgp),
# the operator's bird routes (bgp-manual) or the test's static route.
# WITHDRAW_MS: from the start to the router's route without it.
withdraw() {
	local i=$1 t0 t
	t0=$(failover_now_us)
	standby "$i"
	case $BASE/$MANUAL in
	bgp/1) failover_bird_announce "$P" "$i" off ;;
	bgp/0) ;;
	*) failover_aa_withdraw "$P" "$i" || exit 1 ;;
	esac
	failover_await_nexthops "$P" 2 20 || fail "node $i's next hop is still on the router"
	t=$(failover_first_event_after "$P" "$t0" route-add dst="$TOPO_VIP4") ||
		fail "the route monitor saw no change of the VIP route"
	WITHDRAW_MS=$(failover_ms_since "$t0" "$t")
}

# kill_node I: node I withdrawn, then killed; every connection answered
# after each; then the others' corosync sees it gone (a restart before that
# would be no rejoin: totem would merge it back as if it never left).
kill_node() {
	local t0 j
	t0=$(failover_now_us)
	withdraw "$1"
	settle "$t0" "node $1's withdrawal"
	t0=$(failover_now_us)
	failover_node_kill9 "$P" "$1"
	settle "$t0" "node $1's death"
	for j in 1 2 3; do
		[ "$j" = "$1" ] || ! _cluster_pid "$P" "corosync-n$j" >/dev/null ||
			cluster_await_members "$P" "$j" 2 || fail "node $j still sees node $1"
	done
	[ "$BASE" = aa-reshuffle-nosync ] || await_synced_everywhere "node $1 killed"
	step "node $1 withdrawn (the router's route changed $WITHDRAW_MS ms after) and killed"
}

# rejoin: node 3 back (empty, resynced), active, its next hop back; then
# node 1 withdrawn and killed. REJOIN_MS: from node 3's restart to the
# router's route through it.
rejoin() {
	local t0 t
	t0=$(failover_now_us)
	node_start 3
	cluster_await_synced "$P" 3 || fail "node 3's syncd is not synced after its restart"
	await_synced_everywhere "node 3 restarted"
	[ "$MANUAL" = 1 ] || failover_await_cluster "$P" 3 '.eligible == true and .role == "active"' ||
		fail "node 3 is not active again: $(cluster_state 3)"
	announce 3 || exit 1
	failover_await_nexthops "$P" 3 20 || fail "node 3's next hop is not back on the router"
	t=$(failover_first_event_after "$P" "$t0" route-add dst="$TOPO_VIP4" \
		via="$(failover_nexthops "$P" | paste -sd,)") ||
		fail "the route monitor saw no route through the 3 nodes"
	REJOIN_MS=$(failover_ms_since "$t0" "$t")
	settle "$t" "node 3's return"
	step "node 3 back on the router's route $REJOIN_MS ms after its restart"
	kill_node 1
}

scenario_aa() {
	local broke json
	aa_start
	add_backend4
	kill_node 3
	[ "$BASE" = rejoin ] && rejoin
	stop_hold
	json=$dir/held.json
	case $BASE in
	aa-reshuffle-nosync)
		report "$json" "$WITHDRAW_MS"
		broke=$(jq '.conns - .alive' "$json")
		step "$broke of $((CONNS + CONNS6)) connections broke without syncd"
		[ "$broke" -gt 0 ] || fail "no connection broke without syncd: the scenario proves nothing"
		;;
	rejoin) report "$json" "$REJOIN_MS" || exit 1 ;;
	*) report "$json" "$WITHDRAW_MS" || exit 1 ;;
	esac
}

# ------------------------------------------------- active-active with BFD

# stream_start: new connections opened all along, until stream_stop: every
# 100 ms an lbclient of 2 connections (one round, 5 s at most: a SYN lost to
# a dead node is sent again after 1 s), to the IPv4 and the IPv6 VIP in
# turn, each in the background so that one waiting does not delay the next.
stream_start() {
	rm -rf "$dir/stream" "$dir/stream.stop"
	mkdir "$dir/stream"
	stream_loop &
	STREAM_PID=$!
}

stream_loop() {
	local k=0 vip
	while [ ! -e "$dir/stream.stop" ]; do
		vip=$TOPO_VIP4
		((k % 2 == 0)) || vip=$TOPO_VIP6
		run_in "${P}c" "$LBTOOLS/lbclient" --connect "$vip" "$TOPO_PORT" --conns 2 --rounds 1 \
			--timeout-s 5 --json >"$dir/stream/$k.json" 2>/dev/null &
		k=$((k + 1))
		sleep 0.1
	done
	wait
}

# stream_stop: the stream ended, every client awaited; STREAM_SUMMARY says
# how many connections were opened and how many failed (by error).
stream_stop() {
	: >"$dir/stream.stop"
	wait "$STREAM_PID" 2>/dev/null
	STREAM_PID=""
	STREAM_SUMMARY=$(cat "$dir"/stream/*.json | jq -rs '"\(map(.conns) | add) new connections" +
		" in \(length) clients, \(map(.failed + .backend_changed) | add) failed" +
		" (errors \(map(.errors | to_entries[] | select(.value > 0)) | group_by(.key) |
			map("\(.[0].key) \(map(.value) | add)") | join(", ") | if . == "" then "none" else . end))"')
}

# route_without_us I T_US: the later of the first route events after T_US
# of the two VIP routes without node I's next hop.
route_without_us() {
	local t4 t6
	t4=$(failover_first_route_without "$P" "$2" "$TOPO_VIP4" "$(cluster_node_addr4 "$1")") &&
		t6=$(failover_first_route_without "$P" "$2" "$TOPO_VIP6" "$(cluster_node_addr6 "$1")") ||
		return 1
	echo $((t4 > t6 ? t4 : t6))
}

_route_without() { route_without_us "$@" >/dev/null; }

# bfd_changes I: the state changes of node I's dataplane's BFD sessions,
# summed.
bfd_changes() {
	cluster_ctl "$P" "$1" --json bfd | jq -e '[.sessions[].state_changes] | add'
}

# bfd_states: every node's sessions ("nI PEER STATE changes=C") and the
# router's bird's, for reports and failures.
bfd_states() {
	local i pid
	for i in 1 2 3; do
		pid=$(_cluster_pid "$P" "dataplane-n$i") || continue
		# a stopped dataplane would leave maglbctl waiting
		[ "$pid" != "$HUNG_PID" ] || { echo "n$i stopped"; continue; }
		cluster_ctl "$P" "$i" --json bfd 2>/dev/null | jq -r --arg n "n$i" \
			'"\($n) serving=\(.serving) " + ([.sessions[] |
				"\(.peer) \(.state) changes=\(.state_changes)"] | join(", "))'
	done
	failover_bfd_sessions "$P" 2>&1 | awk '$1 ~ /^[0-9a-f.:]+$/ { print "bird", $1, $3, "since", $4 }'
}

# bgp_routes: the router's bird's VIP routes learnt by BGP, one
# "PROTOCOL>NEXT_HOP" a route.
bgp_routes() {
	local vip
	for vip in "$FAILOVER_VIP_ROUTE4" "$FAILOVER_VIP_ROUTE6"; do
		birdc -s "$(_failover_bird_router_socket "$P")" show route "$vip" all
	done | awk '/ unicast \[/ { sub(/^.*unicast \[/, ""); proto = $1 }
		$1 == "via" { via = $2 } $1 == "Type:" && $2 == "BGP" { print proto ">" via }'
}

# kill_3: node 3 fails as the scenario says; FAIL_US, the start of it.
kill_3() {
	local ns
	ns=$(cluster_ns "$P" 3)
	FAIL_US=$(failover_now_us)
	case $BASE in
	aa-node-death | aa-bgp-node-death)
		# as a machine dies: its links go first (its kernel sends no FIN,
		# RST or ARP reply after), then every process at once
		if ! ip -n "$ns" link set dev lb0 down || ! ip -n "$ns" link set dev ring0 down; then
			fail "cannot take node 3's links down"
		fi
		failover_node_kill9 "$P" 3
		;;
	aa-dataplane-death) cluster_dataplane_kill9 "$P" 3 ;;
	aa-hung-dataplane)
		HUNG_PID=$(_cluster_pid "$P" dataplane-n3) || fail "node 3's dataplane has no pid"
		kill -STOP "$HUNG_PID"
		;;
	aa-syncd-death) cluster_syncd_kill9 "$P" 3 ;;
	esac
}

# await_without_3 T_US BOUND_TEXT: the router's VIP routes without node 3
# after T_US, awaited; TAKEOVER_MS, from T_US to them.
await_without_3() {
	await_cond 10 _route_without 3 "$1" ||
		fail "the router's VIP routes still go through node 3: $(failover_nexthops "$P" | paste -sd,)" \
			"$(failover_nexthops "$P" 6 | paste -sd,); BFD: $(bfd_states | paste -sd';')"
	TAKEOVER_MS=$(failover_ms_since "$1" "$(route_without_us 3 "$1")")
	step "the router's VIP routes without node 3 $TAKEOVER_MS ms after $BASE (bound $2)"
}

# bfd_finish BOUND_MS: the sessions printed, the held connections stopped
# and reported; fails unless every one survived and TAKEOVER_MS <= BOUND_MS.
bfd_finish() {
	step "BFD after: $(bfd_states | paste -sd';')"
	stop_hold
	report "$dir/held.json" "$TAKEOVER_MS" || exit 1
	((TAKEOVER_MS <= $1)) ||
		fail "the router's route lost node 3 after $TAKEOVER_MS ms, over $1 ms"
}

# aa-node-death, aa-dataplane-death, aa-hung-dataplane, aa-syncd-death:
# node 3 (or a daemon of it) fails under the held connections and a stream
# of new ones; the router's bird drops its next hop when its BFD sessions
# go Down (silence: detection time; syncd's death: the serving lease ends,
# then the dataplane says Down), and every connection lives on nodes 1
# and 2 (their entries synced from node 3).
scenario_aa_bfd() {
	local bound=$BFD_BOUND_MS lease_ms="" f
	aa_start
	if [ "$BASE" = aa-syncd-death ]; then
		lease_ms=$(failover_cluster_value "$P" 3 .lease_ms) || exit 1
		bound=$((lease_ms + BFD_BOUND_MS))
	fi
	step "BFD ${BFD_INTERVAL_MS} ms x $BFD_MULT: $(bfd_states | paste -sd';')"
	if [ "$BGP" = 1 ]; then
		failover_bird_await_sessions "$P" 6 ||
			fail "the router has not 6 BGP sessions: $(birdc -s "$(_failover_bird_router_socket "$P")" show protocols)"
		[ "$(bgp_routes | wc -l)" = 6 ] ||
			fail "the router has not 6 VIP routes by BGP (3 nodes, v4 and v6): $(bgp_routes | paste -sd' ')"
		step "the router's VIP routes by BGP: $(bgp_routes | paste -sd' ')"
	fi
	stream_start
	sleep 0.5
	kill_3
	await_without_3 "$FAIL_US" "${bound} ms${lease_ms:+, lease $lease_ms ms}"
	# BFD, not BGP, took node 3 out: its sessions last until the hold time
	[ "$BGP" = 0 ] || _failover_bird_sessions_are "$P" 6 ||
		fail "node 3's BGP sessions went before its routes did: not BFD's doing"
	for f in 4 6; do
		failover_await_nexthops "$P" 2 10 "$f" ||
			fail "the router's IPv$f VIP route has not 2 next hops: $(failover_nexthops "$P" "$f" |
				paste -sd,)"
	done
	settle "$FAIL_US" "node 3's failure"
	# the stream goes on past a SYN sent again (1 s) after the change
	sleep 1.5
	stream_stop
	step "from 0.5 s before the failure to 1.5 s after every connection answered: $STREAM_SUMMARY"
	bfd_finish "$bound"
}

# down_for_service I: node I's dataplane's sessions all Down with diag
# Concatenated Path Down (it should get no traffic), and bird's with it not
# Up: Down, or Init once it heard the node's Down again (RFC 5880 6.8.6),
# where it stays while the node keeps saying Down.
down_for_service() {
	cluster_ctl "$P" "$1" --json bfd | jq -e '.serving == false and ([.sessions[] |
		select(.state == "Down" and .local_diag == "concat-path-down")] | length) == 2' \
		>/dev/null &&
		[ "$(failover_bfd_sessions "$P" | awk -v a="$(cluster_node_addr4 "$1")" \
			-v b="$(cluster_node_addr6 "$1")" '($1 == a || $1 == b) && $3 != "Up"' | wc -l)" = 2 ]
}

# aa-standby, aa-quorum, aa-corosync: node 3 taken out of service while it
# runs (standby; its ring link cut: no quorum; its corosync killed: syncd
# loses votequorum, no quorum); its dataplane's sessions go Down, with diag
# Concatenated Path Down, and the router's routes lose it; then back in
# (standby off; healed, or corosync started again: resynced, active again),
# its sessions Up and its next hop back. Every connection survives.
scenario_aa_out() {
	local bound t0 t f
	aa_start
	step "BFD ${BFD_INTERVAL_MS} ms x $BFD_MULT: $(bfd_states | paste -sd';')"
	stream_start
	sleep 0.5
	t0=$(failover_now_us)
	case $BASE in
	aa-standby)
		bound=$STANDBY_BOUND_MS
		standby 3
		;;
	aa-quorum)
		bound=$AP_NODE_BOUND_MS
		cluster_ring_link "$P" 3 down || fail "cannot cut node 3's ring link"
		;;
	aa-corosync)
		bound=$STANDBY_BOUND_MS
		cluster_corosync_kill9 "$P" 3
		;;
	esac
	await_without_3 "$t0" "$bound ms"
	await_cond 5 down_for_service 3 ||
		fail "node 3's sessions are not Down for service: $(bfd_states | paste -sd';')"
	step "BFD out of service: $(bfd_states | paste -sd';')"
	settle "$t0" "node 3 out of service"
	t0=$(failover_now_us)
	case $BASE in
	aa-standby)
		cluster_syncd_ctl "$P" 3 cluster standby off >/dev/null || fail "cluster standby off node 3 refused"
		;;
	aa-quorum)
		cluster_ring_link "$P" 3 up || fail "cannot heal node 3's ring link"
		;;
	aa-corosync)
		cluster_corosync_start "$P" 3 || fail "node 3's corosync did not start again"
		;;
	esac
	await_role 3 active
	for f in 4 6; do
		failover_await_nexthops "$P" 3 20 "$f" ||
			fail "node 3's IPv$f next hop is not back: $(bfd_states | paste -sd';')"
	done
	t=$(failover_first_event_after "$P" "$t0" route-add dst="$TOPO_VIP4" \
		via="$(failover_nexthops "$P" | paste -sd,)") ||
		fail "the route monitor saw no route through the 3 nodes"
	step "node 3 back on the router's route $(failover_ms_since "$t0" "$t") ms after"
	settle "$t0" "node 3's return"
	sleep 1.5
	stream_stop
	step "from 0.5 s before node 3 went out to 1.5 s after its return: $STREAM_SUMMARY"
	bfd_finish "$bound"
}

# load_start: both cores kept busy, a yes(1) pinned to each, besides the
# held connections and the stream.
load_start() {
	local cpu
	for cpu in $(seq 0 $(($(nproc) - 1))); do
		taskset -c "$cpu" yes >/dev/null &
		LOAD_PIDS+=" $!"
	done
}

load_stop() {
	# shellcheck disable=SC2086 # several pids
	kill $LOAD_PIDS 2>/dev/null
	# shellcheck disable=SC2086
	wait $LOAD_PIDS 2>/dev/null
	LOAD_PIDS=""
}

# route_events T_US: how many route events of the VIP routes after T_US.
route_events() {
	failover_events "$P" | awk -v t="$1" '{ split($1, s, "=") }
		s[2] + 0 > t + 0 && $2 ~ /^kind=route-/' | wc -l
}

# bird_sessions_same BEFORE AFTER: BIRD's `show bfd sessions` lists the same
# six sessions, all Up, each changed state last at the same time. BIRD prints
# that time converted from its monotonic clock afresh, so it may move by a
# millisecond; a flap moves it by at least a detection time.
BIRD_SINCE_SLACK_MS=50
bird_sessions_same() {
	awk -v slack="$BIRD_SINCE_SLACK_MS" '
		function ms(t, a) { split(t, a, ":"); return ((a[1] * 60 + a[2]) * 60 + a[3]) * 1000 }
		FNR == 1 { f++ }
		$3 != "Up" { bad = 1 }
		f == 1 { since[$1] = ms($4); n++ }
		f == 2 { m++; d = ms($4) - since[$1]
			if (!($1 in since) || d > slack || d < -slack) bad = 1 }
		END { exit !(n == 6 && m == 6 && !bad) }' <(printf '%s\n' "$1") <(printf '%s\n' "$2")
}

# aa-flap: the trio under load (the held connections, the stream, both
# cores busy) for FLAP_WATCH_S: no BFD session goes down, on either side.
scenario_aa_flap() {
	local t0 i before=() after changes=0 events bird0 bird1 errors=()
	aa_start
	bird0=$(failover_bfd_sessions "$P" | grep -E '^[0-9a-f.:]+ ')
	for i in 1 2 3; do
		before[i]=$(bfd_changes "$i") || fail "maglbctl bfd on node $i: $(cluster_ctl "$P" "$i" bfd 2>&1)"
	done
	step "BFD ${BFD_INTERVAL_MS} ms x $BFD_MULT: $(bfd_states | paste -sd';')"
	t0=$(failover_now_us)
	load_start
	stream_start
	sleep "$FLAP_WATCH_S"
	stream_stop
	load_stop
	settle "$t0" "the load"
	for i in 1 2 3; do
		after=$(bfd_changes "$i") || fail "maglbctl bfd on node $i"
		changes=$((changes + after - before[i]))
		((after == before[i])) ||
			errors+=("node $i's BFD sessions changed state $((after - before[i])) times")
	done
	bird1=$(failover_bfd_sessions "$P" | grep -E '^[0-9a-f.:]+ ')
	bird_sessions_same "$bird0" "$bird1" ||
		errors+=("bird's sessions changed: before $(paste -sd';' <<<"$bird0"), after $(paste -sd';' <<<"$bird1")")
	events=$(route_events "$t0")
	[ "$events" -eq 0 ] || errors+=("$events route events of the VIP routes: $(failover_events "$P" |
		awk -v t="$t0" '{ split($1, s, "=") } s[2] + 0 > t + 0 && $2 ~ /^kind=route-/' | head -n 6 |
		paste -sd';')")
	step "${FLAP_WATCH_S} s under load: $changes BFD state changes on the nodes, $events route" \
		"events, bird's sessions $(bird_sessions_same "$bird0" "$bird1" && echo unchanged ||
			echo changed); $STREAM_SUMMARY"
	step "BFD after: $(bfd_states | paste -sd';')"
	stop_hold
	report "$dir/held.json" none || errors+=("connections were lost")
	[ ${#errors[@]} -eq 0 ] || fail "$(printf '%s; ' "${errors[@]}")"
}

# ------------------------------------------------------- backend down

B2_ADDRS=("$(topo_backend_addr4 l2 2)" "$(topo_backend_addr6 l2 2)")

# node_says I STATE ADDR...: node I's dataplane has each backend ADDR in
# STATE.
node_says() {
	local i=$1 state=$2
	shift 2
	cluster_ctl "$P" "$i" --json backends | jq -e --arg s "$state" --args \
		'[.backends[] | select(.address == ($ARGS.positional[])) | .state] |
		 length == ($ARGS.positional | length) and all(. == $s)' "$@" >/dev/null
}

# every_node_says STATE ADDR...: node_says on every node, the three asked at
# once (this is polled while timed: one maglbctl's time a round, not three).
every_node_says() {
	local i pids=() ok=0
	for i in 1 2 3; do
		node_says "$i" "$@" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || ok=1
	done
	return $ok
}

# maglev_digests: `sync verify` (from node 1) agrees on every member's
# entries and Maglev tables; prints their one Maglev digest. The JSON is
# left in $dir/verify.json.
maglev_digests() {
	cluster_syncd_ctl "$P" 1 --json sync verify >"$dir/verify.json" 2>&1 &&
		jq -er '[.groups[].digests[].maglev_digest] | unique |
			if length == 1 then .[0] else error("differ") end' "$dir/verify.json"
}

maglev_changed_from() {
	local now
	now=$(maglev_digests 2>/dev/null) && [ "$now" != "$1" ]
}

scenario_backend_down() {
	local t0 agree_ms i b others all=$((CONNS + CONNS6)) maglev_before
	# dp.sh's config writer adds it to every config written from now on.
	CONF_EXTRA="health = { type = \"tcp\"; interval_ms = $HEALTH_INTERVAL_MS; timeout_ms = 100;
  rise = 2; fall = $HEALTH_FALL; };"
	aa_start
	for b in 1 2 3; do
		await_cond 10 every_node_says up "$(topo_backend_addr4 l2 "$b")" \
			"$(topo_backend_addr6 l2 "$b")" || fail "backend b$b is not up on every node"
	done
	maglev_before=$(maglev_digests) || fail "sync verify before b2's end: $(cat "$dir/verify.json")"
	t0=$(failover_now_us)
	stop_tool "$P" lbserver-b2
	if [ "$MANUAL" = 1 ]; then
		for i in 1 2 3; do
			if ! cluster_ctl "$P" "$i" backend down web "${B2_ADDRS[0]}" ||
				! cluster_ctl "$P" "$i" backend down "$FAILOVER_VIP6_NAME" "${B2_ADDRS[1]}"; then
				fail "backend down on node $i refused"
			fi
		done
	fi
	await_cond 10 every_node_says down "${B2_ADDRS[@]}" || fail "not every node has b2 down"
	agree_ms=$(failover_ms_since "$t0" "$(failover_now_us)")
	step "every node has b2 down $agree_ms ms after its server stopped"
	# the same backends down everywhere: byte-identical Maglev tables, and
	# not the ones of before
	await_cond 10 maglev_changed_from "$maglev_before" ||
		fail "Maglev digests after b2's end: $(cat "$dir/verify.json") (before: $maglev_before)"
	settle "$t0" "b2's end"
	run_in "${P}c" "$LBTOOLS/lbclient" --connect "$TOPO_VIP4" "$TOPO_PORT" --conns 60 --json \
		>"$dir/new.json" 2>"$dir/new.err"
	clients_ok "$dir/new.json" || fail "new connections after b2's end failed"
	[ "$(served_by "$dir/new.json" b2)" = 0 ] || fail "new connections went to b2"
	stop_hold
	# The line counts the connections on the other backends only.
	jq '[.per_backend | to_entries[] | select(.key != "b2") | .value] |
		{conns: (map(.conns) | add), alive: (map(.alive) | add), max_gap_ms: (map(.max_gap_ms) | max)}' \
		"$dir/held.json" >"$dir/others.json"
	report "$dir/others.json" "$agree_ms" || exit 1
	others=$(jq .conns "$dir/others.json")
	if [ "$others" -eq 0 ] || [ "$others" -eq "$all" ]; then
		fail "b2 served $((all - others)) of $all: nothing to tell apart"
	fi
	[ "$MANUAL" = 1 ] || [ "$agree_ms" -le "$HEALTH_BOUND_MS" ] ||
		fail "the nodes agreed after $agree_ms ms, over $HEALTH_BOUND_MS ms"
}

case $BASE in
ap-dataplane | ap-node) scenario_ap ;;
ap-hung-dataplane) scenario_ap_hung ;;
ap-syncd) scenario_ap_syncd ;;
ap-quorum) scenario_ap_quorum ;;
ap-corosync) scenario_ap_corosync ;;
ap-split-qdevice) scenario_ap_split_qdevice ;;
ap-split-two-node) scenario_ap_split_two_node ;;
aa-reshuffle | aa-reshuffle-nosync | rejoin | bgp) scenario_aa ;;
aa-node-death | aa-bgp-node-death | aa-dataplane-death | aa-hung-dataplane | aa-syncd-death)
	scenario_aa_bfd
	;;
aa-standby | aa-quorum | aa-corosync) scenario_aa_out ;;
aa-flap) scenario_aa_flap ;;
backend-down) scenario_backend_down ;;
esac
