#!/usr/bin/env bash
# Flow sync through the real dataplane's IPC, end to end, with lbsync
# (tests/tools/lbsync.c) standing in for maglb-syncd, on the l2 topology:
#  a. export: each new connection is exported once as a NEW event naming the
#     flow and its backend, as the dataplane's own table has it, and once
#     more (REFRESH) when it is established, with that state's timeout;
#  b. import: the dataplane restarts with a backend added (Maglev now sends
#     about a third of the flows to it); the recorded entries, imported into
#     the fresh dataplane, keep every open connection on its first backend;
#  c. control: the same restart without the import breaks some connections,
#     so (b) proves something;
#  d. the export ring wraps: with a ring of 63 records, 8 rounds of 8 short
#     connections (192 events: new, established, closed) are all recorded,
#     right (check_export_batch tests the ring's wrap itself). A connection
#     whose client sent a RST or FIN after its first SYN, then the SYN again
#     (seen twice in 46 runs under ASan), is two lifecycles of one flow:
#     new, closed, new, established, closed.
# Connections are held open and idle (lbclient --hold-file) across restarts.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/lib.sh
. tests/e2e/dp.sh

CONNS=60
# The default synced-table size: its sweep must not slow the control loop.
SHARED_CAPACITY=4194304
dp_l2_setup e2esy- || exit 1

B1=$(topo_backend_addr4 l2 1)
B2=$(topo_backend_addr4 l2 2)

write_config() { dp_l2_web_config "$dir/maglb.conf" "$@"; }   # backends (numbers)

# restart BACKENDS...: stop the dataplane (SIGTERM), start a fresh one.
restart() {
	dp_stop "$P" || return 1
	write_config "$@"
	dp_start "$P" "$dir/maglb.conf"
}

lbsync() { run_in "${P}lb" "$LBTOOLS/lbsync" --service "$(dp_service "$P")" "$@"; }

client() {   # name [lbclient args]
	local name=$1
	shift
	run_in "${P}c" "$LBTOOLS/lbclient" --connect "$TOPO_VIP4" "$TOPO_PORT" --json "$@" \
		>"$dir/$name.json" 2>"$dir/$name.err"
}

# CONNS connections, held open and idle after their first round (name: NAME,
# hold file NAME.go); returns once all are held and quiet.
client_held() {
	client "$1" --conns "$CONNS" --rounds 3 --hold-file "$dir/$1.go" \
		--held-file "$dir/$1.held" --timeout-s 120 &
	held_pid=$!
	await_cond 30 test -e "$dir/$1.held" || return 1
	await_cond 10 backends_acked
}

# True once the backends hold CONNS connections and none has unacknowledged
# data: the clients' ACKs of their first replies have crossed the load
# balancer. A late ACK would otherwise reach the restarted dataplane before
# the import, which would then pin its flow by Maglev in a worker's table
# (looked up before the synced one).
backends_acked() {
	local b out sockets=0
	for b in "${TOPO_BACKENDS[@]}"; do
		out=$(run_in "${P}$b" ss -tinH state established "( sport = :$TOPO_PORT )") ||
			return 1
		[[ $out != *unacked:* ]] || return 1
		sockets=$((sockets + $(grep -c '^[0-9]' <<<"$out")))
	done
	[ "$sockets" -eq "$CONNS" ]
}

# The flows of the recorded new events: "tcp VIP VPORT CLIENT CPORT BACKEND".
recorded_flows() { awk '$1 == "new" { print $2, $3, $4, $5, $6, $7 }' "$dir/rec.txt"; }
recorded_new() { [ "$(recorded_flows 2>/dev/null | wc -l)" -ge "$CONNS" ]; }
# The refresh events that say a flow is established: "tcp VIP ... BACKEND".
recorded_est() {
	awk '$1 == "refresh" && $9 == "established" { print $2, $3, $4, $5, $6, $7 }' \
		"$dir/rec.txt"
}
recorded_established() { [ "$(recorded_est 2>/dev/null | wc -l)" -ge "$CONNS" ]; }
dataplane_flows() {
	dp_ctl "$P" --json flows |
		jq -r '.flows[] | "\(.protocol) \(.vip) \(.vip_port) \(.client) \(.client_port) \(.backend)"'
}

# ---------------------------------------------------------------- a. export
write_config 1 2
dp_start "$P" "$dir/maglb.conf" || exit 1
start_tool "$P" lbsync-record "${P}lb" "$LBTOOLS/lbsync" --service "$(dp_service "$P")" \
	record --out "$dir/rec.txt" --timeout-s 60 || exit 1
rec_pidfile="$(topo_dir "$P")/lbsync-record.pid"
rec_pid=$(<"$rec_pidfile")
client_held sync || exit 1
check "export: lbsync recorded $CONNS new events" await_cond 10 recorded_new
check "export: and $CONNS establishments" await_cond 10 recorded_established
kill -TERM "$rec_pid"
wait "$rec_pid"
rec_rc=$?
rm -f "$rec_pidfile"
check "export: lbsync record stops cleanly on SIGTERM (exit 0)" test "$rec_rc" -eq 0
one_new_each() {
	[ "$(recorded_flows | wc -l)" -eq "$CONNS" ] &&
		[ "$(recorded_flows | cut -d' ' -f1-5 | sort -u | wc -l)" -eq "$CONNS" ]
}
check "export: $CONNS distinct flows, one new event each" one_new_each
check "export: every recorded flow goes to b1 or b2, the configured backends" \
	test "$(recorded_flows | awk -v a="$B1" -v b="$B2" '$6 != a && $6 != b' | wc -l)" -eq 0
# The NEW goes out at the SYN: the SYN state's timeout (tcp_syn, 10 s by
# default) and no flag; the REFRESH at the first packet without SYN: the
# established state's (900 s), flag established, the same flow and backend.
check "export: new events carry the SYN state's lifetime (10000 ms) and no flags" \
	test "$(awk '$1 == "new" && !($8 == 10000 && $9 == "-")' "$dir/rec.txt" | wc -l)" -eq 0
check "export: each flow is exported again once established (REFRESH, established), same backend" \
	diff <(recorded_flows | sort) <(recorded_est | sort)
check "export: the established lifetime is the state's (900000 ms)" \
	test "$(awk '$1 == "refresh" && $8 != 900000' "$dir/rec.txt" | wc -l)" -eq 0
check "export: the recorded flows and backends are the dataplane's (maglbctl flows)" \
	diff <(recorded_flows | sort) <(dataplane_flows | sort)
exported=$(dp_counter "$P" control EXPORTED)
lost=$(dp_counter "$P" control EXPORT_LOST)
check "export: EXPORTED >= $CONNS (EXPORTED $exported)" test "$exported" -ge "$CONNS"
check "export: no event lost (EXPORT_LOST $lost)" test "$lost" -eq 0

# ---------------------------------------------------------------- b. import
restart 1 2 3 || exit 1
# Each flow's last event is its establishment: imported with 900 s to live.
lbsync import --in "$dir/rec.txt" --batch 25 >"$dir/import.out" 2>&1
check "import: lbsync sends the $CONNS flows (established) in 3 messages of at most 25" \
	grep -qx "imported $CONNS entries in 3 messages (new 0, refresh $CONNS, close 0), skipped 0 closed" \
	"$dir/import.out"
imported=$(dp_counter "$P" control IMPORTED)
rejected=$(dp_counter "$P" control IMPORT_REJECTED)
check "import: IMPORTED == $CONNS (IMPORTED $imported)" test "$imported" -eq "$CONNS"
check "import: IMPORT_REJECTED == 0 (IMPORT_REJECTED $rejected)" test "$rejected" -eq 0
check "import: maglbctl status counts $CONNS synced flows" \
	test "$(dp_ctl "$P" --json status | jq .flows_synced)" -eq "$CONNS"
peer_flows() {
	dp_ctl "$P" --json flows | jq -r '.flows[] | select(.flags | index("from-peer")) |
		"\(.protocol) \(.vip) \(.vip_port) \(.client) \(.client_port) \(.backend)"'
}
check "import: maglbctl flows lists them, from-peer, to their recorded backends" \
	diff <(recorded_flows | sort) <(peer_flows | sort)

# Every recorded key: in the synced table, to its recorded backend, with
# more than the SYN state's 10 s and at most the imported 900 s left.
lookups_synced() {
	local proto vip vport client cport backend bad=0
	while read -r proto vip vport client cport backend; do
		dp_ctl "$P" --json flow lookup "$vip" "$vport" "$proto" "$client" "$cport" |
			jq -e --arg b "$backend" '.table == "synced" and .flow.backend == $b and
				.flow.lifetime_ms > 10000 and .flow.lifetime_ms <= 900000' >/dev/null ||
			{ log "lookup $client:$cport: not synced to $backend"; bad=$((bad + 1)); }
	done < <(recorded_flows)
	[ "$bad" -eq 0 ]
}
check "import: flow lookup finds each recorded flow in the synced table, to its backend" \
	lookups_synced

touch "$dir/sync.go"
wait "$held_pid"
check "import: every held connection completes on its original backend" \
	clients_ok "$dir/sync.json"
synced_hits=$(dp_counter "$P" total SYNCED_HITS)
new_flows=$(dp_counter "$P" total NEW_FLOWS)
check "import: SYNCED_HITS >= $CONNS (SYNCED_HITS $synced_hits)" test "$synced_hits" -ge "$CONNS"
check "import: the VIP's SYNCED_HITS counter has them all (vip:web SYNCED_HITS)" \
	test "$(dp_counter "$P" vip:web SYNCED_HITS)" -eq "$synced_hits"
check "import: the restarted dataplane picked no flow by Maglev (NEW_FLOWS $new_flows)" \
	test "$new_flows" -eq 0

# Entries for a backend or a VIP not configured here are refused, counted.
printf '%s\n' "new tcp $TOPO_VIP4 $TOPO_PORT $TOPO_CLIENT4 1 198.18.0.99 60000 -" \
	"new tcp 198.18.1.2 $TOPO_PORT $TOPO_CLIENT4 2 $B1 60000 -" >"$dir/foreign.txt"
lbsync import --in "$dir/foreign.txt" >"$dir/foreign.out" 2>&1
check "import: an unknown backend and an unknown VIP are acknowledged, not applied" \
	grep -qx "imported 2 entries in 1 message (new 2, refresh 0, close 0), skipped 0 closed" \
	"$dir/foreign.out"
rejected_counted() {
	[ "$(dp_counter "$P" control IMPORT_REJECTED)" -eq 2 ] &&
		[ "$(dp_counter "$P" control IMPORTED)" -eq "$CONNS" ]
}
check "import: ... and counted: IMPORT_REJECTED == 2, IMPORTED still $CONNS" rejected_counted
# The same batch again: counted again, but logged once per 10 s, not per batch.
lbsync import --in "$dir/foreign.txt" >"$dir/foreign2.out" 2>&1
_rejected_twice() { [ "$(dp_counter "$P" control IMPORT_REJECTED)" -eq 4 ]; }
check "import: sent again, counted again (IMPORT_REJECTED == 4)" await_cond 5 _rejected_twice
check "import: ... and logged once, a warning that the nodes' configs may differ" \
	test "$(grep -c "import: 2 entries name a VIP or backend not configured here" \
		"$(topo_dir "$P")/dataplane.err")" -eq 1

# The peer's flows end: its CLOSE events remove the synced entries, whatever
# backend they name (here one this node does not have).
recorded_flows | awk '{ print "close", $1, $2, $3, $4, $5, "198.18.0.99", 0, "closing" }' \
	>"$dir/close.txt"
lbsync import --in "$dir/close.txt" --closes >"$dir/close.out" 2>&1
check "import: $CONNS close events sent" \
	grep -qx "imported $CONNS entries in 1 message (new 0, refresh 0, close $CONNS), skipped 0 closed" \
	"$dir/close.out"
check "import: the closes emptied the synced table" \
	test "$(dp_ctl "$P" --json status | jq .flows_synced)" -eq 0

# A peer's lifetime past this node's longest timeout (900 s) is capped.
echo "new tcp $TOPO_VIP4 $TOPO_PORT $TOPO_CLIENT4 3 $B1 4000000000 -" >"$dir/long.txt"
lbsync import --in "$dir/long.txt" >"$dir/long.out" 2>&1
long_capped() {
	dp_ctl "$P" --json flow lookup "$TOPO_VIP4" "$TOPO_PORT" tcp "$TOPO_CLIENT4" 3 |
		jq -e '.table == "synced" and .flow.lifetime_ms > 0 and
			.flow.lifetime_ms <= 900000' >/dev/null
}
check "import: a 4000000 s lifetime is held for 900 s at most" long_capped

# The control loop keeps its 1 ms tick with that one entry in 4 M slots:
# rte_hash_iterate() walks every empty slot, and a sweep of the synced table
# on every tick held it to one tick per ~12 ms. Counted over one second.
ticks_per_second() {
	local t0 t1
	t0=$(dp_counter "$P" control TICKS)
	sleep 1
	t1=$(dp_counter "$P" control TICKS)
	echo $((t1 - t0))
}
ticks=$(ticks_per_second)
check "control: the control loop ticks at least 500 times a second with a sparse 4 M-slot synced table ($ticks)" \
	test "$ticks" -ge 500

# --------------------------------------------------------------- c. control
restart 1 2 || exit 1
client_held control || exit 1
dataplane_flows >"$dir/control-flows.txt"
restart 1 2 3 || exit 1
# What Maglev picks now for each held flow (no table knows them): the flows
# it moves are the connections that must break.
moved=0
while read -r proto vip vport client cport backend; do
	now=$(dp_ctl "$P" --json flow lookup "$vip" "$vport" "$proto" "$client" "$cport" |
		jq -r 'select(.table == "maglev") | .flow.backend')
	[ "$now" = "$backend" ] || moved=$((moved + 1))
done <"$dir/control-flows.txt"
touch "$dir/control.go"
wait "$held_pid"
log "control run: $(jq -c '{ok, failed, backend_changed, per_backend}' "$dir/control.json")"
broke=$(jq '.failed + .backend_changed' "$dir/control.json")
check "control: without the import, Maglev alone moves some established connections: $broke of $CONNS broke" \
	test "$broke" -gt 0
check "control: the broken connections are the flows Maglev moved ($moved of $(wc -l <"$dir/control-flows.txt"))" \
	test "$broke" -eq "$moved"
# -------------------------------------------------------- d. the ring wraps
CONF_EXTRA='sync = { queue_entries = 64; };' restart 1 2 || exit 1
mv "$dir/rec.txt" "$dir/rec-a.txt"      # lbsync record appends
start_tool "$P" lbsync-record "${P}lb" "$LBTOOLS/lbsync" --service "$(dp_service "$P")" \
	record --out "$dir/rec.txt" --timeout-s 60 || exit 1
rec_pid=$(<"$rec_pidfile")
wrap_ok=0
for g in 1 2 3 4 5 6 7 8; do
	client "wrap$g" --conns 8 --rounds 1 && wrap_ok=$((wrap_ok + 1))
done
check "wrap: 8 rounds of 8 connections complete" test "$wrap_ok" -eq 8
recorded_closes() {
	awk '$1 == "close" { print $2, $3, $4, $5, $6, $7 }' "$dir/rec.txt"
}
all_closed() { [ "$(recorded_closes 2>/dev/null | wc -l)" -ge 64 ]; }
check "wrap: lbsync recorded 64 closes" await_cond 10 all_closed
kill -TERM "$rec_pid"
wait "$rec_pid"
rm -f "$rec_pidfile"
check "wrap: 64 distinct new flows" \
	test "$(recorded_flows | cut -d' ' -f1-5 | sort -u | wc -l)" -eq 64
# Every flow recorded new, established and closed, to one backend, and
# closed as many times as it was new (see d. above for two lifecycles).
established_closed() {
	diff <(recorded_flows | sort -u) <(recorded_est | sort -u) &&
		diff <(recorded_flows | sort -u) <(recorded_closes | sort -u) &&
		[ "$(recorded_flows | wc -l)" -eq "$(recorded_closes | wc -l)" ]
}
check "wrap: each flow new, established and closed, same flow and backend" established_closed
check "wrap: the recorded flows and backends are the dataplane's" \
	diff <(recorded_flows | sort -u) <(dataplane_flows | sort)
check "wrap: no export dropped (EXPORT_DROPPED 0)" \
	test "$(dp_counter "$P" total EXPORT_DROPPED)" -eq 0
check "wrap: no event batch lost on the way to lbsync (EXPORT_LOST 0)" \
	test "$(dp_counter "$P" control EXPORT_LOST)" -eq 0
check "the dataplane stops cleanly on SIGTERM" dp_stop "$P"
e2e_summary
