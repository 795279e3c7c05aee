#!/usr/bin/env bash
# Backend changes and reloads while connections are open, end to end:
#  - weight 0 (drain): open connections finish on their backend, new ones avoid it;
#  - down: the backend gets no new connections and no more packets;
#  - up: it takes new connections again;
#  - reload: a bad file is refused with file:line and the running config stays;
#    a good one (a backend added) keeps established connections on their backends;
#    new flow timeouts hold for the entries already there; a new table size
#    is logged as waiting for a restart.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. tests/e2e/dp.sh

dp_l2_setup e2ebk- || exit 1

write_config() { dp_l2_web_config "$dir/maglb.conf" "$@"; }   # backends (numbers)
write_config 1 2 3
dp_start "$P" "$dir/maglb.conf" || exit 1

B1=$(topo_backend_addr4 l2 1)
B2=$(topo_backend_addr4 l2 2)

client() {   # name [lbclient args]
	local name=$1
	shift
	run_in "${P}c" "$LBTOOLS/lbclient" --connect "$TOPO_VIP4" "$TOPO_PORT" --json "$@" \
		>"$dir/$name.json" 2>"$dir/$name.err"
}

# Long connections held open after their first request.
client open --conns 60 --rounds 4 --hold-file "$dir/go" --held-file "$dir/held" --timeout-s 60 &
open_pid=$!
await_cond 20 test -e "$dir/held" || exit 1

# The flow gauge: a fresh dataplane, 60 open connections, 60 entries.
vip_flows() { dp_ctl "$P" --json vips web | jq -r '.vips[0].flows'; }
backend_flows() {
	dp_ctl "$P" --json counters backend:web |
		jq '[.counters[] | select(.name | endswith(" FLOWS")) | .value] | add'
}
check "flows: maglbctl vips counts the 60 open connections" test "$(vip_flows)" -eq 60
check "flows: the VIP's figure is its backends' FLOWS counters summed" \
	test "$(backend_flows)" -eq "$(vip_flows)"

check "drain: maglbctl backend drain exits 0" dp_ctl "$P" backend drain web "$B1"
check "drain: b1 shows weight 0, draining" \
	sh -c "$(declare -f dp_ctl dp_service); P=$P MAGLB_BUILD=$MAGLB_BUILD; \
	       dp_ctl $P --json backends web | jq -e '.backends[] | select(.address == \"$B1\") | .weight == 0 and .state == \"draining\"' >/dev/null"
client new --conns 60 --rounds 2
check "drain: 60 new connections answered, none by b1" \
	sh -c "jq -e '.ok == .conns and .backend_changed == 0 and (.per_backend.b1 // 0) == 0' '$dir/new.json' >/dev/null"
touch "$dir/go"
wait "$open_pid"
check "drain: the open connections finished on their backends, b1's included" \
	clients_ok "$dir/open.json"
check "drain: b1 had open connections to finish" test "$(served_by "$dir/open.json" b1)" -gt 0
dp_ctl "$P" backend set-weight web "$B1" 1

check "down: maglbctl backend down exits 0" dp_ctl "$P" backend down web "$B2"
before=$(dp_counter "$P" backend:web "$B2 PACKETS")
client down --conns 60 --rounds 2
check "down: 60 new connections answered, none by b2" \
	sh -c "jq -e '.ok == .conns and (.per_backend.b2 // 0) == 0' '$dir/down.json' >/dev/null"
check "down: b2 got no packet meanwhile" \
	test "$(dp_counter "$P" backend:web "$B2 PACKETS")" -eq "$before"
check "up: maglbctl backend up exits 0" dp_ctl "$P" backend up web "$B2"
client up --conns 60 --rounds 2
check "up: b2 takes new connections again" test "$(served_by "$dir/up.json" b2)" -gt 0

check "bad arguments: weight 1001 is refused with exit 2" \
	sh -c "$(declare -f dp_ctl dp_service); P=$P MAGLB_BUILD=$MAGLB_BUILD; \
	       dp_ctl $P backend set-weight web $B1 1001 2>/dev/null; test \$? -eq 2"
check "unknown backend: refused by the dataplane with exit 1" \
	sh -c "$(declare -f dp_ctl dp_service); P=$P MAGLB_BUILD=$MAGLB_BUILD; \
	       dp_ctl $P backend down web 198.18.0.99 2>/dev/null; test \$? -eq 1"

# Reloads while connections are open.
client reload --conns 30 --rounds 4 --hold-file "$dir/go2" --held-file "$dir/held2" --timeout-s 60 &
reload_pid=$!
await_cond 20 test -e "$dir/held2" || exit 1
cp "$dir/maglb.conf" "$dir/good.conf"
printf 'vips = ( { name = "web"; port = 70000; } );\n' >>"$dir/maglb.conf"
dp_ctl "$P" reload >"$dir/bad.out" 2>&1
check "reload of a bad file: refused (exit 1) with file:line: reason" \
	sh -c "grep -q 'maglb.conf:[0-9]*: ' '$dir/bad.out'"
check "reload of a bad file: the running config stays (reload errors counted)" \
	test "$(dp_counter "$P" control RELOAD_ERRORS)" -eq 1
write_config 1 2 3 4
check "reload adding a backend: exit 0" dp_ctl "$P" reload
check "reload: the VIP now has four backends" \
	test "$(dp_ctl "$P" --json backends web | jq '.backends | length')" -eq 4
reloads=$(dp_counter "$P" control RELOADS)
more_reloads() { [ "$(dp_counter "$P" control RELOADS)" -gt "$reloads" ]; }
kill -HUP "$(<"$(topo_dir "$P")/dataplane.pid")"
check "SIGHUP reloads the config too" await_cond 5 more_reloads
touch "$dir/go2"
wait "$reload_pid"
check "reload: open connections kept their backends" clients_ok "$dir/reload.json"

# Timeouts by reload: idle connections' entries expire, the connections go on.
# (Back to the three backends that run first: the fourth was only configured.)
write_config 1 2 3
check "reload back to three backends: exit 0" dp_ctl "$P" reload
client idle --conns 20 --rounds 2 --hold-file "$dir/go3" --held-file "$dir/held3" --timeout-s 60 &
idle_pid=$!
await_cond 20 test -e "$dir/held3" || exit 1
check "20 idle connections hold flow entries" test "$(vip_flows)" -ge 20
FLOWS_CAPACITY=131072 FLOWS_EXTRA='timeouts = { tcp_established = 1; tcp_closing = 1; };' \
	write_config 1 2 3
check "reload with 1 s TCP timeouts and a new capacity: exit 0" dp_ctl "$P" reload
no_flows() { [ "$(vip_flows)" -eq 0 ]; }
check "reload: the idle connections' entries expire in seconds, not in 900" \
	await_cond 10 no_flows
check "reload: the new capacity is logged as waiting for a restart" \
	grep -q 'flows.capacity changed' "$(topo_dir "$P")/dataplane.err"
touch "$dir/go3"
wait "$idle_pid"
check "connections whose entries expired keep their backend (Maglev picks it again)" \
	clients_ok "$dir/idle.json"
check "the dataplane stops cleanly on SIGTERM" dp_stop "$P"
e2e_summary
