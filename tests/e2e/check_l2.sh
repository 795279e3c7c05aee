#!/usr/bin/env bash
# L2 direct routing end to end: real TCP (IPv4, IPv6) and UDP clients through
# maglb-dataplane on net_af_packet to three Linux backends that hold the VIP
# on lo (arp_ignore); replies go straight to the client (DSR).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. tests/e2e/dp.sh

P=e2el2-
dir=$(mktemp -d)
trap 'dp_stop "$P"; topo_teardown "$P"; rm -rf "$dir"' EXIT
topo_setup "$P" l2 || exit 1
start_backends "$P" || exit 1

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
vips = (
  { name = "tcp4"; address = "$TOPO_VIP4"; port = $TOPO_PORT; protocol = "tcp"; encap = "l2";
    backends = ( $(backends 4) ); },
  { name = "udp4"; address = "$TOPO_VIP4"; port = $TOPO_PORT; protocol = "udp"; encap = "l2";
    backends = ( $(backends 4) ); },
  { name = "tcp6"; address = "$TOPO_VIP6"; port = $TOPO_PORT; protocol = "tcp"; encap = "l2";
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
check "maglbctl flows lists the connections" \
	test "$(dp_ctl "$P" --json flows --vip tcp4 | jq '.flows | length')" -ge 60
check "the dataplane stops cleanly on SIGTERM" dp_stop "$P"
e2e_summary
