#!/usr/bin/env bash
# Two workers on one port, end to end: each its own RX and TX queue
# (net_af_packet qpairs=2: the kernel's fanout spreads flows by their hash,
# as RSS does on a NIC) and its own flow table, shared nothing. Real TCP
# through both; every connection's packets meet one worker (one entry per
# connection in all), both workers carry some, and the control thread's
# views (status, flows, the FLOWS gauge) add the two tables up. Then an
# insert cap set by reload: the flows past it go by Maglev alone, untracked,
# and still complete. Two worker lcores share a CPU here (adaptive polling),
# the control thread the other.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/lib.sh
. tests/e2e/dp.sh

CONNS=100
dp_l2_setup e2ewk- || exit 1

DEVICE_EXTRA=",qpairs=2" dp_l2_web_config "$dir/maglb.conf" 1 2 3
DP_CORES="--lcores=0@0,1@1,2@1" dp_start "$P" "$dir/maglb.conf" || exit 1

check "status: two workers" test "$(dp_ctl "$P" --json status | jq .workers)" -eq 2
run_in "${P}c" "$LBTOOLS/lbclient" --connect "$TOPO_VIP4" "$TOPO_PORT" --json \
	--conns "$CONNS" --rounds 3 >"$dir/conns.json" 2>"$dir/conns.err"
check "$CONNS TCP connections: right payloads, one backend each, all three used" \
	clients_ok "$dir/conns.json" 5
new0=$(dp_counter "$P" worker0 NEW_FLOWS)
new1=$(dp_counter "$P" worker1 NEW_FLOWS)
check "both workers took new connections (worker0 $new0, worker1 $new1)" \
	test "$new0" -gt 0 -a "$new1" -gt 0
check "one entry per connection in all: a connection's packets meet one worker" \
	test $((new0 + new1)) -eq "$CONNS"
# The entries linger (CLOSING, tcp_closing 10 s) after the connections end.
check "maglbctl flows pages through both tables: $CONNS distinct flows" \
	test "$(dp_ctl "$P" --json flows |
		jq '[.flows[] | "\(.client):\(.client_port)"] | unique | length')" -eq "$CONNS"
check "status: flows_local sums the two tables" \
	test "$(dp_ctl "$P" --json status | jq .flows_local)" -eq "$CONNS"
check "the VIP's FLOWS gauge sums the two workers' entries" \
	test "$(dp_ctl "$P" --json vips web | jq '.vips[0].flows')" -eq "$CONNS"
check "Maglev picked every new connection's backend (vip:web MAGLEV_PICKS)" \
	test "$(dp_counter "$P" vip:web MAGLEV_PICKS)" -eq "$CONNS"

# An insert cap of 1 flow/s per worker (a bucket of 64): 300 connections at
# once overflow it; the overflow is forwarded by Maglev alone.
DEVICE_EXTRA=",qpairs=2" FLOWS_EXTRA="insert_rate = 1;" \
	dp_l2_web_config "$dir/maglb.conf" 1 2 3
check "reload with insert_rate = 1: exit 0" dp_ctl "$P" reload
new_before=$(dp_counter "$P" total NEW_FLOWS)
run_in "${P}c" "$LBTOOLS/lbclient" --connect "$TOPO_VIP4" "$TOPO_PORT" --json \
	--conns 300 --rounds 3 >"$dir/capped.json" 2>"$dir/capped.err"
check "past the insert cap: 300 connections complete all the same, one backend each" \
	clients_ok "$dir/capped.json"
# UNTRACKED counts packets: each packet of a flow without an entry tries
# again. Inserted: the two buckets (64 each) and the refill (1/s each).
untracked=$(($(dp_counter "$P" worker0 UNTRACKED) + $(dp_counter "$P" worker1 UNTRACKED)))
inserted=$(($(dp_counter "$P" total NEW_FLOWS) - new_before))
check "past the insert cap: $inserted flows inserted (at most 128 + the refill)" \
	test "$inserted" -le 140
check "past the insert cap: the others' packets forwarded untracked ($untracked)" \
	test "$untracked" -ge $((300 - inserted))
check "the VIP's UNTRACKED counter is the workers' (vip:web UNTRACKED)" \
	test "$(dp_counter "$P" vip:web UNTRACKED)" -eq "$untracked"
check "the dataplane stops cleanly on SIGTERM" dp_stop "$P"
e2e_summary
