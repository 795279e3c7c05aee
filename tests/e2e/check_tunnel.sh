#!/usr/bin/env bash
# GRE and IP-in-IP end to end: real TCP through maglb-dataplane to backends
# behind a router, which decapsulate with tests/tools/decap (this kernel has
# no GRE/IPIP module) and reply straight to the client (DSR). Every outer and
# inner family: 4in4, 6in6, 4in6, 6in4, over GRE and IP-in-IP. Then the path
# MTU both ways: with a 1500-byte LB->backend segment the dataplane's
# too-big replies lower the client's path MTU, and UDP datagrams without DF
# are split by the dataplane and reassembled by the backends; with 1600
# nothing needs to.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. tests/e2e/dp.sh

P=e2etun-
dir=$(mktemp -d)
trap 'dp_stop "$P"; topo_teardown "$P"; rm -rf "$dir"' EXIT

# name vip-address encap backend-family [protocol, default tcp]
VIPS=(
	"gre44 198.18.1.1 gre 4"
	"gre66 2001:db8:1::1 gre 6"
	"ipip44 198.18.1.2 ipip 4"
	"ipip66 2001:db8:1::2 ipip 6"
	"ipip46 198.18.1.3 ipip 6"
	"gre64 2001:db8:1::3 gre 4"
	"gre44u 198.18.1.4 gre 4 udp"
)

write_config() {   # mtu [IPv4 gateway, default the router]
	local v name addr encap fam proto n bk
	{
		cat <<CONF
cluster = { hash_seed = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"; };
node = { id = 1; address = "$TOPO_LB_ADDR4"; address6 = "$TOPO_LB_ADDR6"; };
ports = ( { name = "lan0"; device = "net_af_packet0,iface=$TOPO_LB_IF"; mtu = $1;
            gateway = "${2:-$TOPO_ROUTER_ADDR4}"; gateway6 = "$TOPO_ROUTER_ADDR6"; } );
flows = { capacity = 65536; shared_capacity = 65536; };
vips = (
CONF
		for v in "${VIPS[@]}"; do
			read -r name addr encap fam proto <<<"$v"
			bk=""
			for n in 1 2 3; do
				bk+="{ address = \"$(topo_backend_addr"$fam" tunnel "$n")\"; },"
			done
			printf '  { name = "%s"; address = "%s"; port = %s; protocol = "%s"; encap = "%s";\n    backends = ( %s ); },\n' \
				"$name" "$addr" "$TOPO_PORT" "${proto:-tcp}" "$encap" "${bk%,}"
		done
	} | sed '$ s/,$//' >"$dir/maglb.conf"
	echo ");" >>"$dir/maglb.conf"
}

setup() {   # mtu
	dp_stop "$P"
	topo_setup "$P" tunnel "$1" || return 1
	local b v name addr rest
	for b in "${TOPO_BACKENDS[@]}"; do
		for v in "${VIPS[@]}"; do
			read -r name addr rest <<<"$v"
			[ "$addr" = "$TOPO_VIP4" ] || [ "$addr" = "$TOPO_VIP6" ] ||
				backend_add_vip "$P" "$b" "$addr"
		done
	done
	start_backends "$P" || return 1
	write_config "$1"
	dp_start "$P" "$dir/maglb.conf"
}

client() {   # name addr [lbclient args]
	local name=$1 addr=$2
	shift 2
	run_in "${P}c" "$LBTOOLS/lbclient" --connect "$addr" "$TOPO_PORT" --json "$@" \
		>"$dir/$name.json" 2>"$dir/$name.err"
}

setup 1500 || exit 1
for v in "${VIPS[@]}"; do
	read -r name addr encap fam proto <<<"$v"
	[ -z "$proto" ] || continue
	client "$name" "$addr" --conns 60 --rounds 3
	check "$name ($encap, VIP $addr, IPv$fam backends): 60 TCP connections, one backend each, each backend at least 5" \
		clients_ok "$dir/$name.json" 5
done

# Path MTU, segment 1500: full-size segments do not fit once encapsulated.
client big4 198.18.1.1 --conns 5 --rounds 3 --line-bytes 4000
check "GRE over IPv4, MTU 1500: 4000-byte requests get through (PMTU lowered)" \
	clients_ok "$dir/big4.json"
client big6 2001:db8:1::1 --conns 5 --rounds 3 --line-bytes 4000
check "GRE over IPv6, MTU 1500: 4000-byte requests get through (PMTU lowered)" \
	clients_ok "$dir/big6.json"
check "the dataplane sent too-big replies (TOO_BIG_SENT > 0)" \
	test "$(dp_counter "$P" total TOO_BIG_SENT)" -gt 0
# 1472 bytes of UDP: a 1500-byte packet, 1524 once in GRE over IPv4.
too_big=$(dp_counter "$P" total TOO_BIG_SENT)
client nodf4 198.18.1.4 --udp --no-df --conns 10 --rounds 3 --line-bytes 1472
check "GRE over IPv4, MTU 1500: 1500-byte UDP datagrams without DF arrive whole" \
	clients_ok "$dir/nodf4.json"
check "the dataplane split them (FRAGMENTED >= 30), no too-big reply about them" \
	test "$(dp_counter "$P" total FRAGMENTED)" -ge 30 -a \
	"$(dp_counter "$P" total TOO_BIG_SENT)" -eq "$too_big"

# Segment 1600: room for the tunnel header, no too-big reply needed.
setup 1600 || exit 1
client jumbo4 198.18.1.1 --conns 5 --rounds 3 --line-bytes 4000
check "GRE over IPv4, MTU 1600: 4000-byte requests get through" clients_ok "$dir/jumbo4.json"
client jumbo6 2001:db8:1::1 --conns 5 --rounds 3 --line-bytes 4000
check "GRE over IPv6, MTU 1600: 4000-byte requests get through" clients_ok "$dir/jumbo6.json"
check "no too-big reply with room for the header" \
	test "$(dp_counter "$P" total TOO_BIG_SENT)" -eq 0

# Next hops follow reloads: the tunnels resolve the two gateways; moved to
# another IPv4 gateway, the old one is forgotten (not resolved for ever).
check "the neighbour table holds the two gateways" \
	test "$(dp_counter "$P" control NEIGHBOURS)" -eq 2
write_config 1600 198.18.0.254
check "reload with another IPv4 gateway: exit 0" dp_ctl "$P" reload
check "reload: the old gateway is forgotten, the new one wanted (2 neighbours)" \
	test "$(dp_counter "$P" control NEIGHBOURS)" -eq 2
check "the dataplane stops cleanly on SIGTERM" dp_stop "$P"
e2e_summary
