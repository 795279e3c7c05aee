# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the dataplane benchmarks: the config they run maglb with.
#
# bench_conf FILE DEVICE PROTO FLOWS [PORT_KEYS]: 4 GRE VIPs (198.18.1.1-4,
# port 80, IPv4), 4 backends each, one port on DPDK device DEVICE with a
# static next-hop MAC (no ARP in a pcap run), FLOWS the flows block,
# PORT_KEYS more port keys. Checked with --check-config. The caller defines
# DATAPLANE, GATEWAY_MAC, ME and die().
bench_conf() {
	local file=$1 device=$2 proto=$3 flows=$4 port_keys=${5:-} v

	{
		echo "# $ME: 4 GRE VIPs (IPv4), 4 backends each; a static next-hop MAC."
		echo 'cluster = { hash_seed = "0123456789abcdef0123456789abcdef"; };'
		echo 'node = { id = 1; address = "198.18.0.10"; };'
		echo "ports = ( { name = \"lan0\"; device = \"$device\";"
		echo "            gateway = \"198.18.0.1\"; gateway_mac = \"$GATEWAY_MAC\";$port_keys } );"
		echo "flows = $flows;"
		echo 'health = { type = "none"; };'
		echo 'vips = ('
		for v in 1 2 3 4; do
			[ "$v" -eq 1 ] || echo ','
			printf '  { name = "bench%s"; address = "198.18.1.%s"; port = 80;' "$v" "$v"
			printf ' protocol = "%s"; encap = "gre";\n    backends = (' "$proto"
			printf ' { address = "198.18.2.%s1"; }, { address = "198.18.2.%s2"; },' "$v" "$v"
			printf ' { address = "198.18.2.%s3"; }, { address = "198.18.2.%s4"; } ); }' \
				"$v" "$v"
		done
		echo
		echo ');'
	} > "$file"
	"$DATAPLANE" --check-config "$file" > /dev/null || die "bench config $file refused"
}
