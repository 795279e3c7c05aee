#!/usr/bin/env bash
# A foreign member, suite cluster: a pair; then a second process under
# node 1's id (cpg-intruder, in node 1's namespace) joins the membership
# group and the sync group and sends a well-formed "dataplane down"
# NODE_STATE and a NEW batch with a stale sequence number. syncd trusts one
# process per node id (syncd/cpg_view.h), so neither node changes role,
# both count the foreign member and drop its messages, and its entry is
# applied nowhere; node 1's next sync messages (a verify round) move
# seq_gaps by no more than the batch carried (one).
# Then the intruders leave and the cluster is as it was, and a restart of
# node 2's syncd is not foreign. Cleans up on exit, leftovers of its
# prefix first (cluster_setup).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/cluster.sh

P=${MAGLB_E2E_PREFIX:-e2ecf-}
WATCH_S=4               # how long roles are watched after the intrusion
CLIENT=198.18.10.99     # the intruder's batch: this client, port 40000

dir=$(mktemp -d)
E2E_PASSED=0 E2E_FAILED=0
cluster_on_exit "$P" "$dir"

role() { cluster_syncd_ctl "$P" "$1" --json cluster | jq -r .role; }
role_changes() { cluster_syncd_ctl "$P" "$1" --json cluster | jq -r .role_changes; }
# members I: the node ids node I's membership sees, sorted, on one line
members() { cluster_syncd_ctl "$P" "$1" --json cluster | jq -r '[.members[].id] | sort | join(" ")'; }
members_both() { [ "$(members "$1")" = "1 2" ]; }
counter() { cluster_syncd_counter "$P" "$1" "$2" "$3"; }
roles() { echo "$(role 1) $(role 2)"; }
one_active() { [[ $(roles) == "active passive" || $(roles) == "passive active" ]]; }
synced() { [ "$(cluster_sync_value "$P" "$1" synced)" = 1 ]; }
at_most() { [ "$1" -le "$2" ]; }
at_least() { [ "$1" -ge "$2" ]; }
no_intruder_flow() { ! cluster_flows "$P" "$1" peer | grep -q " $CLIENT 40000 "; }
verify() { cluster_syncd_ctl "$P" "$1" sync verify >/dev/null; }
# the roles stay $1 for WATCH_S seconds, sampled every 200 ms
roles_stay() {
	local t
	for t in $(seq 1 $((WATCH_S * 5))); do
		[ "$(roles)" = "$1" ] || { log "roles at sample $t: $(roles), not $1"; return 1; }
		sleep 0.2
	done
}
intruder() {
	local name=$1
	shift
	start_tool "$P" "$name" "$(cluster_ns "$P" 1)" "$LBTOOLS/cpg-intruder" "$@"
}

# ------------------------------------------------------------------ set-up
cluster_pair_start "$P" "$dir" || exit 1
for i in 1 2; do
	await_cond 30 synced "$i" || cluster_fail "node $i: syncd not synced"
done
await_cond 30 one_active || cluster_fail "no single active node: $(roles)"
# node 1's sync sequence well past 1 (a verify round is two messages of
# it): a stale batch that moved the mark back would show as a gap of them
for r in 1 2 3 4 5; do
	verify 1 || cluster_fail "sync verify round $r disagreed"
done
sleep 2                 # past the election's first announcements
before=$(roles)
declare -A rc0 fm0 gaps0
for i in 1 2; do
	rc0[$i]=$(role_changes "$i") || exit 1
	gaps0[$i]=$(counter "$i" group:default seq_gaps)
	for s in cpg cluster_cpg; do
		fm0[$i.$s]=$(counter "$i" "$s" foreign_members)
	done
done
echo "before: roles $before, role changes ${rc0[1]} ${rc0[2]}"

# ------------------------------------------------------- the intrusion
intruder membership --group maglb:/membership --state down --count 3 --batch-seq 1 ||
	exit 1
intruder sync --group maglb:default --batch-seq 1 --state down || exit 1
log "$(cat "$(topo_dir "$P")/membership.out" "$(topo_dir "$P")/sync.out")"
check "intruded: the roles stay $before for ${WATCH_S} s" roles_stay "$before"
check "intruded: sync verify from node 1 agrees" verify 1
for i in 1 2; do
	check "intruded: node $i changed no role" test "$(role_changes "$i")" -eq "${rc0[$i]}"
	check "intruded: node $i sees members 1 2" members_both "$i"
	for s in cpg cluster_cpg; do
		check "intruded: node $i $s: a foreign member" \
			at_least "$(counter "$i" "$s" foreign_members)" $((fm0[$i.$s] + 1))
		check "intruded: node $i $s: its messages dropped" \
			at_least "$(counter "$i" "$s" foreign_messages)" 1
	done
	check "intruded: node $i seq_gaps moved by the one batch at most" \
		at_most "$(counter "$i" group:default seq_gaps)" $((gaps0[$i] + 1))
	check "intruded: node $i applied no stale batch" \
		test "$(counter "$i" group:default drop_seq_stale)" -eq 0
	check "intruded: node $i's dataplane has not the intruder's flow" no_intruder_flow "$i"
done

# ------------------------------------------------------- the intruders leave
stop_tool "$P" membership
stop_tool "$P" sync
sleep 1
check "left: the roles are still $before" test "$(roles)" = "$before"
for i in 1 2; do
	check "left: node $i changed no role" test "$(role_changes "$i")" -eq "${rc0[$i]}"
	check "left: node $i sees members 1 2" members_both "$i"
	check "left: node $i synced" synced "$i"
done
check "left: sync verify agrees" verify 1

# ------------------------------------------- a restart is not foreign
fm1=$(counter 1 cpg foreign_members) fm1c=$(counter 1 cluster_cpg foreign_members)
cluster_syncd_stop "$P" 2 && cluster_syncd_start "$P" 2 "$dir/n2.conf" || exit 1
await_cond 30 synced 2 || cluster_fail "node 2: syncd not synced after its restart"
await_cond 10 members_both 1
check "restart: node 1 sees members 1 2" members_both 1
check "restart: node 1 counts no foreign member (sync group)" \
	test "$(counter 1 cpg foreign_members)" -eq "$fm1"
check "restart: node 1 counts no foreign member (membership)" \
	test "$(counter 1 cluster_cpg foreign_members)" -eq "$fm1c"
check "restart: node 2 counts no foreign member" \
	test "$(counter 2 cpg foreign_members)$(counter 2 cluster_cpg foreign_members)" = 00
check "restart: node 1 changed no role" test "$(role_changes 1)" -eq "${rc0[1]}"

echo "checks: $E2E_PASSED passed, $E2E_FAILED failed"
[ "$E2E_FAILED" -eq 0 ]
