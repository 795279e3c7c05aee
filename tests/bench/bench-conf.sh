# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the dataplane benchmarks: the config they run maglb with, the
# established-flow replay of dataplane-vs-testpmd (also dataplane-import's),
# and starting maglb and waiting for a command as those scripts do.
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

# bench_established DIR FLOWS [FLOWS_KEYS]: dataplane-vs-testpmd's
# established-flow run. DIR/est.pcap: FLOWS TCP flows to the 4 VIPs, one
# 60-byte ACK frame each, to the port's MAC; DIR/est.conf: maglb replaying
# it without end, flows.capacity 4 x FLOWS (at least 65536, in
# EST_CAPACITY), no insert cap, FLOWS_KEYS more keys of the flows block,
# mtu 1500 and a pool of FLOWS + 16384 buffers. The caller also defines
# PCAPGEN, PORT_MAC and log().
bench_established() {
	local dir=$1 flows=$2 keys=${3:-}

	"$PCAPGEN" --out "$dir/est.pcap" --flows "$flows" --proto tcp --tcp-flags ack \
		--dst-mac "$PORT_MAC" --src-mac "$GATEWAY_MAC" > /dev/null
	log "capture: $flows flows to 4 VIPs, one 60-byte TCP ACK frame each"
	EST_CAPACITY=$(( flows * 4 > 65536 ? flows * 4 : 65536 ))
	maglb_conf "$dir/est.conf" "$dir/est.pcap" tcp \
		"{ capacity = $EST_CAPACITY; insert_rate = 0;$keys }" \
		" mtu = 1500; mbufs = $(( flows + 16384 ));"
}

# The processes a script started are in its array PIDS (its cleanup stops
# them, the last started first); maglb writes its log to WORK/PREFIX.log.

# Run a command in the background and wait for it: a signal then reaches the
# trap at once, and cleanup stops the command too.
waitfor() {
	local pid rc=0

	"$@" &
	pid=$!
	PIDS+=("$pid")
	wait "$pid" || rc=$?
	forget_pid "$pid"
	return "$rc"
}

forget_pid() {
	local keep=() p

	for p in "${PIDS[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
}

# Write a maglb config: $1 file, $2 capture (replayed without end), $3 proto,
# $4 flows block, $5 extra port keys.
maglb_conf() {
	bench_conf "$1" "net_pcap0,rx_pcap=$2,infinite_rx=1" "$3" "$4" "${5:-}"
}

# Start maglb on config $1 with EAL prefix $2; wait until it serves IPC.
# Returns 1 (and leaves its log) when it stopped instead.
maglb_start() {
	local conf=$1 prefix=$2 pid

	"$DATAPLANE" -l 0,1 --no-pci --file-prefix "$prefix" -- -c "$conf" -f \
		--service "$prefix" > "$WORK/$prefix.log" 2>&1 < /dev/null &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 1 1200); do
		grep -qs 'control: serving IPC' "$WORK/$prefix.log" && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	stop_pid "$pid"
	forget_pid "$pid"
	return 1
}

maglb_check_log() {
	local log=$1 mac

	mac=$(sed -n 's/.*port lan0: dpdk port [0-9]*, .* mac \([0-9a-f:]*\).*/\1/p' "$log")
	[ "$mac" = "$PORT_MAC" ] ||
		die "maglb's port MAC is '$mac', the capture's frames go to $PORT_MAC"
	sed -n 's/.* \([0-9]*\) bytes per flow.*/\1/p' "$log" | head -1
}
