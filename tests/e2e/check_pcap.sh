#!/usr/bin/env bash
# check_pcap: maglb-dataplane between two pcaps, through DPDK's net_pcap
# (rx_pcap in, tx_pcap out): fragments, ICMP errors, too-big replies, IPv4
# fragmentation and malformed frames (tests/tools/pcapgen.c says frame by
# frame).
#
#   check_pcap.sh [SCENARIO...]    default: frags4 frags6 icmp toobig malformed
#
# Per scenario: pcapgen writes the input pcap and the expectations; the
# dataplane starts (no hugepages, its own EAL file prefix and IPC service)
# with the port "net_pcap0,rx_pcap=IN,tx_pcap=OUT" and static gateway MACs
# (no ARP/ND in a pcap run); once maglbctl shows every input frame received
# and accounted for (sent, K times when fragmented, or counted under one
# drop reason), the counters must equal the expected ones exactly: every
# drop reason, RX, TX, too-big replies, new flows, fragments, packets
# fragmented, ICMP errors; SIGTERM must stop it with
# status 0; pcapcheck then checks the output pcap against the input.
#
# Needs jq and the binaries: MAGLB_BUILD (default build/ of this checkout)
# for maglb-dataplane and maglbctl, LBTOOLS (default MAGLB_BUILD/tests/tools)
# for pcapgen and pcapcheck. No namespace, no NIC: only pcap files in a
# temporary folder, removed on exit unless a scenario failed (then kept and
# named). Addresses: 198.18.0.0/15 and 2001:db8::/32.
set -uo pipefail
exec 2>&1   # one stream: messages stay next to the scenario they are about

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
: "${MAGLB_BUILD:=$src/build}"
: "${LBTOOLS:=$MAGLB_BUILD/tests/tools}"
DATAPLANE=$MAGLB_BUILD/dataplane/maglb-dataplane
MAGLBCTL=$MAGLB_BUILD/ctl/maglbctl
COUNTERS_H=$src/dataplane/core/counters.h
TIMEOUT_S=30
# log, eal_dirs (only functions and the topology's constants: no namespace)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"

for bin in "$DATAPLANE" "$MAGLBCTL" "$LBTOOLS/pcapgen" "$LBTOOLS/pcapcheck"; do
	[ -x "$bin" ] || { log "missing $bin (build first, or set MAGLB_BUILD / LBTOOLS)"; exit 1; }
done
command -v jq >/dev/null || { log "missing command: jq"; exit 1; }

# The drop reasons, from their X-macro: every one must read as expected.
mapfile -t DROPS < <(awk '/define DP_DROP_REASONS/ { on = 1; next }
	on && match($0, /X\([A-Z0-9_]+,/) { print substr($0, RSTART + 2, RLENGTH - 3) }
	on && !/\\$/ { on = 0 }' "$COUNTERS_H")
[ "${#DROPS[@]}" -gt 10 ] || { log "cannot read the drop reasons of $COUNTERS_H"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/maglb-pcap.XXXXXX")
SCENARIOS=()
dp_pid=
keep=0

cleanup() {
	if [ -n "$dp_pid" ]; then
		kill -KILL "$dp_pid" 2>/dev/null
		wait "$dp_pid" 2>/dev/null
	fi
	for s in "${SCENARIOS[@]}"; do
		eal_dirs "mlbpcap-$$-$s" | xargs rm -rf
	done
	if [ "$keep" -eq 0 ]; then
		rm -rf "$work"
	else
		log "check_pcap: kept $work (inputs, outputs, logs, configs)"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# write_config DIR IN OUT: the config of every scenario; its VIPs are
# pcapgen's vip_plan (pcapcheck fails on any disagreement), its MTU
# pcapgen's PORT_MTU (the "mtu" line pcapcheck sizes fragments by).
write_config() {
	cat >"$1/maglb.conf" <<CONF
cluster = { hash_seed = "00112233445566778899aabbccddeeff"; };
node = { id = 1; address = "198.18.0.10"; address6 = "2001:db8::10"; };
ports = (
  { name = "lan0"; device = "net_pcap0,rx_pcap=$2,tx_pcap=$3"; mtu = 1500;
    gateway = "198.18.0.1"; gateway_mac = "02:00:00:00:00:01";
    gateway6 = "2001:db8::1"; gateway6_mac = "02:00:00:00:00:01"; }
);
flows = { capacity = 4096; shared_capacity = 4096; };
health = { type = "none"; };
vips = (
  { name = "udp4"; address = "198.18.1.1"; port = 53; protocol = "udp"; encap = "gre";
    hash = "client";
    backends = ( { address = "198.18.2.11"; }, { address = "198.18.2.12"; },
                 { address = "198.18.2.13"; }, { address = "198.18.2.14"; } ); },
  { name = "udp4l2"; address = "198.18.1.2"; port = 0; protocol = "udp"; encap = "l2";
    backends = ( { address = "198.18.0.21"; mac = "02:00:00:00:00:21"; },
                 { address = "198.18.0.22"; mac = "02:00:00:00:00:22"; },
                 { address = "198.18.0.23"; mac = "02:00:00:00:00:23"; } ); },
  { name = "amb53"; address = "198.18.1.3"; port = 53; protocol = "udp"; encap = "gre";
    backends = ( { address = "198.18.2.11"; } ); },
  { name = "amb54"; address = "198.18.1.3"; port = 54; protocol = "udp"; encap = "gre";
    backends = ( { address = "198.18.2.12"; } ); },
  { name = "amb6-53"; address = "2001:db8:1::3"; port = 53; protocol = "udp"; encap = "gre";
    backends = ( { address = "2001:db8:2::11"; } ); },
  { name = "amb6-54"; address = "2001:db8:1::3"; port = 54; protocol = "udp"; encap = "gre";
    backends = ( { address = "2001:db8:2::12"; } ); },
  { name = "udp6"; address = "2001:db8:1::1"; port = 53; protocol = "udp"; encap = "gre";
    hash = "client";
    backends = ( { address = "2001:db8:2::11"; }, { address = "2001:db8:2::12"; },
                 { address = "2001:db8:2::13"; }, { address = "2001:db8:2::14"; } ); },
  { name = "udp6l2"; address = "2001:db8:1::2"; port = 0; protocol = "udp"; encap = "l2";
    hash = "client";
    backends = ( { address = "2001:db8::21"; mac = "02:00:00:00:00:21"; },
                 { address = "2001:db8::22"; mac = "02:00:00:00:00:22"; },
                 { address = "2001:db8::23"; mac = "02:00:00:00:00:23"; } ); },
  { name = "tcp4"; address = "198.18.1.1"; port = 80; protocol = "tcp"; encap = "gre";
    backends = ( { address = "198.18.2.11"; }, { address = "198.18.2.12"; },
                 { address = "198.18.2.13"; }, { address = "198.18.2.14"; } ); },
  { name = "tcp6"; address = "2001:db8:1::1"; port = 80; protocol = "tcp"; encap = "gre";
    backends = ( { address = "2001:db8:2::11"; }, { address = "2001:db8:2::12"; },
                 { address = "2001:db8:2::13"; }, { address = "2001:db8:2::14"; } ); }
);
CONF
}

# await TIMEOUT_S WHAT CMD...: poll CMD every 50 ms while the dataplane
# lives; fails (and says so) on timeout or when the dataplane dies.
await() {
	local timeout=$1 deadline=$((SECONDS + $1)) what=$2
	shift 2
	until "$@"; do
		if ! dp_alive; then
			log "the dataplane died while awaiting: $what"
			return 1
		fi
		if ((SECONDS >= deadline)); then
			log "timed out after ${timeout}s awaiting: $what"
			return 1
		fi
		sleep 0.05
	done
}

# Running and not a zombie (it is our child: a zombie until we wait).
dp_alive() {
	kill -0 "$dp_pid" 2>/dev/null &&
		[ "$(sed -n 's/^[0-9]* (.*) \([A-Z]\).*/\1/p' "/proc/$dp_pid/stat" 2>/dev/null)" != Z ]
}
dp_gone() { ! dp_alive; }

ctl() { "$MAGLBCTL" --service "$service" "$@"; }
dp_up() { ctl status >/dev/null 2>&1; }

# Read the total counters into the array C (NAME -> value).
declare -A C E
read_counters() {
	local name value json
	json=$(ctl --json counters total) || return 1
	C=()
	while read -r name value; do
		C[$name]=$value
	done < <(jq -r '.counters[] | select(.scope == "total") | "\(.name) \(.value)"' <<<"$json")
}

# Every input frame received, and each either sent or dropped for one reason
# (a too-big reply is both a TOO_BIG drop and a sent frame; a packet split in
# K fragments is K sent frames: n_extra counts the K - 1).
accounted() {
	local drops=0 d
	read_counters || return 1
	[ "${C[RX_PACKETS]:-x}" = "$n_in" ] || return 1
	for d in "${DROPS[@]}"; do
		drops=$((drops + ${C[$d]:-0}))
	done
	[ $((C[TX_PACKETS] - C[TOO_BIG_SENT] + drops)) -eq $((n_in + n_extra)) ]
}

# The expected counters E of the expectations file $1.
expected_counters() {
	local d value
	E=()
	for d in "${DROPS[@]}"; do
		E[$d]=0
	done
	E[RX_PACKETS]=$n_in
	E[TX_PACKETS]=$(awk '$1 == "pkt" && ($3 == "fwd" || $3 == "reply") { n++ }
		$1 == "pkt" && $3 == "frag" { n += $4 } END { print n + 0 }' "$1")
	E[UNTRACKED]=0
	E[EXPORT_DROPPED]=0
	while read -r d; do
		E[$d]=$((E[$d] + 1))
	done < <(awk '$1 == "pkt" && $3 == "drop" { print $4 } $1 == "pkt" && $3 == "reply" { print "TOO_BIG" }' "$1")
	while read -r d value; do
		E[$d]=$value
	done < <(awk '$1 == "counter" { print $2, $3 }' "$1")
}

# Compare C with E; print every mismatch.
compare_counters() {
	local name bad=0
	for name in $(printf '%s\n' "${!E[@]}" | sort); do
		if [ -z "${C[$name]+set}" ]; then
			log "  counter $name: missing from maglbctl counters total"
			bad=1
		elif [ "${C[$name]}" != "${E[$name]}" ]; then
			log "  counter $name: expected ${E[$name]}, got ${C[$name]}"
			bad=1
		fi
	done
	return "$bad"
}

# The port MAC the dataplane logged must be the one pcapgen wrote to.
check_port_mac() {
	local want got
	want=$(awk '$1 == "mac" && $2 == "port" { print $3 }' "$1")
	got=$(sed -n 's/.*port lan0: dpdk port [0-9]*,.* mac \([0-9a-fA-F:]*\).*/\1/p' "$2" | tr 'A-F' 'a-f')
	[ "$got" = "$want" ] && return 0
	log "  the port's MAC is '$got', pcapgen wrote to '$want' (pcapgen --dst-mac)"
	return 1
}

# stop_dataplane: SIGTERM, await the exit, which must be 0.
stop_dataplane() {
	local rc=0
	kill -TERM "$dp_pid" 2>/dev/null
	if ! await "$TIMEOUT_S" "exit after SIGTERM" dp_gone; then
		kill -KILL "$dp_pid" 2>/dev/null
	fi
	wait "$dp_pid" || rc=$?
	dp_pid=
	[ "$rc" -eq 0 ] || log "  the dataplane exited with status $rc after SIGTERM"
	return "$rc"
}

# scenario NAME: one run; 0 when everything held.
scenario() {
	local name=$1 dir="$work/$1" ok=0 n_fwd
	mkdir -p "$dir"
	service="mlbpcap-$$-$name"
	"$LBTOOLS/pcapgen" "$name" "$dir/in.pcap" >"$dir/expect" || return 1
	n_in=$(awk '$1 == "pkt"' "$dir/expect" | wc -l)
	n_fwd=$(awk '$1 == "pkt" && ($3 == "fwd" || $3 == "frag")' "$dir/expect" | wc -l)
	n_extra=$(awk '$1 == "pkt" && $3 == "frag" { n += $4 - 1 } END { print n + 0 }' "$dir/expect")
	write_config "$dir" "$dir/in.pcap" "$dir/out.pcap"
	"$DATAPLANE" --no-huge --no-shconf -m 256 --no-pci -l 0,1 \
		--file-prefix "mlbpcap-$$-$name" --log-level=lib.eal:warning -- \
		-c "$dir/maglb.conf" -f --poll adaptive --service "$service" \
		>"$dir/dataplane.log" 2>&1 &
	dp_pid=$!
	if await "$TIMEOUT_S" "maglbctl status" dp_up &&
	   await "$TIMEOUT_S" "RX_PACKETS $n_in, every frame sent or dropped" accounted; then
		check_port_mac "$dir/expect" "$dir/dataplane.log" || ok=1
		expected_counters "$dir/expect"
		read_counters && compare_counters || ok=1
	else
		read_counters 2>/dev/null && log "  counters: $(for k in RX_PACKETS TX_PACKETS TOO_BIG_SENT; do printf '%s=%s ' "$k" "${C[$k]:-?}"; done)"
		ok=1
	fi
	if [ -n "$dp_pid" ]; then
		stop_dataplane || ok=1
	fi
	if [ -e "$dir/out.pcap" ]; then
		"$LBTOOLS/pcapcheck" "$dir/expect" "$dir/in.pcap" "$dir/out.pcap" || ok=1
	else
		log "  no output pcap"
		ok=1
	fi
	if [ "$ok" -ne 0 ]; then
		log "  dataplane log (last lines):"
		tail -n 15 "$dir/dataplane.log" | sed 's/^/    /' >&2
	fi
	printf '%s %-10s %d frames in, %d to forward\n' \
		"$([ "$ok" -eq 0 ] && echo ok || echo FAIL)" "$name" "$n_in" "$n_fwd"
	return "$ok"
}

passed=0
failed=0
[ $# -gt 0 ] || set -- frags4 frags6 icmp toobig malformed
SCENARIOS=("$@")
for s in "${SCENARIOS[@]}"; do
	if scenario "$s"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		keep=1
	fi
done
printf '%d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
