#!/usr/bin/env bash
# Bulk imports and the dataplane's liveness ping (suite cluster): syncd pings
# its dataplane with a STATUS every 40 ms on the same IPC connection as its
# IMPORT_BATCH requests, and takes one unanswered for 120 ms for a dead
# dataplane (it withdraws the node). A million entries imported must not
# look like that. Two nodes, active-active: node 1 has tests/tools/dpgen as
# its dataplane (it exports IMPORT_ENTRIES generated flows, default
# 1000000), node 2 the real maglb-dataplane (flows.shared_capacity for
# twice that) and a deep import queue (sync.queue_entries, default
# 1048576: the bulk that can wait ahead of a ping is the IPC client's
# window, not this queue).
#  a. resync: node 2's syncd starts once node 1's holds every entry, asks
#     node 1 for everything and imports it into its dataplane;
#  b. a dataplane restart: node 2's dataplane is killed and started again
#     empty; its syncd imports every entry it holds at once;
#  c. with IMPORT_LIVE_BURST=1 only: a live burst, node 2 synced and active
#     (eligible: a ping timeout withdraws it), node 1's generator restarts
#     and exports as many new flows again as fast as syncd takes them; node
#     2 imports them as they are delivered. Off by default: it saturates
#     the host's cores (both syncds, both corosyncs), and where node 2's
#     dataplane has no core to itself one IMPORT_BATCH of 4096 entries can
#     then take longer than the ping's deadline (up to 290 ms measured on
#     2 shared cores at a load average of 14), which no bound on what is
#     in flight can shorten.
# Each phase: node 2's syncd counted no ping timeout (cluster dp_timeouts)
# and logged no withdrawal for one; its role changed only where the phase
# says; its dataplane holds every entry (status flows_synced). Prints each
# phase's import rate (entries a second, from the phase's start to the last
# entry in node 2's dataplane, polled), syncd's dataplane client counters
# and the load average.
# Cleans up on exit, leftovers of its prefix first.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/cluster.sh
# The dataplanes' control threads (lcore 0, which imports and answers the
# pings) may run on either core: pinned to core 0, each would wait behind
# the real-time corosyncs there while core 1 idles, and can answer nothing
# for over 120 ms. Workers stay on core 1.
DP_CORES=${DP_CORES:---lcores 0@(0,1),1@1}

P=${MAGLB_E2E_PREFIX:-e2eci-}
ENTRIES=${IMPORT_ENTRIES:-1000000}
QUEUE=${IMPORT_QUEUE_ENTRIES:-1048576}
SHARED_CAPACITY=$((2 * ENTRIES + 65536))
TIMEOUT_S=120

dir=$(mktemp -d)
E2E_PASSED=0 E2E_FAILED=0
cluster_on_exit "$P" "$dir"     # it exits non-zero when a check failed

now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
node_value() { cluster_sync_value "$P" "$1" "$2"; }
synced() { [ "$(node_value "$1" synced)" = 1 ]; }
# at_least CMD... MIN: what CMD prints is a number >= MIN.
at_least() {
	local v
	v=$("${@:1:$#-1}" 2>/dev/null) && [[ $v =~ ^[0-9]+$ ]] && [ "$v" -ge "${*: -1}" ]
}
flows_synced() { cluster_ctl "$P" "$1" --json status | jq -r '.flows_synced'; }
cluster_value() { cluster_syncd_counter "$P" "$1" cluster "$2"; }
dp_client() { cluster_syncd_counter "$P" "$1" dataplane "$2"; }
# withdrawals I: the lines in which node I's syncd took a ping timeout for
# a dead dataplane.
withdrawals() { grep -c 'no answer for .* ms: withdrawing' "$(topo_dir "$P")/syncd-n$1.err"; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

gen_start() {
	start_tool "$P" gen-1 "$(cluster_ns "$P" 1)" "$LBTOOLS/dpgen" \
		--service "$(cluster_service "$P" 1)" --batch 4096 "$@"
}

# import_until NAME T0 TOTAL: wait until node 2's dataplane holds TOTAL
# synced entries, then print the phase's figures and check it.
import_until() {
	local name=$1 t0=$2 total=$3 t1 got ms
	# Five times a second: each maglbctl is an IPC connection that the
	# dataplane's one control thread sets up and tears down, and polled
	# at await_cond's 20 a second it would compete with the imports measured.
	await_cond_every 0.2 "$TIMEOUT_S" at_least flows_synced 2 "$total"
	t1=$(now_ms)
	got=$(flows_synced 2)
	ms=$((t1 - t0 > 0 ? t1 - t0 : 1))
	echo "$name: node 2's dataplane holds $got of $total entries after $ms ms:" \
		"$((got * 1000 / ms)) entries/s; ping timeouts $(cluster_value 2 dp_timeouts)," \
		"withdrawals $(withdrawals 2), dataplane requests $(dp_client 2 requests)," \
		"send_again $(dp_client 2 send_again), bulk_again $(dp_client 2 bulk_again)," \
		"timeouts $(dp_client 2 timeouts); syncd's longest loop stall" \
		"$(cluster_syncd_counter "$P" 2 sync loop_lag_max_us) us; load average $(loadavg)"
	check "$name: node 2's dataplane holds every entry ($got of $total)" test "$got" -ge "$total"
}

# checks_after NAME ROLE_CHANGES: no ping timeout and no withdrawal for one
# so far, and ROLE_CHANGES changes of node 2's role in all (those the
# phases so far cause, no more).
checks_after() {
	local name=$1 want=$2 got
	got=$(cluster_value 2 role_changes)
	check "$name: node 2's syncd counted no dataplane ping timeout (dp_timeouts $(cluster_value 2 dp_timeouts))" \
		test "$(cluster_value 2 dp_timeouts)" -eq 0
	check "$name: node 2's syncd withdrew for no ping ($(withdrawals 2) withdrawals)" \
		test "$(withdrawals 2)" -eq 0
	check "$name: node 2's role changed $want times in all ($got)" test "$got" -eq "$want"
}

# ------------------------------------------------------------------ set-up
cluster_setup "$P" 2 && start_backends "$P" || exit 1
for i in 1 2; do
	cluster_corosync_start "$P" "$i" || exit 1
done
cluster_await_members "$P" 1 2 || exit 1
for i in 1 2; do
	cluster_config "$P" "$i" "$dir/n$i.conf" || exit 1
	sed -i -e 's|^\(cluster = { hash_seed = "[0-9a-f]*";\) };|\1 mode = "active-active"; };|' \
		-e "s|^flows = {|sync = { queue_entries = $QUEUE; };\nflows = {|" "$dir/n$i.conf"
	grep -q 'mode = "active-active"' "$dir/n$i.conf" && grep -q "queue_entries = $QUEUE;" "$dir/n$i.conf" ||
		{ log "cannot rewrite $dir/n$i.conf (cluster_config changed?)"; exit 1; }
done
echo "set-up: $ENTRIES entries a phase, node 2's sync.queue_entries $QUEUE," \
	"flows.shared_capacity $SHARED_CAPACITY; load average $(loadavg)"

gen_start --count "$ENTRIES" || exit 1
cluster_syncd_start "$P" 1 "$dir/n1.conf" || exit 1
await_cond "$TIMEOUT_S" at_least node_value 1 entries "$ENTRIES" ||
	{ log "node 1's syncd does not hold the $ENTRIES entries"; exit 1; }
cluster_dataplane_start "$P" 2 "$dir/n2.conf" || exit 1

# ------------------------------------------------------------------ a. resync
t0=$(now_ms)
cluster_syncd_start "$P" 2 "$dir/n2.conf" || exit 1
import_until "resync" "$t0" "$ENTRIES"
await_cond 30 synced 2
check "resync: node 2's syncd reports synced" synced 2
check "resync: it received the $ENTRIES entries ($(cluster_syncd_counter "$P" 2 "group:default" resync_entries_received))" \
	test "$(cluster_syncd_counter "$P" 2 "group:default" resync_entries_received)" -ge "$ENTRIES"
active() { [ "$(cluster_value 2 role)" = 1 ]; }
await_cond 30 active
check "resync: node 2 is active once synced" active
checks_after "resync" 1

# ---------------------------------------------------- b. a dataplane restart
cluster_dataplane_kill9 "$P" 2
t0=$(now_ms)
cluster_dataplane_start "$P" 2 "$dir/n2.conf" || exit 1
import_until "dataplane restart" "$t0" "$ENTRIES"
await_cond 30 active
check "dataplane restart: node 2 is active again" active
# the dataplane's death withdrew the node, its return brought it back
checks_after "dataplane restart" 3

# ------------------------------------------------------------- c. a live burst
if [ "${IMPORT_LIVE_BURST:-0}" = 1 ]; then
	stop_tool "$P" gen-1
	t0=$(now_ms)
	gen_start --count "$ENTRIES" --offset "$ENTRIES" || exit 1
	import_until "live burst" "$t0" $((2 * ENTRIES))
	check "live burst: node 2 stayed active" active
	checks_after "live burst" 3
fi

echo "checks: $E2E_PASSED passed, $E2E_FAILED failed"
[ "$E2E_FAILED" -eq 0 ]
