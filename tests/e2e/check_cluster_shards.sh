#!/usr/bin/env bash
# Sync shards, a cluster test (cluster.sh): three nodes, two sync groups
# (vips[].sync_group).
# VIP A ("web", 198.18.1.1) is in group ga on every node; VIP B ("web2",
# 198.18.1.2) is in group gb on nodes 1 and 2 only: node 3's config lacks it.
# Real TCP to both VIPs goes through node 1, held open.
#  a. shards: nodes 1 and 2 hold both groups' entries, flow by flow; node 3
#     holds ga's and none of gb's, is in no CPG group gb, has no group gb in
#     syncd and has received and refused nothing of it;
#  b. resync per group: node 2's syncd stopped (its cache lost) and started
#     while node 1's syncd, the donor, is paused: each of node 2's groups
#     asks a member of its own group (node 1, the lowest other one; node 3
#     serves nothing); once node 1 goes on, node 2 holds each group's
#     entries again, as many as node 1, each from one complete resync;
#  c. `sync verify ga` agrees on every node, `sync verify gb` on nodes 1 and
#     2 with exactly those two members, entries and Maglev digests alike
#     (VIP A's table is the same everywhere); node 3 says it has no group
#     gb.
# Cleans up on exit, leftovers of its prefix first (cluster_setup).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/cluster.sh

P=${MAGLB_E2E_PREFIX:-e2esh-}
VIP_A=$TOPO_VIP4
VIP_B=198.18.1.2
CONNS_A=150             # unequal, so that a count from the wrong group shows
CONNS_B=90

dir=$(mktemp -d)
E2E_PASSED=0 E2E_FAILED=0
cluster_on_exit "$P" "$dir"
t_start=$SECONDS

# node_config I: node I's maglb.conf, VIP B only on nodes 1 and 2.
node_config() {
	local i=$1 b=""
	[ "$i" = 3 ] || b="{ name = \"web2\"; address = \"$VIP_B\"; port = $TOPO_PORT; protocol = \"tcp\";
    encap = \"l2\"; sync_group = \"gb\"; backends = ( $(dp_l2_backends 1 2 3) ); }"
	VIP_EXTRA='sync_group = "ga";' VIPS_EXTRA=$b cluster_config "$P" "$i" "$dir/n$i.conf"
}

# ------------------------------------------------------------- syncd's view
sync_json() { cluster_sync_json "$P" "$1" 2>/dev/null; }
# gv I GROUP KEY: one key of GROUP's object in node I's `sync --json`;
# fails when syncd does not answer or has no such group.
gv() {
	sync_json "$1" | jq -er --arg g "$2" --arg k "$3" '.groups[] | select(.name == $g) | .[$k]'
}
group_entries() {
	sync_json "$1" | jq -er --arg g "$2" '.groups[] | select(.name == $g) | .entries_own + .entries_peers'
}
groups_of() { sync_json "$1" | jq -r '[.groups[].name] | sort | join(" ")'; }
members_of() {
	sync_json "$1" | jq -er --arg g "$2" '.groups[] | select(.name == $g) | .members | sort | map(tostring) | join(" ")'
}
members_are() { [ "$(members_of "$1" "$2")" = "$3" ]; }   # I GROUP "IDS"
gv_is() { [ "$(gv "$1" "$2" "$3")" = "$4" ]; }           # I GROUP KEY VALUE
entries_are() { [ "$(group_entries "$1" "$2")" = "$3" ]; } # I GROUP N
gcounter() { cluster_syncd_counter "$P" "$1" "group:$2" "$3"; }
# scope_count I SCOPE: how many counters node I's syncd has in SCOPE.
scope_count() {
	cluster_syncd_ctl "$P" "$1" --json counters "$2" |
		jq -r --arg s "$2" '[.counters[] | select(.scope == $s)] | length'
}
# cpg_nodes I GROUP: the node ids of CPG group GROUP, as node I's corosync
# lists it, sorted, on one line (CPG's own view, not syncd's).
cpg_nodes() {
	cluster_run "$P" "$1" corosync-cpgtool -d ' ' 2>/dev/null |
		awk -v g="$2" 'NR > 1 && $1 == g { print $NF }' | sort -n | paste -sd ' '
}
received_same() { [ "$(gcounter 2 ga entries_received)" = "$(gcounter 3 ga entries_received)" ]; }

# ------------------------------------------------------------- dataplanes
# flows_of I own|peer VIP: node I's dataplane's entries of VIP, sorted.
flows_of() { cluster_flows "$P" "$1" "$2" | awk -v v="$3" '$2 == v' | sort; }
# peer_is I VIP FILE: node I's synced table holds exactly the flows of
# FILE for VIP, each to its backend.
peer_is() { diff -q "$3" <(flows_of "$1" peer "$2") >/dev/null; }

# ------------------------------------------------------------- clients
# held NAME VIP N: N connections to VIP through node 1, held open after
# their first round; returns once all are held.
declare -A held_pid=()
held() {
	local name=$1 vip=$2 n=$3
	run_in "${P}c" "$LBTOOLS/lbclient" --connect "$vip" "$TOPO_PORT" --json --conns "$n" \
		--rounds 2 --hold-file "$dir/$name.go" --held-file "$dir/$name.held" --timeout-s 240 \
		>"$dir/$name.json" 2>"$dir/$name.err" &
	held_pid[$name]=$!
	await_cond 60 test -e "$dir/$name.held"
}
release() {
	touch "$dir/$1.go"
	wait "${held_pid[$1]}" && clients_ok "$dir/$1.json"
}
own_is() { [ "$(flows_of 1 own "$1" | wc -l)" -eq "$2" ]; }   # VIP N

verify() {   # I GROUP: sync verify GROUP from node I, JSON to verify-I-GROUP.json
	cluster_syncd_ctl "$P" "$1" --json sync verify "$2" >"$dir/verify-$1-$2.json" 2>&1 && return 0
	log "verify $2 on node $1: $(cat "$dir/verify-$1-$2.json")"
	return 1
}
# verified I GROUP "IDS" N: node I's last verify of GROUP had answers from
# exactly the nodes IDS, each with N entries and the same entry digest.
verified() {
	jq -e --arg g "$2" --arg ids "$3" --argjson n "$4" '.groups[] | select(.group == $g) |
		([.digests[].node] | sort | map(tostring) | join(" ")) == $ids and
		all(.digests[]; .entries == $n and .agrees)' "$dir/verify-$1-$2.json" >/dev/null
}
# maglev_agreed I GROUP: ... and the same Maglev digest.
maglev_agreed() {
	jq -e --arg g "$2" '.groups[] | select(.group == $g) | all(.digests[]; .maglev_agrees)' \
		"$dir/verify-$1-$2.json" >/dev/null
}
# vip_maglev I NAME: the Maglev digest of VIP NAME's table on node I.
vip_maglev() {
	cluster_ctl "$P" "$1" --json vips | jq -r --arg n "$2" '.vips[] | select(.name == $n) | .maglev_digest'
}

# ------------------------------------------------------------------ set-up
cluster_setup "$P" 3 && start_backends "$P" || exit 1
for n in 1 2 3; do backend_add_vip "$P" "b$n" "$VIP_B" || exit 1; done
for i in 1 2 3; do
	cluster_corosync_start "$P" "$i" || exit 1
done
for i in 1 2 3; do
	cluster_await_members "$P" "$i" 3 || exit 1
done
for i in 1 2 3; do
	node_config "$i" && cluster_dataplane_start "$P" "$i" "$dir/n$i.conf" &&
		cluster_syncd_start "$P" "$i" "$dir/n$i.conf" || exit 1
done
for i in 1 2 3; do
	cluster_await_synced "$P" "$i" || cluster_fail "node $i: syncd not synced"
done
for i in 1 2 3; do
	await_cond 20 members_are "$i" ga "1 2 3" ||
		cluster_fail "node $i: group ga's members are '$(members_of "$i" ga)', not 1 2 3"
done
check "set-up: nodes 1 and 2 are in groups ga gb, node 3 in ga only" \
	test "$(groups_of 1)/$(groups_of 2)/$(groups_of 3)" = "ga gb/ga gb/ga"
for i in 1 2; do
	check "set-up: node $i sees gb's members 1 2" await_cond 20 members_are "$i" gb "1 2"
done
for i in 1 2 3; do
	check "set-up: node $i's corosync lists CPG group maglb:gb with nodes 1 2 ($(cpg_nodes "$i" maglb:gb))" \
		test "$(cpg_nodes "$i" maglb:gb)" = "1 2"
	check "set-up: node $i's corosync lists CPG group maglb:ga with nodes 1 2 3" \
		test "$(cpg_nodes "$i" maglb:ga)" = "1 2 3"
done

# ------------------------------------------------------------ a. shards
held a "$VIP_A" "$CONNS_A" || cluster_fail "the $CONNS_A connections to VIP A were not held"
held b "$VIP_B" "$CONNS_B" || cluster_fail "the $CONNS_B connections to VIP B were not held"
# established on node 1 (a flow only SYN'd is not replicated)
for v in "$VIP_A $CONNS_A" "$VIP_B $CONNS_B"; do
	# shellcheck disable=SC2086 # "VIP N" splits on purpose
	await_cond 20 own_is $v || cluster_fail "node 1 does not hold the ${v#* } flows of ${v% *}"
done
flows_of 1 own "$VIP_A" >"$dir/a.flows"
flows_of 1 own "$VIP_B" >"$dir/b.flows"
check "a: node 1 holds ga's $CONNS_A entries as its own" await_cond 20 gv_is 1 ga entries_own "$CONNS_A"
check "a: node 1 holds gb's $CONNS_B entries as its own" await_cond 20 gv_is 1 gb entries_own "$CONNS_B"
check "a: node 2 holds ga's $CONNS_A entries" await_cond 20 entries_are 2 ga "$CONNS_A"
check "a: node 2 holds gb's $CONNS_B entries" await_cond 20 entries_are 2 gb "$CONNS_B"
check "a: node 3 holds ga's $CONNS_A entries" await_cond 20 entries_are 3 ga "$CONNS_A"
check "a: node 2's dataplane has every flow of VIP A, to its backend" await_cond 20 peer_is 2 "$VIP_A" "$dir/a.flows"
check "a: node 2's dataplane has every flow of VIP B, to its backend" await_cond 20 peer_is 2 "$VIP_B" "$dir/b.flows"
check "a: node 3's dataplane has every flow of VIP A, to its backend" await_cond 20 peer_is 3 "$VIP_A" "$dir/a.flows"
check "a: node 3's dataplane has no flow of VIP B" test -z "$(flows_of 3 peer "$VIP_B")"
check "a: node 3's syncd holds ga's entries and nothing else ($(cluster_sync_value "$P" 3 entries))" \
	test "$(cluster_sync_value "$P" 3 entries)" -eq "$CONNS_A"
check "a: node 3's syncd has no group gb (status)" test "$(groups_of 3)" = ga
check "a: node 3's syncd has no group gb (no counter in scope group:gb)" \
	test "$(scope_count 3 group:gb)" -eq 0
check "a: node 3 is not a member of gb in nodes 1 and 2's view" \
	test "$(members_of 1 gb)/$(members_of 2 gb)" = "1 2/1 2"
# Whatever of gb reached node 3 would come on ga, refused (rejected_vip:
# it lacks VIP B; rejected_group), or show as more received there than on
# node 2, which receives ga's stream as it does.
check "a: node 3 received in ga what node 2 did ($(gcounter 3 ga entries_received))" \
	await_cond 10 received_same
check "a: ... which is ga's $CONNS_A entries at least" \
	test "$(gcounter 3 ga entries_received)" -ge "$CONNS_A"
for k in rejected_vip rejected_backend rejected_group drop_decode; do
	check "a: node 3 ga: $k 0" test "$(gcounter 3 ga "$k")" -eq 0
done
check "a: node 2 received gb's $CONNS_B entries at least ($(gcounter 2 gb entries_received))" \
	test "$(gcounter 2 gb entries_received)" -ge "$CONNS_B"
for g in ga gb; do
	check "a: node 2 $g: rejected_vip, rejected_group 0" \
		test "$(gcounter 2 "$g" rejected_vip)$(gcounter 2 "$g" rejected_group)" = 00
done

# ------------------------------------------------ b. node 2's syncd restarted
declare -A served0=()
for g in ga gb; do served0[1.$g]=$(gcounter 1 "$g" resync_served); done
served0[3.ga]=$(gcounter 3 ga resync_served)
check "b: node 2's syncd stops cleanly on SIGTERM" cluster_syncd_stop "$P" 2
check "b: node 1 sees ga's members 1 3" await_cond 20 members_are 1 ga "1 3"
check "b: node 1 sees gb's members 1 (alone)" await_cond 20 members_are 1 gb 1
check "b: CPG group maglb:gb is node 1 alone" test "$(cpg_nodes 1 maglb:gb)" = 1
# The donor paused: node 2's resync waits, naming whom each group asked.
a_syncd=$(_cluster_pid "$P" syncd-n1)
cluster_pause "$a_syncd"
cluster_syncd_start "$P" 2 "$dir/n2.conf" || exit 1
for g in ga gb; do
	check "b: node 2's $g resyncs from node 1, a member of $g ($(gv 2 "$g" state_name), donor $(gv 2 "$g" donor))" \
		await_cond 20 gv_is 2 "$g" donor 1
	check "b: ... and holds nothing of $g yet" entries_are 2 "$g" 0
done
check "b: node 2's syncd is not synced while its donor is paused" \
	test "$(cluster_sync_value "$P" 2 synced)" = 0
cluster_resume "$a_syncd"
check "b: node 2's syncd is synced again" cluster_await_synced "$P" 2
for g in ga gb; do
	n1=$(group_entries 1 "$g")
	check "b: node 2 holds $g's entries again, as many as node 1 ($(group_entries 2 "$g") == $n1)" \
		entries_are 2 "$g" "$n1"
	check "b: node 2's $g: one complete resync ($(gv 2 "$g" resync_complete)), of its $n1 entries ($(gv 2 "$g" resync_entries_received))" \
		test "$(gv 2 "$g" resync_complete)/$(gv 2 "$g" resync_entries_received)" = "1/$n1"
	check "b: node 2's $g: no resync incomplete, no refused transition" \
		test "$(gcounter 2 "$g" resync_incomplete)$(gcounter 2 "$g" impossible_transitions)" = 00
	check "b: node 1 served $g's resync once ($(gcounter 1 "$g" resync_served) - ${served0[1.$g]})" \
		test "$(gcounter 1 "$g" resync_served)" -eq $((served0[1.$g] + 1))
done
check "b: node 1's counts are still $CONNS_A and $CONNS_B" \
	test "$(group_entries 1 ga)/$(group_entries 1 gb)" = "$CONNS_A/$CONNS_B"
check "b: node 3 served no resync ($(gcounter 3 ga resync_served) - ${served0[3.ga]})" \
	test "$(gcounter 3 ga resync_served)" -eq "${served0[3.ga]}"
check "b: node 3 still has no group gb, its entries ga's alone" \
	test "$(groups_of 3)/$(cluster_sync_value "$P" 3 entries)" = "ga/$CONNS_A"
check "b: node 2's syncd is in ga and gb again" test "$(groups_of 2)" = "ga gb"
for i in 1 2 3; do
	check "b: node $i sees ga's members 1 2 3" await_cond 20 members_are "$i" ga "1 2 3"
done
for i in 1 2; do
	check "b: node $i sees gb's members 1 2" await_cond 20 members_are "$i" gb "1 2"
done
check "b: node 2's dataplane still has every flow of VIP A" peer_is 2 "$VIP_A" "$dir/a.flows"
check "b: node 2's dataplane still has every flow of VIP B" peer_is 2 "$VIP_B" "$dir/b.flows"

# ------------------------------------------------------------ c. verify
# VIP A's table is the one ga's new flows go by: equal on the three nodes,
# whatever else node 3's config lacks.
check "c: VIP A's Maglev digest is the same on nodes 1 2 3 ($(vip_maglev 1 web))" \
	test "$(vip_maglev 1 web)" = "$(vip_maglev 2 web)" -a "$(vip_maglev 1 web)" = "$(vip_maglev 3 web)"
for i in 1 2 3; do
	check "c: sync verify ga on node $i agrees (exit 0)" verify "$i" ga
	check "c: ... nodes 1 2 3 answered, $CONNS_A entries each, equal digests" \
		verified "$i" ga "1 2 3" "$CONNS_A"
	check "c: ... equal Maglev digests" maglev_agreed "$i" ga
done
for i in 1 2; do
	check "c: sync verify gb on node $i agrees (exit 0)" verify "$i" gb
	check "c: ... nodes 1 2 answered, $CONNS_B entries each, equal digests" \
		verified "$i" gb "1 2" "$CONNS_B"
	check "c: ... equal Maglev digests" maglev_agreed "$i" gb
done
no_gb_on_3() {
	local out rc=0
	out=$(cluster_syncd_ctl "$P" 3 sync verify gb 2>&1) || rc=$?
	[ "$rc" -eq 1 ] && [[ $out == *"no sync group 'gb'"* ]] && return 0
	log "node 3: exit $rc: $out"
	return 1
}
check "c: sync verify gb on node 3 exits 1: no such group there" no_gb_on_3

check "the $CONNS_A held connections to VIP A all succeed" release a
check "the $CONNS_B held connections to VIP B all succeed" release b

echo "checks: $E2E_PASSED passed, $E2E_FAILED failed in $((SECONDS - t_start)) s"
[ "$E2E_FAILED" -eq 0 ]
