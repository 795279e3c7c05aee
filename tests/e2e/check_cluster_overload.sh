#!/usr/bin/env bash
# Overload, then healing (suite cluster). Two nodes, each with
# tests/tools/dpgen as its dataplane: node 1's exports NEW entries over
# OVERLOAD_FLOWS flows (default 200000), each NEW of a flow giving it the
# next backend, and loses what its export ring does not take (--lossy, as
# the dataplane's ring under overload); node 2's imports what its syncd
# sends. Both syncds run with a short import queue (sync.queue_entries)
# and flows.refresh_interval = REFRESH_S (default 10).
#  a. saturation: node 1's generator exports as fast as its syncd takes
#     entries; the rate node 2's dataplane imports them over SAT_S seconds
#     (default 5) is R;
#  b. overload: node 1's generator offers 2 R for OVERLOAD_S seconds
#     (default 10); meanwhile `maglbctl sync` is asked of either syncd in
#     turn, four times a second: every call answers, within 1 s;
#  c. accounting: once the generator stops making NEW entries, every entry
#     is accounted for by reason: node 1 exported = sent + dropped by
#     reason; node 2
#     received = node 1 sent = applied + rejected, applied = imported +
#     drop_import_queue, and node 2's dataplane got what its syncd says;
#     something was lost, and node 2's dataplane holds other backends than
#     node 1's for some flows (the generators' digests of what they hold);
#  d. healing: the generator refreshes every flow with the backend its last
#     NEW gave it every REFRESH_S seconds (as the dataplane does each
#     flows.refresh_interval); within REFRESH_S + 5 s of the stop node 2's
#     dataplane holds every flow with node 1's backend (same digest),
#     `maglbctl sync verify` agrees, and node 1's syncd has counted every
#     entry its generator lost (export_lost: the dataplane tells losses
#     with the batch after them).
# No process died. Prints R, the calls' longest answer, the drops by reason
# and the healing time. Cleans up on exit, leftovers of its prefix first.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/cluster.sh

P=${MAGLB_E2E_PREFIX:-e2eci-}
FLOWS=${OVERLOAD_FLOWS:-200000}
REFRESH_S=${REFRESH_S:-10}
SAT_S=${SAT_S:-5}
OVERLOAD_S=${OVERLOAD_S:-10}
QUEUE=65536
ANSWER_MS=1000          # what an operator waits for maglbctl at most

dir=$(mktemp -d)
E2E_PASSED=0 E2E_FAILED=0
cluster_on_exit "$P" "$dir"     # it exits non-zero when a check failed

now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
gen_out() { printf '%s/%s.out' "$(topo_dir "$P")" "$1"; }
# gen_value NAME KEY: KEY of the last JSON line the generator NAME printed.
# (whole lines only: the generator may be writing the last one)
gen_value() { grep '^{.*}$' "$(gen_out "$1")" | tail -n 1 | jq -r ".$2"; }
gen_lines() { grep -c '^{.*}$' "$(gen_out "$1")"; }
node() { cluster_syncd_counter "$P" "$1" sync "$2"; }
group() { cluster_syncd_counter "$P" "$1" group:default "$2"; }
alive() { kill -0 "$(<"$(topo_dir "$P")/$1.pid")" 2>/dev/null; }

# ------------------------------------------------------------------ set-up
cluster_setup "$P" 2 || exit 1
for i in 1 2; do
	cluster_corosync_start "$P" "$i" || exit 1
done
cluster_await_members "$P" 1 2 || exit 1
for i in 1 2; do
	FLOWS_EXTRA="refresh_interval = $REFRESH_S;" SHARED_CAPACITY=$((2 * FLOWS)) \
		CONF_EXTRA="sync = { queue_entries = $QUEUE; };" \
		cluster_config "$P" "$i" "$dir/n$i.conf" || exit 1
done
echo 0 >"$dir/rate"
start_tool "$P" gen-2 "$(cluster_ns "$P" 2)" "$LBTOOLS/dpgen" \
	--service "$(cluster_service "$P" 2)" --sink --flows "$FLOWS" || exit 1
start_tool "$P" gen-1 "$(cluster_ns "$P" 1)" "$LBTOOLS/dpgen" \
	--service "$(cluster_service "$P" 1)" --batch 4096 --flows "$FLOWS" \
	--refresh "$REFRESH_S" --lossy --rate-file "$dir/rate" || exit 1
cluster_syncd_start "$P" 2 "$dir/n2.conf" && cluster_syncd_start "$P" 1 "$dir/n1.conf" || exit 1
echo "set-up: $FLOWS flows, sync.queue_entries $QUEUE, refresh every $REFRESH_S s;" \
	"load average $(loadavg)"

# --------------------------------------------------------------- a. saturation
at_least_lines() { [ "$(gen_lines "$1")" -ge "$2" ]; }
importing() { [ "$(gen_value gen-2 imported)" -gt 0 ] 2>/dev/null; }
await_cond 30 importing || cluster_fail "node 2's dataplane imports nothing"
n0=$(gen_lines gen-2)
await_cond 5 at_least_lines gen-2 $((n0 + 1))
t0=$(gen_value gen-2 t_ms) i0=$(gen_value gen-2 imported) n0=$(gen_lines gen-2)
await_cond $((SAT_S + 5)) at_least_lines gen-2 $((n0 + SAT_S))
t1=$(gen_value gen-2 t_ms) i1=$(gen_value gen-2 imported)
R=$(((i1 - i0) * 1000 / (t1 - t0 > 0 ? t1 - t0 : 1)))
echo "saturation: node 2's dataplane imported $((i1 - i0)) entries in $((t1 - t0)) ms:" \
	"R = $R entries/s; node 1's generator exported $(gen_value gen-1 exported);" \
	"load average $(loadavg)"
check "saturation: entries reach node 2's dataplane (R = $R/s)" test "$R" -gt 0

# ---------------------------------------------------------------- b. overload
echo $((2 * R)) >"$dir/rate"
kill -HUP "$(<"$(topo_dir "$P")/gen-1.pid")"
calls=0 failed=0 slowest=0 node_i=1
end=$(($(now_ms) + OVERLOAD_S * 1000))
while [ "$(now_ms)" -lt "$end" ]; do
	t=$(now_ms)
	if ! cluster_syncd_ctl "$P" "$node_i" --timeout "$ANSWER_MS" sync >/dev/null 2>"$dir/ctl.err"; then
		failed=$((failed + 1))
		log "overload: maglbctl sync of node $node_i: $(head -c 300 "$dir/ctl.err")"
	fi
	t=$(($(now_ms) - t))
	calls=$((calls + 1))
	[ "$t" -le "$slowest" ] || slowest=$t
	node_i=$((3 - node_i))
	sleep 0.25      # pacing: four calls a second
done
kill -USR1 "$(<"$(topo_dir "$P")/gen-1.pid")"     # NEW entries end; it prints its count
stop_ms=$(now_ms)
echo "overload: $((2 * R)) entries/s offered for $OVERLOAD_S s; maglbctl sync: $calls calls," \
	"$failed failed, the slowest answered in $slowest ms; load average $(loadavg)"
check "overload: every maglbctl sync answered ($failed of $calls failed)" test "$failed" -eq 0
check "overload: within $ANSWER_MS ms (slowest $slowest ms)" test "$slowest" -le "$ANSWER_MS"
for name in syncd-n1 syncd-n2 gen-1 gen-2 corosync-n1 corosync-n2; do
	check "overload: $name is alive" alive "$name"
done

# -------------------------------------------------------------- c. accounting
# Nothing moves between the stop and the generator's first REFRESH pass,
# REFRESH_S later, once the queues have drained: compare then.
n0=$(gen_lines gen-1)
await_cond 5 at_least_lines gen-1 $((n0 + 1))
exported=$(gen_value gen-1 exported) lost=$(gen_value gen-1 dropped)
# drained: node 1's counts match its generator's and nothing waits for CPG;
# node 2 received what node 1 sent and imported or dropped all it applied
sent_or_dropped() {
	echo $(($(group 1 entries_sent) + $(group 1 drop_cpg_backlog) +
		$(group 1 drop_send_error) + $(node 1 export_unknown)))
}
received_all() { [ "$(group 2 entries_received)" -eq "$(group 1 entries_sent)" ]; }
import_done() {
	[ "$(group 2 entries_applied)" -eq $(($(group 2 imported) + $(group 2 drop_import_queue))) ]
}
drained() {
	[ "$(node 1 export_entries)" -eq "$exported" ] && [ "$(sent_or_dropped)" -eq "$exported" ] &&
		received_all && import_done
}
await_cond_every 0.2 $((REFRESH_S - 2)) drained
drained_ms=$(($(now_ms) - stop_ms))
sync2=$(cluster_sync_json "$P" 2) sync1=$(cluster_sync_json "$P" 1)
drops=$(jq -r '[(.drops // [])[] | "\(if .group == "" then "node" else .group end) \(.reason) \(.count)"] | join(", ")' \
	<<<"$sync1")
drops2=$(jq -r '[(.drops // [])[] | "\(if .group == "" then "node" else .group end) \(.reason) \(.count)"] | join(", ")' \
	<<<"$sync2")
echo "accounting (after $drained_ms ms): node 1's generator made $((exported + lost)) NEW" \
	"entries, its ring took $exported and lost $lost; node 1: exported $(node 1 export_entries)," \
	"sent $(group 1 entries_sent); drops: ${drops:-none}; node 2: received" \
	"$(group 2 entries_received), applied $(group 2 entries_applied), imported" \
	"$(group 2 imported); drops: ${drops2:-none}"
check "accounting: node 1's syncd got every entry its generator's ring took ($(node 1 export_entries) of $exported)" \
	test "$(node 1 export_entries)" -eq "$exported"
check "accounting: node 1 sent or dropped by reason every entry ($(sent_or_dropped) of $exported)" \
	test "$(sent_or_dropped)" -eq "$exported"
check "accounting: node 2 received what node 1 sent ($(group 2 entries_received) of $(group 1 entries_sent))" \
	received_all
rejected=$(($(group 2 rejected_vip) + $(group 2 rejected_backend) + $(group 2 rejected_group) +
	$(node 2 cache_full)))
check "accounting: node 2 applied or rejected every entry received ($(group 2 entries_applied) + $rejected)" \
	test $(($(group 2 entries_applied) + rejected)) -eq "$(group 2 entries_received)"
check "accounting: node 2 imported or dropped every entry applied" import_done
check "accounting: node 2's dataplane got what its syncd counts ($(gen_value gen-2 imported) of $(group 2 imported))" \
	test "$(gen_value gen-2 imported)" -eq "$(group 2 imported)"
total_lost=$((lost + $(group 1 drop_cpg_backlog) + $(group 1 drop_send_error) +
	$(group 2 drop_import_queue)))
check "accounting: the overload lost entries ($total_lost), each counted" test "$total_lost" -gt 0
# the generators print their digests once a second: a line after the drain
n0=$(gen_lines gen-2) n1=$(gen_lines gen-1)
await_cond 5 at_least_lines gen-2 $((n0 + 1)) && await_cond 5 at_least_lines gen-1 $((n1 + 1))
echo "accounting: node 1's dataplane holds $(gen_value gen-1 held) flows (digest" \
	"$(gen_value gen-1 digest)), node 2's $(gen_value gen-2 held) (digest $(gen_value gen-2 digest))"
check "accounting: before a REFRESH, node 2's dataplane differs from node 1's" \
	test "$(gen_value gen-2 digest)" != "$(gen_value gen-1 digest)"

# ----------------------------------------------------------------- d. healing
verified() { cluster_syncd_ctl "$P" 1 sync verify >"$dir/verify.out" 2>&1; }
holds_all() { [ "$(cluster_sync_value "$P" 2 entries)" -eq "$FLOWS" ]; }
same_flows() {
	[ "$(gen_value gen-2 held)" -eq "$FLOWS" ] && [ "$(gen_value gen-1 held)" -eq "$FLOWS" ] &&
		[ "$(gen_value gen-2 digest)" = "$(gen_value gen-1 digest)" ]
}
healed() { same_flows && holds_all && verified; }
await_cond_every 0.5 $((REFRESH_S + 5 - ($(now_ms) - stop_ms) / 1000)) healed
heal_ms=$(($(now_ms) - stop_ms))
echo "healing: after $heal_ms ms (REFRESH passes: $(gen_value gen-1 refreshed) entries);" \
	"node 2 holds $(cluster_sync_value "$P" 2 entries) of $FLOWS; verify:"
sed 's/^/  /' "$dir/verify.out"
echo "healing: node 1's dataplane holds $(gen_value gen-1 held) flows (digest" \
	"$(gen_value gen-1 digest)), node 2's $(gen_value gen-2 held) (digest $(gen_value gen-2 digest))"
check "healing: node 2's syncd holds every flow" holds_all
check "healing: node 2's dataplane holds every flow with node 1's backend" same_flows
check "healing: sync verify agrees within $((REFRESH_S + 5)) s of the stop ($heal_ms ms)" verified
# the last losses reach syncd with the next batch sent, a REFRESH's here
check "healing: node 1's syncd counted the generator's losses (export_lost $(node 1 export_lost) of $lost)" \
	test "$(node 1 export_lost)" -eq "$lost"
for name in syncd-n1 syncd-n2; do
	check "healing: $name is alive" alive "$name"
done

echo "checks: $E2E_PASSED passed, $E2E_FAILED failed"
[ "$E2E_FAILED" -eq 0 ]
