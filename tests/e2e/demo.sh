#!/usr/bin/env bash
# The demo behind `./dev demo`: a two-node active-passive maglb cluster in
# network namespaces (cluster.sh, failover.sh): on each node corosync,
# maglb-dataplane (DPDK, net_af_packet) and maglb-syncd; three backends (L2
# direct routing, direct server return); a router that reaches the VIPs
# on-link (ARP, ND); real TCP clients holding connections open. It shows
# `maglbctl cluster`, `sync` and counters, kills the whole active node and
# prints how many connections survived and how long the takeover took.
# Builds nothing; run it from the top of a built checkout, as root.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export MAGLB_BUILD=${MAGLB_BUILD:-$PWD/build} LBTOOLS=${LBTOOLS:-$PWD/build/tests/tools}
. tests/e2e/failover.sh

P=mdemo-
CONNS=200
CONNS6=100
dir=$(mktemp -d)
cluster_on_exit "$P" "$dir"

say() { printf '\n== %s\n' "$*"; }
fail() { cluster_fail "demo: $*"; }   # the exit trap shows the nodes' logs
ctl() { local i=$1; shift; cluster_syncd_ctl "$P" "$i" "$@"; }

say "topology: client -> router -> nodes 1 and 2 (corosync + maglb-dataplane + maglb-syncd each) -> 3 backends (L2 DSR)"
cluster_setup "$P" 2 && start_backends "$P" && failover_ap_route "$P" || fail "topology"
for i in 1 2; do
	# preempt: node 1, of the higher priority, is active whichever node
	# became eligible first
	failover_config "$P" "$i" "$dir/n$i.conf" 'mode = "active-passive"; preempt = true;' ||
		fail "config of node $i"
done
echo "node 1: priority $((250 - 1)), node 2: priority $((250 - 2)); preempt on; lease 1000 ms; corosync token ${CLUSTER_TOKEN_MS} ms"
for i in 1 2; do
	failover_node_start "$P" "$i" "$dir/n$i.conf" || fail "node $i did not start"
done
failover_await_cluster "$P" 1 '.role == "active"' 30 &&
	failover_await_cluster "$P" 2 '.role == "passive" and .eligible' 30 ||
	fail "the roles were not agreed"

say "maglbctl cluster (node 1): roles agreed by both nodes"
ctl 1 cluster

say "$CONNS IPv4 and $CONNS6 IPv6 TCP connections to the VIPs, each sending a line every 100 ms"
failover_hold_start "$P" h "$CONNS" && failover_hold_start "$P" h6 "$CONNS6" "$TOPO_VIP6" ||
	fail "connections"
replicated() { [ "$(cluster_sync_value "$P" 2 entries)" -ge $((CONNS + CONNS6)) ]; }
await_cond 10 replicated || fail "node 1's entries did not reach node 2"
say "maglbctl sync (node 2): node 1's entries replicated to the passive node"
ctl 2 sync
say "maglbctl sync verify: both nodes hold the same entries and Maglev tables"
ctl 1 sync verify
say "node 1's dataplane counters (non-zero)"
cluster_ctl "$P" 1 counters total | awk 'NR == 1 || $3 != 0'

say "killing node 1 (dataplane, syncd and corosync, SIGKILL at once)"
failover_watch_start "$P" || fail "watching the router's link"
t0=$(failover_now_us)
# (bash would report each killed daemon's job on stderr)
{ failover_node_kill9 "$P" 1; } 2>/dev/null
garp=$(failover_await_event "$P" "$t0" garp ip="$TOPO_VIP4" mac="$(cluster_node_mac 2)") ||
	fail "the router saw no gratuitous ARP from node 2"
takeover_ms=$(failover_ms_since "$t0" "$garp")
echo "the router saw node 2's gratuitous ARP for $TOPO_VIP4 $takeover_ms ms after the kill"
failover_hold_await_replies "$P" h "$garp" 30 && failover_hold_await_replies "$P" h6 "$garp" 30 ||
	fail "connections not answered after the takeover"

say "maglbctl cluster (node 2) after the takeover"
ctl 2 cluster
say "node 2's takeover in its log"
grep -h "role\|owning\|left the cluster" "$(topo_dir "$P")/syncd-n2.err" | tail -n 4

failover_hold_stop "$P" h && failover_hold_stop "$P" h6 || fail "connections"
say "result"
failover_hold_merge "$(failover_hold_json "$P" h)" "$(failover_hold_json "$P" h6)" >"$dir/all.json"
failover_report demo-node-death "$dir/all.json" "$takeover_ms" || fail "connections broke"
echo "(takeover: the kill to the router's first gratuitous ARP from node 2; max_gap: the longest silence a client saw)"
say "demo done: tearing down"
