#!/usr/bin/env bash
# L2 direct routing end to end: real TCP (IPv4, IPv6) and UDP clients through
# maglb-dataplane on net_af_packet to three Linux backends that hold the VIP
# on lo (arp_ignore); replies go straight to the client (DSR).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. tests/e2e/dp.sh

dp_l2_setup e2el2- || exit 1

# VIPs on the LB segment itself: the router reaches them by ARP / ND, which
# the dataplane answers only while it owns them.
LINK4=198.18.0.100
LINK6=2001:db8::100
for b in "${TOPO_BACKENDS[@]}"; do
	backend_add_vip "$P" "$b" "$LINK4"
	backend_add_vip "$P" "$b" "$LINK6"
done

backends() {   # family: the three backends with their MACs
	local n out=""
	for n in 1 2 3; do
		out+="{ address = \"$(topo_backend_addr"$1" l2 "$n")\"; mac = \"$(topo_backend_mac l2 "$n")\"; },"
	done
	printf '%s' "${out%,}"
}
cat >"$dir/maglb.conf" <<CONF
cluster = { hash_seed = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"; };
node = { id = 1; address = "$TOPO_LB_ADDR4"; address6 = "$TOPO_LB_ADDR6"; };
ports = ( { name = "lan0"; device = "net_af_packet0,iface=$TOPO_LB_IF"; } );
flows = { capacity = 65536; shared_capacity = 65536; };
# An export ring of 127 records, fewer than the run's events: it holds only
# if the control thread frees them (no syncd subscribes in this test).
sync = { queue_entries = 128; };
vips = (
  { name = "tcp4"; address = "$TOPO_VIP4"; port = $TOPO_PORT; protocol = "tcp"; encap = "l2";
    backends = ( $(backends 4) ); },
  { name = "udp4"; address = "$TOPO_VIP4"; port = $TOPO_PORT; protocol = "udp"; encap = "l2";
    backends = ( $(backends 4) ); },
  { name = "tcp6"; address = "$TOPO_VIP6"; port = $TOPO_PORT; protocol = "tcp"; encap = "l2";
    backends = ( $(backends 6) ); },
  { name = "link4"; address = "$LINK4"; port = $TOPO_PORT; protocol = "tcp"; encap = "l2";
    backends = ( $(backends 4) ); },
  { name = "link6"; address = "$LINK6"; port = $TOPO_PORT; protocol = "tcp"; encap = "l2";
    backends = ( $(backends 6) ); }
);
CONF
dp_start "$P" "$dir/maglb.conf" || exit 1

client() {   # name addr [lbclient args]: run the client, JSON to $dir/name.json
	local name=$1 addr=$2
	shift 2
	run_in "${P}c" "$LBTOOLS/lbclient" --connect "$addr" "$TOPO_PORT" --json "$@" \
		>"$dir/$name.json" 2>"$dir/$name.err"
}

client tcp4 "$TOPO_VIP4" --conns 60 --rounds 3
check "IPv4 TCP: 60 connections answered, each by one backend, all three used" \
	clients_ok "$dir/tcp4.json" 5
client tcp6 "$TOPO_VIP6" --conns 60 --rounds 3
check "IPv6 TCP: 60 connections answered, each by one backend, all three used" \
	clients_ok "$dir/tcp6.json" 5
client udp4 "$TOPO_VIP4" --conns 60 --rounds 3 --udp
check "IPv4 UDP: 60 flows answered, each by one backend, all three used" \
	clients_ok "$dir/udp4.json" 5
check "flows recorded in the worker's table (NEW_FLOWS >= 180)" \
	test "$(dp_counter "$P" total NEW_FLOWS)" -ge 180
check "no packet dropped for lack of a backend or neighbour" \
	test "$(( $(dp_counter "$P" total NO_BACKEND) + $(dp_counter "$P" total NO_NEIGHBOUR) ))" -eq 0
# No syncd subscribes here: the control thread frees the export records
# unread and counts them (each TCP connection's NEW once established and its
# CLOSE; the UDP flows, provisional for their first 3 s, export nothing yet:
# more than the ring holds).
_unsubscribed_drained() {
	test "$(dp_counter "$P" control EXPORT_NO_SUBSCRIBER)" -ge 240
}
check "no syncd: the export records freed and counted (EXPORT_NO_SUBSCRIBER >= 240)" \
	await_cond 5 _unsubscribed_drained
check "no syncd: no export record dropped at the worker (EXPORT_DROPPED 0)" \
	test "$(dp_counter "$P" total EXPORT_DROPPED)" -eq 0
# The router's view of an on-link VIP: the MAC it resolved, if any.
router_mac() {
	ip -n "${P}r" neigh show "$1" | sed -n 's/.* lladdr \([0-9a-f:]*\) .*/\1/p'
}
_resolved() { [ "$(router_mac "$1")" = "$TOPO_LB_MAC" ]; }
# resolve ADDR: have the router resolve ADDR (a UDP datagram to it makes the
# kernel ask) and await the answer: true once it has the LB's MAC (3 s).
resolve() {
	ip -n "${P}r" neigh flush to "$1" 2>/dev/null
	ip netns exec "${P}r" bash -c "echo x > /dev/udp/$1/9" 2>/dev/null
	await_cond 3 _resolved "$1" 2>/dev/null
}
unresolved() { ! resolve "$1"; }
check "not owned: nobody answers ARP for $LINK4" unresolved "$LINK4"
check "vip own link4 --announce, vip own link6: exit 0" \
	sh -c "$(declare -f dp_ctl dp_service); P=$P MAGLB_BUILD=$MAGLB_BUILD; \
	       dp_ctl $P vip own link4 --announce && dp_ctl $P vip own link6"
check "owned: the dataplane answers ARP for $LINK4" resolve "$LINK4"
check "owned: the dataplane answers ND for $LINK6" resolve "$LINK6"
# at once, then +100, +200, +400 and +800 ms: one lost frame must not leave
# the router on a dead MAC
five_announcements() { [ "$(dp_counter "$P" control ANNOUNCES)" -eq 5 ]; }
check "owned: five announcements sent (gratuitous ARP, repeated)" await_cond 5 five_announcements
client link4 "$LINK4" --conns 60 --rounds 2
check "IPv4 TCP to the on-link VIP, through the router's ARP entry" clients_ok "$dir/link4.json" 5
client link6 "$LINK6" --conns 60 --rounds 2
check "IPv6 TCP to the on-link VIP, through the router's ND entry" clients_ok "$dir/link6.json" 5
dp_ctl "$P" vip disown link4
exit_is() {   # code cmd...: cmd exits with code
	local want=$1
	shift
	"$@" >/dev/null 2>&1
	[ $? -eq "$want" ]
}
check "vip own of an unknown VIP: refused by the dataplane (exit 1)" exit_is 1 dp_ctl "$P" vip own nosuch
check "vip with bad arguments: exit 2" exit_is 2 dp_ctl "$P" vip disown link4 --announce
check "disowned: ARP for $LINK4 unanswered again" unresolved "$LINK4"
# Path MTU discovery across the load balancer (DSR), after a backend change.
# The router's path to the client takes 1400 bytes: a backend's full-size
# replies get the router's "fragmentation needed", sent to their source, the
# VIP, so to the dataplane, which must hand it to the backend of that flow,
# or the transfer stalls. Connections are held open after small replies and
# b1 is drained: its flows stay, but Maglev no longer picks it, so only the
# flow table can take b1's errors to b1.
B1=$(topo_backend_addr4 l2 1)
ip -n "${P}r" route replace 198.18.10.0/24 dev rc mtu lock 1400
icmp_before=$(dp_counter "$P" total ICMP_ERRORS)
client pmtu4 "$TOPO_VIP4" --conns 30 --rounds 3 --first-line-bytes 0 --line-bytes 4000 \
	--hold-file "$dir/go" --held-file "$dir/held" --timeout-s 30 &
pmtu_pid=$!
await_cond 20 test -e "$dir/held" || exit 1
check "PMTU: drain b1 while connections are open" dp_ctl "$P" backend drain tcp4 "$B1"
touch "$dir/go"
wait "$pmtu_pid"
check "PMTU: 4000-byte replies over a 1400-byte path, all connections complete" \
	clients_ok "$dir/pmtu4.json"
check "PMTU: b1 served some of them (after its drain)" \
	test "$(served_by "$dir/pmtu4.json" b1)" -gt 0
check "PMTU: the router's errors went through the dataplane to the backends" \
	test "$(dp_counter "$P" total ICMP_ERRORS)" -gt "$icmp_before"
ip -n "${P}r" route replace 198.18.10.0/24 dev rc
dp_ctl "$P" backend set-weight tcp4 "$B1" 1
check "maglbctl flows lists the connections" \
	test "$(dp_ctl "$P" --json flows --vip tcp4 | jq '.flows | length')" -ge 60
check "the dataplane stops cleanly on SIGTERM" dp_stop "$P"
e2e_summary
