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
#   backend-down   active-active trio with TCP health checks (200 ms, fall 2):
#                  backend b2's server stopped under traffic; every node
#                  marks it down within fall x interval + one interval + one
#                  CPG round (T; 150 ms allowed for the round and polling),
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
#
# Cleans up on exit, leftovers of its prefix first (MAGLB_E2E_PREFIX).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/failover.sh

SCENARIO=${1:-}
BASE=${SCENARIO%-manual}
MANUAL=0
[ "$BASE" = "$SCENARIO" ] || MANUAL=1
case $BASE in
ap-dataplane | ap-node | aa-reshuffle | aa-reshuffle-nosync | rejoin | backend-down | bgp) ;;
*)
	log "usage: check_failover.sh ap-dataplane|ap-node|aa-reshuffle|aa-reshuffle-nosync|rejoin|backend-down|bgp[-manual]"
	exit 2
	;;
esac

P=${MAGLB_E2E_PREFIX:-e2efo-}
CONNS=${FAILOVER_CONNS:-200}
CONNS6=${FAILOVER_CONNS6:-100}
HOLDS=()        # the lbhold sets running: h (IPv4), h6 (IPv6)
AP_DATAPLANE_BOUND_MS=200
AP_NODE_BOUND_MS=$((CLUSTER_TOKEN_MS + CLUSTER_TOKEN_MS * 12 / 10 + 200))
HEALTH_INTERVAL_MS=200
HEALTH_FALL=2
# fall x interval, one interval (the nodes' probes are not in step), then
# 150 ms for the CPG round and this test's polling (three maglbctl calls,
# then 50 ms of sleep, a round).
HEALTH_BOUND_MS=$((HEALTH_FALL * HEALTH_INTERVAL_MS + HEALTH_INTERVAL_MS + 150))

dir=$(mktemp -d)
finish() {
	local rc=$?
	[ "$rc" -eq 0 ] || cluster_logs "$P"
	cluster_teardown "$P"
	rm -rf "$dir"
	exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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

scenario_ap() {
	local kill_us garp_us na_us takeover_ms bound=$AP_DATAPLANE_BOUND_MS
	local mac1 mac2
	[ "$BASE" = ap-node ] && bound=$AP_NODE_BOUND_MS
	mac1=$(cluster_node_mac 1) mac2=$(cluster_node_mac 2)
	# preempt: node 1, of the higher priority, is active whichever node's
	# syncd became eligible first.
	nodes 2 'mode = "active-passive"; preempt = true;'
	need_membership
	failover_ap_route "$P" || exit 1
	if [ "$MANUAL" = 1 ]; then
		own_by_hand 1
	else
		await_role 1 active
		await_role 2 passive
	fi
	failover_watch_start "$P" || exit 1
	hold
	[ "$(router_neighbours)" = "$mac1 $mac1" ] ||
		fail "the router reaches the VIPs at '$(router_neighbours)', not node 1's $mac1"
	await_cond 10 held_recorded || fail "node 1 made $(wc -l <"$dir/held.flows") entries"
	await_synced_everywhere "before the kill" || exit 1
	kill_us=$(failover_now_us)
	if [ "$BASE" = ap-node ]; then
		failover_node_kill9 "$P" 1
	else
		cluster_dataplane_kill9 "$P" 1
	fi
	[ "$MANUAL" = 0 ] || own_by_hand 2
	garp_us=$(failover_await_event "$P" "$kill_us" garp ip="$TOPO_VIP4" mac="$mac2") ||
		fail "no gratuitous ARP from node 2 after the kill"
	na_us=$(failover_await_event "$P" "$kill_us" na ip="$TOPO_VIP6" mac="$mac2") ||
		fail "no unsolicited neighbour advertisement from node 2 after the kill"
	((na_us > garp_us)) && garp_us=$na_us
	takeover_ms=$(failover_ms_since "$kill_us" "$garp_us")
	settle "$kill_us" "the takeover"
	[ "$(router_neighbours)" = "$mac2 $mac2" ] ||
		fail "the router reaches the VIPs at '$(router_neighbours)', not node 2's $mac2"
	[ "$MANUAL" = 1 ] || await_role 2 active
	stop_hold
	report "$dir/held.json" "$takeover_ms" || exit 1
	[ "$MANUAL" = 1 ] || [ "$takeover_ms" -le "$bound" ] ||
		fail "takeover took $takeover_ms ms, over $bound ms"
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

scenario_backend_down() {
	local t0 agree_ms i b others all=$((CONNS + CONNS6))
	# dp.sh's config writer adds it to every config written from now on.
	CONF_EXTRA="health = { type = \"tcp\"; interval_ms = $HEALTH_INTERVAL_MS; timeout_ms = 100;
  rise = 2; fall = $HEALTH_FALL; };"
	aa_start
	for b in 1 2 3; do
		await_cond 10 every_node_says up "$(topo_backend_addr4 l2 "$b")" \
			"$(topo_backend_addr6 l2 "$b")" || fail "backend b$b is not up on every node"
	done
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
aa-reshuffle | aa-reshuffle-nosync | rejoin | bgp) scenario_aa ;;
backend-down) scenario_backend_down ;;
esac
