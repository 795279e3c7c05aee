#!/usr/bin/env bash
# Flow sync between three nodes with the real programs (suite cluster): each
# node a network namespace with its own corosync, maglb-dataplane and
# maglb-syncd; real TCP through node 1 ("A"), where the router sends the VIP.
#  a. replication: connections opened through A reach B's and C's synced
#     tables with A's backend, flow by flow; syncd's lag p99 (A's syncd
#     getting the export to B's and C's dataplanes acknowledging the
#     import) is within 100 ms; the time from the clients holding them to
#     the tables being whole is printed (polled with maglbctl, which adds
#     its own tens of ms); sync verify agrees;
#  b. a SYN flood (spoofed clients) through A adds no sync message and no
#     entry on B or C: TCP entries are replicated once established (checked
#     once a connection made after the flood has reached B);
#  c. resync under traffic: C's syncd restarts (an empty cache) while new
#     connections keep arriving through A; once C is synced again it holds
#     every live flow of A, flow by flow, and sync verify agrees;
#  d. a second process under B's node id sending garbage into the group
#     (tests/tools/cpgjunk): a foreign member (syncd trusts one process per
#     node id), so every syncd drops all of it unread (foreign_messages),
#     applies none of it and keeps running; the same into the membership
#     group (maglb:/membership), and every node keeps the roles it had
#     (the decoders meet garbage in the unit tests and fuzzers);
#  e. a peer with a different config: C gets a VIP ("web2") that A and B
#     lack; connections through C to it are refused by A and B (counted as
#     rejected_vip), never imported.
# Prints its figures; cleans up on exit, leftovers of its prefix first.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/cluster.sh

P=${MAGLB_E2E_PREFIX:-e2ecs-}
CONNS=200
LAG_BOUND_MS=100
SYN_FLOOD=3000
WEB2_VIP=198.18.1.2

dir=$(mktemp -d)
E2E_PASSED=0 E2E_FAILED=0
cluster_on_exit "$P" "$dir"     # it exits non-zero when a check failed

now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }

sync_json() { cluster_run "$P" "$1" "$MAGLB_BUILD/ctl/maglbctl" --json --sync-service "$(cluster_syncd_service "$P" "$1")" sync; }
# sync_value I GROUP_COUNTER: one counter of group default on node I.
sync_value() { sync_json "$1" | jq -r --arg n "$2" '.groups[] | select(.name == "default") | .[$n] // 0'; }
node_value() { sync_json "$1" | jq -r --arg n "$2" '.node[$n] // 0'; }
synced() { [ "$(node_value "$1" synced)" = 1 ]; }
# verify I [GROUP]: maglbctl sync verify on node I.
verify() {
	local i=$1
	shift
	cluster_run "$P" "$i" "$MAGLB_BUILD/ctl/maglbctl" --sync-service \
		"$(cluster_syncd_service "$P" "$i")" sync verify "$@"
}

# Flows as "proto vip vport client cport backend": a node's own established
# ones (worker tables; a flow only SYN'd is not replicated), or its entries
# learnt from peers (its synced table).
own_flows() {
	cluster_ctl "$P" "$1" --json flows |
		jq -r '.flows[] | select((.flags | index("from-peer") | not) and (.flags | index("established"))) |
			"\(.protocol) \(.vip) \(.vip_port) \(.client) \(.client_port) \(.backend)"' | sort
}
peer_flows() {
	cluster_ctl "$P" "$1" --json flows |
		jq -r '.flows[] | select(.flags | index("from-peer")) |
			"\(.protocol) \(.vip) \(.vip_port) \(.client) \(.client_port) \(.backend)"' | sort
}
flows_synced() { cluster_ctl "$P" "$1" --json status | jq -r '.flows_synced'; }
synced_at_least() { [ "$(flows_synced "$1")" -ge "$2" ]; }

# client NAME VIP ARGS...: lbclient from the client namespace, JSON to NAME.json.
client() {
	local name=$1 vip=$2
	shift 2
	run_in "${P}c" "$LBTOOLS/lbclient" --connect "$vip" "$TOPO_PORT" --json "$@" \
		>"$dir/$name.json" 2>"$dir/$name.err"
}
# held NAME N [VIP]: N connections held open after their first round, in
# the background (pid in held_pid_NAME); returns once they are all held.
held() {
	local name=$1 n=$2 vip=${3:-$TOPO_VIP4}
	client "$name" "$vip" --conns "$n" --rounds 2 --hold-file "$dir/$name.go" \
		--held-file "$dir/$name.held" --timeout-s 240 &
	eval "held_pid_$name=$!"
	await_cond 60 test -e "$dir/$name.held"
}
release() {
	local name=$1 pid
	eval "pid=\$held_pid_$name"
	touch "$dir/$name.go"
	wait "$pid"
	clients_ok "$dir/$name.json"
}

# ------------------------------------------------------------------ set-up
cluster_setup "$P" 3 && start_backends "$P" || exit 1
for n in 1 2 3; do backend_add_vip "$P" "b$n" "$WEB2_VIP" || exit 1; done
for i in 1 2 3; do
	cluster_corosync_start "$P" "$i" || exit 1
done
cluster_await_members "$P" 1 3 || exit 1
for i in 1 2 3; do
	cluster_config "$P" "$i" "$dir/n$i.conf" && cluster_dataplane_start "$P" "$i" "$dir/n$i.conf" ||
		exit 1
done
for i in 1 2 3; do
	cluster_syncd_start "$P" "$i" "$dir/n$i.conf" || exit 1
done
for i in 1 2 3; do
	await_cond 30 synced "$i" || { log "node $i: syncd not synced"; exit 1; }
done

# ------------------------------------------------------------ a. replication
held a "$CONNS" || exit 1
t0=$(now_ms)
await_cond 10 synced_at_least 2 "$CONNS"
t2=$(now_ms)
await_cond 10 synced_at_least 3 "$CONNS"
t3=$(now_ms)
lag2=$(sync_value 2 import_lag_p99_us)
lag3=$(sync_value 3 import_lag_p99_us)
echo "replication: $CONNS connections held through A; seen whole in B's synced table" \
	"$((t2 - t0)) ms and in C's $((t3 - t0)) ms after (polled); syncd lag p99 B $((lag2 / 1000)) ms," \
	"C $((lag3 / 1000)) ms"
check "replication: B and C hold the $CONNS flows (polled: $((t2 - t0)) and $((t3 - t0)) ms)" \
	synced_at_least 3 "$CONNS"
check "replication: syncd's lag p99 within ${LAG_BOUND_MS} ms (B $((lag2 / 1000)), C $((lag3 / 1000)) ms)" \
	test "$lag2" -le $((LAG_BOUND_MS * 1000)) -a "$lag3" -le $((LAG_BOUND_MS * 1000))
own_flows 1 >"$dir/a.flows"
peer_flows 2 >"$dir/b.flows"
peer_flows 3 >"$dir/c.flows"
check "replication: A holds the $CONNS flows ($(wc -l <"$dir/a.flows"))" test "$(wc -l <"$dir/a.flows")" -eq "$CONNS"
check "replication: B's synced entries are A's flows, backend included" diff "$dir/a.flows" "$dir/b.flows"
check "replication: C's synced entries are A's flows, backend included" diff "$dir/a.flows" "$dir/c.flows"
check "replication: sync verify agrees" verify 2
verify 2
no_such_group() {
	local out rc=0
	out=$(verify 2 nosuch 2>&1) || rc=$?
	[ "$rc" -eq 1 ] && [[ $out == *"no sync group 'nosuch'"* ]]
}
check "replication: sync verify of a group the node lacks exits 1, saying so" no_such_group

# ------------------------------------------------------------- b. SYN flood
exported_before=$(node_value 1 export_entries)
received_before=$(sync_value 2 entries_received)
new_before=$(cluster_counter "$P" 1 total NEW_FLOWS)
# Spoofed clients 198.18.10.100-199, each SYN from its own port: raw socket.
run_in "${P}c" python3 - "$TOPO_VIP4" "$TOPO_PORT" "$SYN_FLOOD" <<'EOF'
import socket, struct, sys
vip, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def csum(b):
    if len(b) % 2: b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
dst = socket.inet_aton(vip)
for i in range(n):
    src = socket.inet_aton('198.18.10.%d' % (100 + i % 100))
    sport = 20000 + i
    tcp = struct.pack('!HHIIBBHHH', sport, port, i, 0, 5 << 4, 0x02, 64240, 0, 0)
    c = csum(src + dst + struct.pack('!BBH', 0, 6, len(tcp)) + tcp)
    tcp = tcp[:16] + struct.pack('!H', c) + tcp[18:]
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp), i & 0xffff, 0, 64, 6, 0, src, dst)
    s.sendto(ip + tcp, (vip, 0))
EOF
flood_seen() { [ "$(cluster_counter "$P" 1 total NEW_FLOWS)" -ge $((new_before + SYN_FLOOD * 9 / 10)) ]; }
await_cond 20 flood_seen
new_after=$(cluster_counter "$P" 1 total NEW_FLOWS)
# A barrier: one connection after the flood, held (it closes with a's). Its
# entry follows the flood's packets through A's worker, A's export ring,
# syncd and CPG's agreed order: once B holds it, whatever the flood made
# A export has reached B too.
held marker 1 || exit 1
comm -13 "$dir/a.flows" <(own_flows 1) >"$dir/marker.flow"
marker_at_b() { [ -s "$dir/marker.flow" ] && peer_flows 2 | grep -qxFf "$dir/marker.flow"; }
check "syn flood: the marker connection after it reached B's synced table" await_cond 20 marker_at_b
exported_after=$(node_value 1 export_entries)
received_after=$(sync_value 2 entries_received)
echo "syn flood: $SYN_FLOOD spoofed SYNs, A made $((new_after - new_before)) entries; exported" \
	"$((exported_after - exported_before)), B received $((received_after - received_before))" \
	"(the marker's 1 included)"
check "syn flood: the SYNs reached A's dataplane ($((new_after - new_before)) new entries)" flood_seen
check "syn flood: A exported nothing to syncd but the marker ($((exported_after - exported_before)))" \
	test "$exported_after" -eq $((exported_before + 1))
check "syn flood: B received no entry but the marker ($((received_after - received_before)))" \
	test "$received_after" -eq $((received_before + 1))
check "syn flood: B's synced table holds just the $CONNS flows and the marker" \
	test "$(flows_synced 2)" -eq $((CONNS + 1))

# ------------------------------------------------- c. resync under traffic
cluster_syncd_kill9 "$P" 3
# New connections keep coming through A while C's syncd restarts and resyncs.
traffic() {
	local k=0
	while [ ! -e "$dir/traffic.stop" ]; do
		k=$((k + 1))
		client "t$k" "$TOPO_VIP4" --conns 20 --rounds 2 --hold-file "$dir/traffic.go" \
			--held-file "$dir/t$k.held" --timeout-s 240 &
		await_cond 30 test -e "$dir/t$k.held" || break
	done
	echo "$k" >"$dir/traffic.batches"
	wait
}
traffic &
traffic_pid=$!
await_cond 30 test -e "$dir/t2.held"
t0=$(now_ms)
cluster_syncd_start "$P" 3 "$dir/n3.conf" || exit 1
await_cond 60 synced 3
resynced=$?
t1=$(now_ms)
touch "$dir/traffic.stop"
await_cond 60 test -e "$dir/traffic.batches"
batches=$(<"$dir/traffic.batches")
live=$(own_flows 1 | wc -l)
resync_ms=$(sync_value 3 resync_last_ms)
resync_entries=$(sync_value 3 resync_entries_received)
echo "resync: C's syncd restarted; synced after $((t1 - t0)) ms (resync $resync_ms ms," \
	"$resync_entries entries streamed) while $batches batches of 20 connections came through A"
settled() { [ "$(own_flows 1 | wc -l)" -eq "$(peer_flows 3 | wc -l)" ]; }
await_cond 10 settled
own_flows 1 >"$dir/a2.flows"
peer_flows 3 >"$dir/c2.flows"
check "resync: C's syncd reports synced again ($((t1 - t0)) ms)" test "$resynced" -eq 0
check "resync: new connections arrived during it ($batches batches, $live live flows on A)" \
	test "$live" -gt "$CONNS"
check "resync: C holds every live flow of A, flow by flow ($(wc -l <"$dir/c2.flows") of $live)" \
	diff "$dir/a2.flows" "$dir/c2.flows"
check "resync: sync verify agrees" verify 3
touch "$dir/traffic.go"
wait "$traffic_pid"
traffic_ok() {
	local f
	for f in "$dir"/t*.json; do
		clients_ok "$f" || return 1
	done
}
check "resync: every connection made during it succeeded" traffic_ok

# --------------------------------------------------------- d. garbage member
entries_before=$(node_value 2 entries)
cluster_run "$P" 2 "$LBTOOLS/cpgjunk" --group maglb:default --count 20 >"$dir/junk.out" || exit 1
# JUNK_MIN: what cpgjunk sends but its 20 empty messages (CPG may refuse them)
JUNK_MIN=120
foreign_messages() { cluster_syncd_counter "$P" "$1" "$2" foreign_messages; }
junk_counted() {
	local i
	for i in 1 2 3; do
		[ "$(foreign_messages "$i" cpg)" -ge "$JUNK_MIN" ] || return 1
	done
}
await_cond 10 junk_counted
for i in 1 2 3; do
	echo "garbage: node $i foreign_messages $(foreign_messages "$i" cpg) drop_decode" \
		"$(sync_value "$i" drop_decode) drop_sender $(sync_value "$i" drop_sender)" \
		"rejected_vip $(sync_value "$i" rejected_vip)"
done
check "garbage: $(cat "$dir/junk.out"); every syncd counted it" junk_counted
check "garbage: every syncd still runs" \
	test -z "$(for i in 1 2 3; do _pid_gone "$(<"$(topo_dir "$P")/syncd-n$i.pid")" && echo "$i"; done)"
check "garbage: B holds what it held ($entries_before entries)" \
	test "$(node_value 2 entries)" -eq "$entries_before"
check "garbage: sync verify agrees" verify 1

# The same garbage into the membership group: dropped unread, so no role
# moves.
cluster_counter_sum() {   # NAME: that "cluster" counter of the 3 syncds, summed
	local i sum=0
	for i in 1 2 3; do
		sum=$((sum + $(cluster_syncd_counter "$P" "$i" cluster "$1")))
	done
	echo "$sum"
}
roles() {
	local i
	for i in 1 2 3; do
		cluster_syncd_ctl "$P" "$i" --json cluster | jq -c '[.members[] | [.id, .role]]'
	done
}
roles_before=$(roles)
cluster_run "$P" 2 "$LBTOOLS/cpgjunk" --group maglb:/membership --count 20 \
	>"$dir/junk2.out" || exit 1
membership_junk_counted() {
	local i
	for i in 1 2 3; do
		[ "$(foreign_messages "$i" cluster_cpg)" -ge "$JUNK_MIN" ] || return 1
	done
}
await_cond 10 membership_junk_counted
echo "garbage into maglb:/membership: foreign_messages" \
	"$(for i in 1 2 3; do foreign_messages "$i" cluster_cpg; done | paste -sd ' ')" \
	"drop_decode $(cluster_counter_sum drop_decode) drop_sender $(cluster_counter_sum drop_sender)" \
	"(3 nodes)"
check "garbage into the membership group: $(cat "$dir/junk2.out"); every syncd counted it" \
	membership_junk_counted
check "garbage into the membership group: every node keeps its roles" \
	test "$(roles)" = "$roles_before"

# ------------------------------------------------------- e. config mismatch
rejected_before=$(sync_value 1 rejected_vip)
cluster_config "$P" 3 "$dir/n3.conf" || exit 1
python3 - "$dir/n3.conf" "$WEB2_VIP" <<'EOF'
import re, sys
path, vip = sys.argv[1], sys.argv[2]
s = open(path).read()
m = re.search(r'\{ name = "web";.*?\}\s*\)\s*;?\s*\}', s, re.S)
web2 = m.group(0).replace('name = "web"', 'name = "web2"', 1).replace('"198.18.1.1"', '"%s"' % vip, 1)
s = s[:m.end()] + ',\n' + web2 + s[m.end():]
open(path, 'w').write(s)
EOF
grep -q web2 "$dir/n3.conf" || { log "could not add web2 to n3.conf"; exit 1; }
cluster_ctl "$P" 3 reload >/dev/null || exit 1
kill -HUP "$(<"$(topo_dir "$P")/syncd-n3.pid")"
await_cond 10 grep -q "reloaded" "$(topo_dir "$P")/syncd-n3.err"
cluster_route_to "$P" 3
held w2 50 "$WEB2_VIP" || exit 1
rejected_by_a() { [ "$(sync_value 1 rejected_vip)" -ge $((rejected_before + 50)) ]; }
await_cond 10 rejected_by_a
echo "config mismatch: 50 connections to web2 through C; A rejected" \
	"$(($(sync_value 1 rejected_vip) - rejected_before)), B rejected $(sync_value 2 rejected_vip) (in all)"
check "config mismatch: A refused C's 50 entries for a VIP it lacks (rejected_vip)" rejected_by_a
check "config mismatch: A's dataplane imported none of them" \
	test -z "$(peer_flows 1 | grep " $WEB2_VIP ")"
check "config mismatch: C itself holds them" test "$(own_flows 3 | grep -c " $WEB2_VIP ")" -eq 50
release w2
cluster_route_to "$P" 1

check "replication: the held connections through A all succeed" release a
check "syn flood: the marker connection succeeds" release marker
echo "checks: $E2E_PASSED passed, $E2E_FAILED failed"
[ "$E2E_FAILED" -eq 0 ]
