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
# Every scenario but aa-reshuffle-nosync needs syncd's membership (roles,
# VIP ownership, standby, hooks, agreed health): where `maglbctl cluster` is
# not supported it fails, saying so. SCENARIO-manual runs the same steps with
# an operator's hand instead of the membership (vip own --announce on the
# passive after the kill, no standby, the test's own next hop or bird route
# changes, backend down on every node): where a scenario fails, it tells the
# membership's part from the tools', the topology's and the flow sync's.
# ap-hung-dataplane, ap-syncd and ap-quorum test the membership's own rules
# and have no -manual.
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
	log "       check_failover.sh ap-hung-dataplane|ap-syncd|ap-quorum"
	exit 2
}
case $BASE in
ap-dataplane | ap-node | aa-reshuffle | aa-reshuffle-nosync | rejoin | backend-down | bgp) ;;
ap-hung-dataplane | ap-syncd | ap-quorum) [ "$MANUAL" = 0 ] || usage ;;
*) usage ;;
esac

P=${MAGLB_E2E_PREFIX:-e2efo-}
CONNS=${FAILOVER_CONNS:-200}
CONNS6=${FAILOVER_CONNS6:-100}
HOLDS=()        # the lbhold sets running: h (IPv4), h6 (IPv6)
HUNG_PID=""     # a dataplane stopped (SIGSTOP): continued on exit
SAMPLER_PID=""  # a background poll of `maglbctl cluster`: ended on exit
AP_DATAPLANE_BOUND_MS=200
AP_NODE_BOUND_MS=$((CLUSTER_TOKEN_MS + CLUSTER_TOKEN_MS * 12 / 10 + 200))
HEALTH_INTERVAL_MS=200
HEALTH_FALL=2
# fall x interval, one interval (the nodes' probes are not in step), then
# 150 ms for the CPG round and this test's polling (three maglbctl calls,
# then 50 ms of sleep, a round).
HEALTH_BOUND_MS=$((HEALTH_FALL * HEALTH_INTERVAL_MS + HEALTH_INTERVAL_MS + 150))

dir=$(mktemp -d)
undo() {
	[ -z "$HUNG_PID" ] || kill -CONT "$HUNG_PID" 2>/dev/null
	[ -z "$SAMPLER_PID" ] || kill "$SAMPLER_PID" 2>/dev/null
}
cluster_on_exit "$P" "$dir" undo

fail() { log "$SCENARIO: $*"; exit 1; }
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
# with bgp, its bird first, and the bird2 hook's environment for its syncd.
node_start() {
	local i=$1
	if [ "$BASE" != bgp ]; then
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
# operator's bird routes (bgp-manual), or nothing (bgp: syncd's hook).
announce() {
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
	for ((i = 1; i <= n; i++)); do
		cluster_corosync_start "$P" "$i" || exit 1
		failover_config "$P" "$i" "$dir/n$i.conf" "$keys" "$@" || exit 1
	done
	for ((i = 1; i <= n; i++)); do
		cluster_await_members "$P" "$i" "$n" || exit 1
	done
	[ "$BASE" != bgp ] || failover_bird_router_start "$P" || exit 1
	for ((i = 1; i <= n; i++)); do
		node_start "$i"
	done
	for ((i = 1; i <= n; i++)); do
		cluster_await_synced "$P" "$i" || fail "node $i's syncd is not synced"
	done
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

# ------------------------------------------------------- active-active

CLUSTER_KEYS='mode = "active-active";'

# aa_start: three active nodes behind the router's ECMP route, connections
# held and their entries everywhere (aa-reshuffle-nosync: syncd stopped
# first).
aa_start() {
	local i
	if [ "$BASE" = bgp ] && [ "$MANUAL" = 0 ]; then
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
		fail "the router's VIP routes are not through the 3 nodes"
	fi
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

# ------------------------------------------------------- backend down

B2_ADDRS=("$(topo_backend_addr4 l2 2)" "$(topo_backend_addr6 l2 2)")

# every_node_says STATE ADDR...: every node's dataplane has each backend
# ADDR in STATE (one maglbctl a node: this is polled while timed).
every_node_says() {
	local state=$1 i
	shift
	for i in 1 2 3; do
		cluster_ctl "$P" "$i" --json backends | jq -e --arg s "$state" --args \
			'[.backends[] | select(.address == ($ARGS.positional[])) | .state] |
			 length == ($ARGS.positional | length) and all(. == $s)' "$@" >/dev/null || return 1
	done
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
aa-reshuffle | aa-reshuffle-nosync | rejoin | bgp) scenario_aa ;;
backend-down) scenario_backend_down ;;
esac
