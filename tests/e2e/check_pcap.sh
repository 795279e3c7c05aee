#!/usr/bin/env bash
# check_pcap: maglb-dataplane between two pcaps, through DPDK's net_pcap
# (rx_pcap in, tx_pcap out): fragments, ICMP errors, too-big replies, IPv4
# fragmentation, malformed frames, ARP and ND, martian sources, VLAN tags,
# frames longer than an mbuf, what the workers export to syncd, and BFD
# packets, good and bad (tests/tools/pcapgen.c says frame by frame).
#
#   check_pcap.sh [SCENARIO...]    default: frags4 frags6 icmp toobig
#                                  malformed neigh neigh_after martian vlan jumbo
#                                  mutated (identities only) export bfd bfd_off
#                                  bfd_auth
#
# Per scenario: pcapgen writes the input pcap and the expectations; the
# dataplane starts (no hugepages, its own EAL file prefix and IPC service)
# with the port "net_pcap0,rx_pcap=IN,tx_pcap=OUT", static gateway MACs
# unless the expectations name gateways to resolve ("neigh" lines), the
# port's VLAN if they give one, and a bfd section if they name BFD peers
# ("bfd peer" lines: the peers, interval, multiplier, auth). Once
# maglbctl shows every input frame received and accounted for, these
# identities must hold, per worker and in total, and are printed:
#   RX_PACKETS = FORWARDED + the sum of the drop reasons + SLOW_PATH
#   TX_PACKETS + TX_MADE_LOST + TX_FULL = FORWARDED + TX_FULL + TX_MADE
# and, the control thread's rings drained,
#   SLOW_PATH = SLOW_ANSWERED + SLOW_LEARNT + SLOW_IGNORED + its refusals
#               + BFD_ACCEPTED + BFD_NO_SESSION + BFD_BAD_UDP + the BFD drops
# (dataplane/README.md, "Every frame accounted for"); then the counters
# must equal the expected ones exactly: every drop reason, RX, TX,
# FORWARDED, SLOW_PATH, TX_MADE (fragments past a split packet's first,
# too-big replies, and the control thread's frames: ARP replies, NAs,
# solicitations, BFD packets), too-big replies, new flows, fragments,
# packets fragmented, ICMP errors, the flow events exported to syncd
# (export), the control thread's outcome of every ARP, ND and BFD frame
# and its answers, every BFD drop reason (scope bfd, and maglbctl bfd's
# drops); with BFD peers, the sessions must end as expected ("bfd session"
# lines: a dropped packet changes none), having sent a packet each at
# least (pcapcheck checks them), and BFD_SENT + BFD_NO_NEIGHBOUR must be
# the packets they sent (the sessions send one a second while not Up, and
# the peers are solicited until learnt, for as long as the run takes: so
# BFD_SENT, BFD_NO_NEIGHBOUR and SOLICITS alone are not compared with a
# figure, and TX_MADE counts what the control thread says it made); every
# backend's next-hop MAC (maglbctl backends) must be its gateway's
# (configured, or learnt from the valid answer and never from a refused
# frame) or, on an l2 VIP, its own; SIGTERM must stop it with status 0;
# pcapcheck then checks the output pcap against the input.
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
NDISC_H=$src/dataplane/core/ndisc.h
BFD_H=$src/dataplane/core/bfd.h
TIMEOUT_S=30
# log, eal_dirs (only functions and the topology's constants: no namespace)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"

for bin in "$DATAPLANE" "$MAGLBCTL" "$LBTOOLS/pcapgen" "$LBTOOLS/pcapcheck"; do
	[ -x "$bin" ] || { log "missing $bin (build first, or set MAGLB_BUILD / LBTOOLS)"; exit 1; }
done
command -v jq >/dev/null || { log "missing command: jq"; exit 1; }

# xmacro NAME FILE: the names of X-macro NAME in FILE.
xmacro() {
	awk -v name="$1" '$0 ~ "define " name "\\(" { on = 1; next }
		on && match($0, /X\([A-Z0-9_]+,/) { print substr($0, RSTART + 2, RLENGTH - 3) }
		on && !/\\$/ { on = 0 }' "$2"
}

# The drop reasons and the control thread's refusals of ARP/ND frames:
# every one must read as expected.
mapfile -t DROPS < <(xmacro DP_DROP_REASONS "$COUNTERS_H")
[ "${#DROPS[@]}" -gt 10 ] || { log "cannot read the drop reasons of $COUNTERS_H"; exit 1; }
mapfile -t REFUSALS < <(xmacro NDISC_REFUSALS "$NDISC_H")
[ "${#REFUSALS[@]}" -gt 10 ] || { log "cannot read the ARP/ND refusals of $NDISC_H"; exit 1; }
# The BFD sessions' drop reasons (counters scope bfd).
mapfile -t BFD_DROPS < <(xmacro BFD_DROPS "$BFD_H")
[ "${#BFD_DROPS[@]}" -gt 10 ] || { log "cannot read the BFD drop reasons of $BFD_H"; exit 1; }
# One of these per ARP/ND frame the control thread takes; one of the BFD
# ones or a BFD drop per BFD frame.
OUTCOMES=(SLOW_ANSWERED SLOW_LEARNT SLOW_IGNORED "${REFUSALS[@]}")
BFD_OUTCOMES=(BFD_ACCEPTED BFD_NO_SESSION BFD_BAD_UDP)
# The frames the control thread makes, each sent by a worker (TX_MADE).
CONTROL_SENT=(ARP_REPLIES ND_ADVERTS SOLICITS ANNOUNCES BFD_SENT)

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

# write_config DIR IN OUT EXPECT: the config of every scenario; its VIPs
# are pcapgen's vip_plan (pcapcheck fails on any disagreement), its MTU
# pcapgen's PORT_MTU (the "mtu" line pcapcheck sizes fragments by), its
# VLAN the "vlan" line's; "neigh" lines: no gateway MACs, the dataplane
# resolves the gateways; "bfd" lines: a bfd section.
write_config() {
	local vlan bfd macs4='gateway_mac = "02:00:00:00:00:01";' macs6='gateway6_mac = "02:00:00:00:00:01";'
	vlan=$(awk '$1 == "vlan" { printf "vlan = %u;", $2 }' "$4")
	bfd=$(awk '$1 == "bfd" && $2 == "peer" { peers = peers (peers == "" ? "" : ", ") "\"" $3 "\"" }
		$1 == "bfd" && $2 == "interval" { interval = $3 }
		$1 == "bfd" && $2 == "multiplier" { mult = $3 }
		$1 == "bfd" && $2 == "auth" { auth = sprintf(" auth = { key_id = %u; key = \"%s\"; };", $3, $4) }
		END { if (peers != "")
			printf "bfd = { peers = ( %s ); interval_ms = %u; multiplier = %u;%s };", peers,
				interval, mult, auth }' "$4")
	if grep -q '^neigh ' "$4"; then
		macs4='' macs6=''
	fi
	cat >"$1/maglb.conf" <<CONF
cluster = { hash_seed = "00112233445566778899aabbccddeeff"; };
node = { id = 1; address = "198.18.0.10"; address6 = "2001:db8::10"; };
ports = (
  { name = "lan0"; device = "net_pcap0,rx_pcap=$2,tx_pcap=$3"; mtu = 1500; $vlan
    gateway = "198.18.0.1"; $macs4
    gateway6 = "2001:db8::1"; $macs6 }
);
flows = { capacity = 4096; shared_capacity = 4096; };
health = { type = "none"; };
$bfd
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
                 { address = "2001:db8:2::13"; }, { address = "2001:db8:2::14"; } ); },
  { name = "tcp4after"; address = "198.18.1.4"; port = 80; protocol = "tcp"; encap = "gre";
    sync_after_packets = 4;
    backends = ( { address = "198.18.2.11"; }, { address = "198.18.2.12"; },
                 { address = "198.18.2.13"; }, { address = "198.18.2.14"; } ); }
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

# Read the counters: C (total, NAME -> value), K (control), B (bfd), W (per
# worker, "workerN NAME"), and WORKERS, the workers' scopes.
declare -A C K B W E
WORKERS=()
read_counters() {
	local scope name value json
	json=$(ctl --json counters) || return 1
	C=() K=() B=() W=() WORKERS=()
	while read -r scope name value; do
		case $scope in
		total) C[$name]=$value ;;
		control) K[$name]=$value ;;
		bfd) B[$name]=$value ;;
		worker[0-9]*)
			[ -n "${W["$scope RX_PACKETS"]+set}" ] || WORKERS+=("$scope")
			W["$scope $name"]=$value ;;
		esac
	done < <(jq -r '.counters[] | "\(.scope) \(.name) \(.value)"' <<<"$json")
	[ "${#WORKERS[@]}" -gt 0 ]
}

# cnt SCOPE NAME: a counter read last (total, control, bfd or workerN), 0 if
# absent.
cnt() {
	case $1 in
	total) echo "${C[$2]:-0}" ;;
	control) echo "${K[$2]:-0}" ;;
	bfd) echo "${B[$2]:-0}" ;;
	*) echo "${W["$1 $2"]:-0}" ;;
	esac
}

# The identities, each on scope $1 (identity_slow: over control): 0 when it
# holds; the equation with its figures in $IDENTITY.
identity_rx() {
	local rx fwd slow drops=0 d
	rx=$(cnt "$1" RX_PACKETS) fwd=$(cnt "$1" FORWARDED) slow=$(cnt "$1" SLOW_PATH)
	for d in "${DROPS[@]}"; do
		drops=$((drops + $(cnt "$1" "$d")))
	done
	IDENTITY="RX_PACKETS $rx = FORWARDED $fwd + drops $drops + SLOW_PATH $slow"
	[ "$rx" -eq $((fwd + drops + slow)) ]
}

identity_tx() {
	local tx lost full fwd made
	tx=$(cnt "$1" TX_PACKETS) lost=$(cnt "$1" TX_MADE_LOST) full=$(cnt "$1" TX_FULL)
	fwd=$(cnt "$1" FORWARDED) made=$(cnt "$1" TX_MADE)
	IDENTITY="TX_PACKETS $tx + TX_MADE_LOST $lost + TX_FULL $full"
	IDENTITY+=" = FORWARDED $fwd + TX_FULL $full + TX_MADE $made"
	[ $((tx + lost + full)) -eq $((fwd + full + made)) ]
}

identity_slow() {
	local slow answered learnt ignored refused=0 r accepted none bad_udp dropped=0
	slow=$(cnt total SLOW_PATH) answered=$(cnt control SLOW_ANSWERED)
	learnt=$(cnt control SLOW_LEARNT) ignored=$(cnt control SLOW_IGNORED)
	for r in "${REFUSALS[@]}"; do
		refused=$((refused + $(cnt control "$r")))
	done
	accepted=$(cnt control BFD_ACCEPTED) none=$(cnt control BFD_NO_SESSION)
	bad_udp=$(cnt control BFD_BAD_UDP)
	for r in "${BFD_DROPS[@]}"; do
		dropped=$((dropped + $(cnt bfd "$r")))
	done
	IDENTITY="SLOW_PATH $slow = SLOW_ANSWERED $answered + SLOW_LEARNT $learnt"
	IDENTITY+=" + SLOW_IGNORED $ignored + refused $refused + BFD_ACCEPTED $accepted"
	IDENTITY+=" + BFD_NO_SESSION $none + BFD_BAD_UDP $bad_udp + BFD drops $dropped"
	[ "$slow" -eq $((answered + learnt + ignored + refused + accepted + none + bad_udp + dropped)) ]
}

# The frames the control thread made and queued, as its counters say.
control_sent() {
	local n=0 k
	for k in "${CONTROL_SENT[@]}"; do
		n=$((n + $(cnt control "$k")))
	done
	echo "$n"
}

# Every input frame received and accounted for: both identities in total,
# the control thread's rings drained, every frame made here sent (too-big
# replies, fragments past the first, the control thread's frames).
settled() {
	read_counters || return 1
	[ "$(cnt total RX_PACKETS)" = "$n_in" ] && identity_rx total && identity_tx total &&
		identity_slow &&
		{ [ "$n_any" -gt 0 ] ||
		  [ "$(cnt total TX_MADE)" -eq $((n_extra + $(cnt total TOO_BIG_SENT) + $(control_sent))) ]; }
}

# show_identity NAME SCOPE: print identity_NAME on SCOPE; fails if it does
# not hold.
show_identity() {
	local rc=0
	"identity_$1" "$2" || rc=1
	printf '  %-8s %s%s\n' "$2" "$IDENTITY" "$([ "$rc" -eq 0 ] || echo ': FAILS')"
	return "$rc"
}

# Print each identity per worker, in total and over the control thread;
# fails if one does not hold.
check_identities() {
	local scope bad=0
	for scope in "${WORKERS[@]}" total; do
		show_identity rx "$scope" || bad=1
		show_identity tx "$scope" || bad=1
	done
	show_identity slow control || bad=1
	return "$bad"
}

# The expected counters E of the expectations file $1 (control ones as
# "control:NAME", BFD drops as "bfd:NAME").
expected_counters() {
	local d value made
	E=()
	for d in "${DROPS[@]}"; do
		E[$d]=0
	done
	# no syncd: the node never serves, so no BFD session comes Up
	for d in "${OUTCOMES[@]}" "${BFD_OUTCOMES[@]}" "${CONTROL_SENT[@]}" BFD_NO_NEIGHBOUR \
		BFD_UPS BFD_DOWNS; do
		E[control:$d]=0
	done
	for d in "${BFD_DROPS[@]}"; do
		E[bfd:$d]=0
	done
	grep -q '^neigh ' "$1" && unset 'E[control:SOLICITS]'   # as often as it takes
	# the peers are solicited, and sent a packet a second each, as long as
	# the run takes: check_bfd checks these
	if grep -q '^bfd peer ' "$1"; then
		unset 'E[control:SOLICITS]' 'E[control:BFD_SENT]' 'E[control:BFD_NO_NEIGHBOUR]'
	fi
	E[RX_PACKETS]=$n_in
	E[FORWARDED]=$(awk '$1 == "pkt" && ($3 == "fwd" || $3 == "frag")' "$1" | wc -l)
	E[SLOW_PATH]=$(awk '$1 == "pkt" && $3 == "slow"' "$1" | wc -l)
	made=$((n_extra + $(awk '$1 == "pkt" && $3 == "reply"' "$1" | wc -l) + $(control_sent)))
	E[TX_MADE]=$made
	E[TX_MADE_LOST]=0
	E[TX_PACKETS]=$((E[FORWARDED] + made))
	E[UNTRACKED]=0
	E[EXPORT_DROPPED]=0
	while read -r d; do
		E[$d]=$((E[$d] + 1))
	done < <(awk '$1 == "pkt" && ($3 == "drop" || $3 == "slow") {
			print ($3 == "slow" && index($4, ":") == 0 ? "control:" : "") $4 }
		$1 == "pkt" && $3 == "reply" { print "TOO_BIG" }' "$1")
	while read -r d value; do
		E[$d]=$value
	done < <(awk '$1 == "counter" { print $2, $3 } $1 == "control" { print "control:" $2, $3 }' "$1")
}

# Compare C and K with E; print every mismatch.
compare_counters() {
	local name key scope bad=0
	for key in $(printf '%s\n' "${!E[@]}" | sort); do
		scope=total name=$key
		case $key in
		control:* | bfd:*) scope=${key%%:*} name=${key#*:} ;;
		esac
		if { [ "$scope" = total ] && [ -z "${C[$name]+set}" ]; } ||
		   { [ "$scope" = control ] && [ -z "${K[$name]+set}" ]; } ||
		   { [ "$scope" = bfd ] && [ -z "${B[$name]+set}" ]; }; then
			log "  counter $name: missing from maglbctl counters $scope"
			bad=1
		elif [ "$(cnt "$scope" "$name")" != "${E[$key]}" ]; then
			log "  counter $name ($scope): expected ${E[$key]}, got $(cnt "$scope" "$name")"
			bad=1
		fi
	done
	return "$bad"
}

# The next-hop MAC every backend must show (maglbctl backends), from the
# expectations $1: "VIP ADDRESS MAC" lines, sorted. An l2 backend's is its
# own; a tunnelled one's its family's gateway's: learnt ("neigh" lines) or
# configured ("mac gateway").
expected_next_hops() {
	awk '$1 == "mac" && $2 == "gateway" { gw4 = gw6 = $3 }
		$1 == "neigh" { if (index($2, ":")) gw6 = $3; else gw4 = $3 }
		$1 == "vip" {
			for (i = 8; i <= NF; i++)
				if (split($i, b, "=") == 2)
					print $2, b[1], b[2]
				else
					print $2, $i, index($i, ":") ? gw6 : gw4
		}' "$1" | sort
}

actual_next_hops() {
	ctl --json backends | jq -r '.backends[] | "\(.vip) \(.address) \(.next_hop_mac // "unresolved")"' | sort
}

next_hops_right() { [ "$(actual_next_hops)" = "$want_hops" ]; }

# Every backend's next hop as expected (learnt ones may take a tick to be
# published); prints the differences if not.
check_next_hops() {
	want_hops=$(expected_next_hops "$1")
	await 5 "every backend's next-hop MAC as expected" next_hops_right && return 0
	diff <(echo "$want_hops") <(actual_next_hops) |
		sed -n 's/^< /  next hop expected: /p; s/^> /  next hop got:      /p'
	return 1
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

# ---- BFD

bfd_sent_at_least() { read_counters && [ "$(cnt control BFD_SENT)" -ge "$1" ]; }

# The packets the sessions sent (maglbctl bfd), summed.
bfd_packets_out() { ctl --json bfd | jq '[.sessions[].packets_out] | add // 0'; }

# Every packet a session sent is counted once: queued (BFD_SENT) or held
# for want of the peer's MAC (BFD_NO_NEIGHBOUR); read between two equal
# readings of the sessions, since they send on. Figures in $IDENTITY.
bfd_sends_accounted() {
	local before after sent held
	before=$(bfd_packets_out) && read_counters && after=$(bfd_packets_out) || return 1
	sent=$(cnt control BFD_SENT) held=$(cnt control BFD_NO_NEIGHBOUR)
	IDENTITY="packets_out $after = BFD_SENT $sent + BFD_NO_NEIGHBOUR $held"
	[ "$before" = "$after" ] && [ "$after" -eq $((sent + held)) ]
}

# check_bfd EXPECT: with "bfd peer" lines, after compare_counters (E): a
# packet sent to each peer at least (awaited: 1 s apart while Down), so
# that pcapcheck has some to check; the sessions as the "bfd session"
# lines say (a dropped packet changes none); maglbctl bfd's drops those
# expected of the counters; every packet sent accounted for. Appends
# "bfd local PEER DISCRIMINATOR" lines to EXPECT: pcapcheck checks the
# packets out by them.
check_bfd() {
	local n_peers want got json d v bad=0
	n_peers=$(grep -c '^bfd peer ' "$1")
	await 10 "BFD_SENT $((2 * n_peers)): a BFD packet to each peer" \
		bfd_sent_at_least $((2 * n_peers)) || bad=1
	json=$(ctl --json bfd) || { log "  maglbctl bfd failed"; return 1; }
	want=$(awk '$1 == "bfd" && $2 == "session" { print $3, $4, $5, $6, $7 }' "$1" | sort)
	got=$(jq -r '.sessions[] | "\(.peer) \(.state) \(.packets_in) \(.remote_discriminator) \(.remote_multiplier)"' \
		<<<"$json" | sort)
	if [ "$got" != "$want" ]; then
		log "  BFD sessions (peer state packets_in remote_discriminator remote_multiplier):"
		diff <(echo "$want") <(echo "$got") |
			sed -n 's/^< /    expected: /p; s/^> /    got:      /p'
		bad=1
	fi
	for d in "${BFD_DROPS[@]}"; do
		v=$(jq -r --arg d "$d" '.drops[$d] // "missing"' <<<"$json")
		if [ "$v" != "${E[bfd:$d]}" ]; then
			log "  maglbctl bfd: drop $d $v, expected ${E[bfd:$d]}"
			bad=1
		fi
	done
	if ! await 5 "every BFD packet sent accounted for" bfd_sends_accounted; then
		log "  $IDENTITY: FAILS"
		bad=1
	fi
	printf '  bfd      %s\n' "$IDENTITY"
	jq -r '.sessions[] | "bfd local \(.peer) \(.local_discriminator)"' <<<"$json" >>"$1"
	return "$bad"
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
	local name=$1 dir="$work/$1" ok=0 n_fwd n_slow
	mkdir -p "$dir"
	service="mlbpcap-$$-$name"
	"$LBTOOLS/pcapgen" "$name" "$dir/in.pcap" >"$dir/expect" || return 1
	n_in=$(awk '$1 == "pkt"' "$dir/expect" | wc -l)
	n_fwd=$(awk '$1 == "pkt" && ($3 == "fwd" || $3 == "frag")' "$dir/expect" | wc -l)
	n_slow=$(awk '$1 == "pkt" && $3 == "slow"' "$dir/expect" | wc -l)
	n_extra=$(awk '$1 == "pkt" && $3 == "frag" { n += $4 - 1 } END { print n + 0 }' "$dir/expect")
	# mutated frames ("any"): only the identities are predicted
	n_any=$(awk '$1 == "pkt" && $3 == "any"' "$dir/expect" | wc -l)
	write_config "$dir" "$dir/in.pcap" "$dir/out.pcap" "$dir/expect"
	"$DATAPLANE" --no-huge --no-shconf -m 256 --no-pci -l 0,1 \
		--file-prefix "mlbpcap-$$-$name" --log-level=lib.eal:warning -- \
		-c "$dir/maglb.conf" -f --poll adaptive --service "$service" \
		>"$dir/dataplane.log" 2>&1 &
	dp_pid=$!
	if await "$TIMEOUT_S" "maglbctl status" dp_up; then
		await "$TIMEOUT_S" "RX_PACKETS $n_in, every frame accounted for, every frame made sent" \
			settled || ok=1
		if read_counters; then
			check_identities || ok=1
			if [ "$n_any" -eq 0 ]; then
				expected_counters "$dir/expect"
				compare_counters || ok=1
				if grep -q '^bfd peer ' "$dir/expect"; then
					check_bfd "$dir/expect" || ok=1
				fi
			fi
		else
			ok=1
		fi
		check_port_mac "$dir/expect" "$dir/dataplane.log" || ok=1
		[ "$n_any" -gt 0 ] || check_next_hops "$dir/expect" || ok=1
	else
		ok=1
	fi
	if [ -n "$dp_pid" ]; then
		stop_dataplane || ok=1
	fi
	if [ "$n_any" -gt 0 ]; then
		:       # what a mutated frame becomes is not predicted
	elif [ -e "$dir/out.pcap" ]; then
		"$LBTOOLS/pcapcheck" "$dir/expect" "$dir/in.pcap" "$dir/out.pcap" || ok=1
	else
		log "  no output pcap"
		ok=1
	fi
	if [ "$ok" -ne 0 ]; then
		log "  dataplane log (last lines):"
		tail -n 15 "$dir/dataplane.log" | sed 's/^/    /' >&2
	fi
	printf '%s %-11s %d frames in, %d to forward, %d to the control thread\n' \
		"$([ "$ok" -eq 0 ] && echo ok || echo FAIL)" "$name" "$n_in" "$n_fwd" "$n_slow"
	return "$ok"
}

passed=0
failed=0
[ $# -gt 0 ] || set -- frags4 frags6 icmp toobig malformed neigh neigh_after martian vlan jumbo mutated \
	export bfd bfd_off bfd_auth
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
