#!/usr/bin/env bash
# Jumbo frames end to end: the l2 topology with MTU 9000 on every link,
# maglb-dataplane on net_af_packet with frames large enough for them, real
# TCP and UDP with 8,000-byte payloads (UDP with DF: a datagram that did not
# pass whole would never be answered).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. tests/e2e/dp.sh

P=e2ejumbo-
dir=$(mktemp -d)
trap 'dp_stop "$P"; topo_teardown "$P"; rm -rf "$dir"' EXIT
topo_setup "$P" l2 9000 && start_backends "$P" || exit 1

backends() {
	local n out=""
	for n in 1 2 3; do
		out+="{ address = \"$(topo_backend_addr4 l2 "$n")\"; mac = \"$(topo_backend_mac l2 "$n")\"; },"
	done
	printf '%s' "${out%,}"
}
# af_packet's ring frames hold 2048 bytes unless told otherwise.
cat >"$dir/maglb.conf" <<CONF
cluster = { hash_seed = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"; };
node = { id = 1; address = "$TOPO_LB_ADDR4"; };
ports = ( { name = "lan0"; mtu = 9000; mbufs = 4096;
            device = "net_af_packet0,iface=$TOPO_LB_IF,framesz=9216,blocksz=36864"; } );
vips = (
  { name = "tcp4"; address = "$TOPO_VIP4"; port = $TOPO_PORT; protocol = "tcp"; encap = "l2";
    backends = ( $(backends) ); },
  { name = "udp4"; address = "$TOPO_VIP4"; port = $TOPO_PORT; protocol = "udp"; encap = "l2";
    backends = ( $(backends) ); }
);
CONF
dp_start "$P" "$dir/maglb.conf" || exit 1

client() {   # name [lbclient args]: JSON to $dir/name.json
	local name=$1
	shift
	run_in "${P}c" "$LBTOOLS/lbclient" --connect "$TOPO_VIP4" "$TOPO_PORT" --json "$@" \
		>"$dir/$name.json" 2>"$dir/$name.err"
}

client udp --udp --conns 30 --rounds 3 --line-bytes 8000
check "UDP: 8,000-byte datagrams with DF, every flow answered" clients_ok "$dir/udp.json"
client tcp --conns 30 --rounds 3 --line-bytes 8000
check "TCP: 8,000-byte lines, every connection answered" clients_ok "$dir/tcp.json"
big_frames() {   # the port received frames of over 8,000 bytes on average per byte
	local rx bytes
	rx=$(dp_counter "$P" total RX_PACKETS)
	bytes=$(dp_counter "$P" total RX_BYTES)
	log "  RX_PACKETS $rx, RX_BYTES $bytes"
	[ "$bytes" -ge $((30 * 3 * 8000 * 2)) ]
}
check "the dataplane received the jumbo payloads (RX_BYTES)" big_frames
no_drops() {
	local d sum=0
	for d in BAD_IP_LENGTH CHAINED TRUNCATED TX_FULL NO_MBUF; do
		sum=$((sum + $(dp_counter "$P" total "$d")))
	done
	[ "$sum" -eq 0 ]
}
check "no jumbo frame dropped (BAD_IP_LENGTH, CHAINED, TRUNCATED, TX_FULL, NO_MBUF 0)" no_drops
# One snapshot of the counters: separate reads race with a late frame.
accounted() {
	local snap rx fwd slow drops
	snap=$(dp_ctl "$P" --json counters total) || return 1
	rx=$(jq '[.counters[] | select(.scope == "total" and .name == "RX_PACKETS") | .value] | add // 0' <<<"$snap")
	fwd=$(jq '[.counters[] | select(.scope == "total" and .name == "FORWARDED") | .value] | add // 0' <<<"$snap")
	slow=$(jq '[.counters[] | select(.scope == "total" and .name == "SLOW_PATH") | .value] | add // 0' <<<"$snap")
	drops=$(jq '[.counters[] | select(.scope == "total" and (.name | test("^(RX|TX)_|^FORWARDED$|^SLOW_PATH$|^FLOW|^SYNCED|^MAGLEV|^NEW_FLOWS$|^UNTRACKED$|^FRAGMENT|^ICMP_ERRORS$|^TOO_BIG_SENT$|^EXPORT_|^PROVISIONAL_") | not)) | .value] | add // 0' <<<"$snap")
	log "  RX_PACKETS $rx = FORWARDED $fwd + drops $drops + SLOW_PATH $slow"
	[ "$rx" -eq $((fwd + drops + slow)) ]
}
check "every frame accounted for (RX = FORWARDED + drops + SLOW_PATH)" accounted
check "the dataplane stops cleanly on SIGTERM" dp_stop "$P"
e2e_summary
