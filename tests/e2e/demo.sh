#!/usr/bin/env bash
# The namespace demo behind `./dev demo`: see tests/e2e/lib.sh for the
# topology. Builds nothing; run it from the top of a built checkout, as root.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh

P=mdemo-
DP=build/dataplane/maglb-dataplane
CTL="ip netns exec ${P}lb build/ctl/maglbctl --service maglb-demo"
dir=$(mktemp -d)
dp_pid=
cleanup() {
	[ -n "$dp_pid" ] && kill "$dp_pid" 2>/dev/null && wait "$dp_pid" 2>/dev/null
	eal_dirs "$P" | xargs rm -rf
	topo_teardown "$P"
	rm -rf "$dir"
}
trap cleanup EXIT

cat >"$dir/maglb.conf" <<CONF
cluster = { hash_seed = "5eed5eed5eed5eed5eed5eed5eed5eed"; };
node = { id = 1; address = "$TOPO_LB_ADDR4"; address6 = "$TOPO_LB_ADDR6"; };
ports = ( { name = "lan0"; device = "net_af_packet0,iface=$TOPO_LB_IF";
            gateway = "$TOPO_ROUTER_ADDR4"; gateway6 = "$TOPO_ROUTER_ADDR6"; } );
flows = { capacity = 65536; shared_capacity = 65536; };
vips = (
  { name = "web4"; address = "$TOPO_VIP4"; port = $TOPO_PORT; protocol = "tcp"; encap = "gre";
    backends = ( { address = "$(topo_backend_addr4 tunnel 1)"; weight = 2; },
                 { address = "$(topo_backend_addr4 tunnel 2)"; },
                 { address = "$(topo_backend_addr4 tunnel 3)"; } ); },
  { name = "web6"; address = "$TOPO_VIP6"; port = $TOPO_PORT; protocol = "tcp"; encap = "ipip";
    backends = ( { address = "$(topo_backend_addr6 tunnel 1)"; },
                 { address = "$(topo_backend_addr6 tunnel 2)"; },
                 { address = "$(topo_backend_addr6 tunnel 3)"; } ); }
);
CONF

echo "== topology: client -> router -> load balancer (DPDK) -> GRE / IP-in-IP -> 3 backends"
topo_setup "$P" tunnel
start_backends "$P"
ip netns exec "${P}lb" "$DP" --no-huge --no-shconf -m 512 --no-pci -l 0,1 \
	--file-prefix "$P" --log-level=lib.eal:warning -- \
	-c "$dir/maglb.conf" -f --poll adaptive --service maglb-demo 2>"$dir/dp.log" &
dp_pid=$!
await_cond 20 sh -c "$CTL status >/dev/null 2>&1" || { cat "$dir/dp.log" >&2; exit 1; }
echo "== maglbctl status"
$CTL status
echo "== maglbctl backends"
$CTL backends

echo "== 50 IPv4 and 50 IPv6 TCP connections, 20 requests each, through the dataplane"
run_in "${P}c" "$LBTOOLS/lbclient" --connect "$TOPO_VIP4" "$TOPO_PORT" --conns 50 \
	--rounds 20 --interval-ms 100 --json >"$dir/c4.json" &
c4=$!
run_in "${P}c" "$LBTOOLS/lbclient" --connect "$TOPO_VIP6" "$TOPO_PORT" --conns 50 \
	--rounds 20 --interval-ms 100 --json >"$dir/c6.json" &
c6=$!
await_cond 10 sh -c "$CTL status | grep -q 'flows *[1-9]'"
echo "== while traffic flows: maglbctl status, flows --limit 5, counters total"
$CTL status
$CTL flows --limit 5
$CTL counters total | awk 'NR == 1 || $3 != 0'
wait "$c4" && wait "$c6" || { echo "client failed" >&2; cat "$dir"/c*.json >&2; exit 1; }
echo "== clients: every connection answered by one backend, spread by Maglev"
cat "$dir/c4.json" "$dir/c6.json"
echo "== per backend (web4's first backend has weight 2)"
$CTL counters backend: | awk 'NR == 1 || $3 != 0'
echo "== demo done: tearing down"
