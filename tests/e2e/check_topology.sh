#!/usr/bin/env bash
# check_topology: proves the end-to-end topology (lib.sh) and the test tools
# (tests/tools) with the plain Linux kernel standing in for the load balancer.
#
#   l2      TCP and UDP, IPv4 and IPv6, 20 connections each, through the LB
#           kernel's per-flow multipath forwarding (a MAC rewrite, as L2 direct
#           routing), replies straight from the backends (DSR); a backend
#           change in mid-flight must be caught by lbclient (--hold-file);
#           what af_packet reads on lb0 has wire-size frames and complete
#           checksums (what the dataplane's port will see).
#   tunnel  GRE and IP-in-IP, over IPv4 and IPv6, carrying IPv4 and IPv6, UDP
#           and TCP (full-size segments, so outer packets are fragmented on
#           the 1500-byte path), unwrapped by decap on the backends (its
#           counters checked); decap refuses GRE with flags set.
#
# Needs root, iproute2, ethtool, jq and the tools built (LBTOOLS, default
# build/tests/tools). Exits non-zero on any failure; leaves no namespace.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

P=${MAGLB_E2E_PREFIX:-mlbtopo-}
CONNS=20
passed=0
failed=0

for tool in lbserver lbclient decap encapsend framecheck; do
	[ -x "$LBTOOLS/$tool" ] || { log "missing $LBTOOLS/$tool (build first, or set LBTOOLS)"; exit 1; }
done
for cmd in ip ethtool jq sysctl; do
	command -v "$cmd" >/dev/null || { log "missing command: $cmd"; exit 1; }
done

finish() {
	local rc=$?
	topo_teardown "$P"
	if ip netns list | awk '{print $1}' | grep -q "^$P"; then
		log "FAIL namespaces left behind: $(ip netns list | grep "^$P" | tr '\n' ' ')"
		rc=1
	fi
	exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

pass() { passed=$((passed + 1)); printf 'ok    %-44s %s\n' "$1" "$2"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %-44s %s\n' "$1" "$2"; }

summary() {
	jq -r '"ok=\(.ok)/\(.conns) changed=\(.backend_changed) " +
		(.per_backend | to_entries | sort_by(.key) | map("\(.key)=\(.value)") | join(" "))' <<<"$1"
}

# client_check NAME JQ_FILTER LBCLIENT_ARGS...: lbclient (--json) in the
# client namespace must exit 0 and its summary satisfy JQ_FILTER.
client_check() {
	local name=$1 filter=$2 out rc=0 err
	shift 2
	err="$(topo_dir "$P")/lbclient.err"
	out=$(run_in "${P}c" "$LBTOOLS/lbclient" --json --timeout-s 15 "$@" 2>"$err") || rc=$?
	if [ "$rc" -eq 0 ] && jq -e "$filter" <<<"$out" >/dev/null; then
		pass "$name" "$(summary "$out")"
	else
		fail "$name" "exit $rc: $out $(head -c 600 "$err")"
	fi
}

# Spread over the backends: all answered, by at least two backends.
SPREAD=".ok == $CONNS and (.per_backend | length) >= 2"

check_offloads() {
	local ns=$1 dev=$2 features
	features=$(run_in "$ns" ethtool -k "$dev")
	if grep -Eq '^(tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload|tx-checksumming): on' <<<"$features"; then
		fail "offloads off on $dev" "$(grep -E '^(tcp-seg|generic-seg|generic-rec|tx-check)' <<<"$features" | tr '\n' ' ')"
	else
		pass "offloads off on $dev" "tso gso gro tx-checksum: off"
	fi
}

# backend_change_check PROTO_ARGS EXPECT: connections hold after round 1; the
# stand-in then sends everything to b1; lbclient must fail, with EXPECT (a jq
# filter over the summary and $b1, the connections first served by b1).
backend_change_check() {
	local name=$1 expect=$2 dir out rc=0 b1
	shift 2
	dir=$(topo_dir "$P")
	rm -f "$dir/hold" "$dir/held"
	run_in "${P}c" "$LBTOOLS/lbclient" --json --timeout-s 15 --conns "$CONNS" --rounds 2 \
		--hold-file "$dir/hold" --held-file "$dir/held" "$@" >"$dir/change.out" 2>"$dir/change.err" &
	local client=$!
	if await_cond 10 test -e "$dir/held"; then
		lb_kernel_standin "$P" l2 b1
		touch "$dir/hold"
	fi
	wait "$client" || rc=$?
	out=$(<"$dir/change.out")
	b1=$(jq '.per_backend.b1 // 0' <<<"$out" 2>/dev/null || echo 0)
	if [ "$rc" -ne 0 ] && [ "$b1" -lt "$CONNS" ] &&
		jq -e --argjson b1 "$b1" "$expect" <<<"$out" >/dev/null; then
		pass "$name" "$(summary "$out") (exit $rc, as expected)"
	else
		fail "$name" "exit $rc: $out"
	fi
	lb_kernel_standin "$P" l2
}

phase_l2() {
	local fc_out
	topo_setup "$P" l2
	start_backends "$P"
	lb_kernel_standin "$P" l2
	check_offloads "${P}r" rl
	check_offloads "${P}lb" "$TOPO_LB_IF"
	start_tool "$P" framecheck "${P}lb" "$LBTOOLS/framecheck" --iface "$TOPO_LB_IF"

	client_check "l2 tcp ipv4" "$SPREAD" --connect "$TOPO_VIP4" "$TOPO_PORT" \
		--conns "$CONNS" --rounds 3 --interval-ms 20 --line-bytes 3000
	client_check "l2 tcp ipv6" "$SPREAD" --connect "$TOPO_VIP6" "$TOPO_PORT" \
		--conns "$CONNS" --rounds 3 --interval-ms 20 --line-bytes 3000
	client_check "l2 udp ipv4" "$SPREAD" --udp --connect "$TOPO_VIP4" "$TOPO_PORT" \
		--conns "$CONNS" --rounds 3 --interval-ms 20
	client_check "l2 udp ipv6" "$SPREAD" --udp --connect "$TOPO_VIP6" "$TOPO_PORT" \
		--conns "$CONNS" --rounds 3 --interval-ms 20

	stop_tool "$P" framecheck
	fc_out=$(<"$(topo_dir "$P")/framecheck.out")
	fc_out=${fc_out#ready$'\n'}
	if jq -e '.tcp > 0 and .udp > 0 and .max_frame <= 1514 and .oversize == 0 and .bad_checksum == 0' \
		<<<"$fc_out" >/dev/null; then
		pass "af_packet view of lb0" "$(jq -r '"frames=\(.frames) (outgoing \(.outgoing)) max_frame=\(.max_frame) bad_checksum=\(.bad_checksum)"' <<<"$fc_out")"
	else
		fail "af_packet view of lb0" "$fc_out"
	fi

	backend_change_check "l2 backend change caught (udp)" \
		".ok == \$b1 and .backend_changed == ($CONNS - \$b1)" \
		--udp --connect "$TOPO_VIP4" "$TOPO_PORT"
	backend_change_check "l2 backend change caught (tcp)" \
		".ok == \$b1 and .failed == ($CONNS - \$b1) and .errors.reset == .failed" \
		--connect "$TOPO_VIP4" "$TOPO_PORT"
	topo_teardown "$P"
}

# decap_sum KIND: KIND's counter summed over the backends' decap.
decap_sum() {
	local b total=0 line
	for b in "${TOPO_BACKENDS[@]}"; do
		line=$(tool_counters "$P" "decap-$b")
		total=$((total + $(counter_value "$1" "$line")))
	done
	echo "$total"
}

# tunnel_check ENCAP FAMILY: both inner families, UDP and TCP, through the
# stand-in encapsulating with ENCAP over outer IPv FAMILY.
tunnel_check() {
	local encap=$1 family=$2 kind inner before after drops
	lb_kernel_standin "$P" tunnel "$encap" "$family"
	for inner in 4 6; do
		kind="${encap}${family}_inner${inner}"
		local vip=$TOPO_VIP4
		[ "$inner" = 6 ] && vip=$TOPO_VIP6
		before=$(decap_sum "$kind")
		client_check "$encap over ipv$family: udp ipv$inner" "$SPREAD" --udp \
			--connect "$vip" "$TOPO_PORT" --conns "$CONNS" --rounds 2
		client_check "$encap over ipv$family: tcp ipv$inner, 3000-byte lines" "$SPREAD" \
			--connect "$vip" "$TOPO_PORT" --conns "$CONNS" --rounds 2 --line-bytes 3000
		after=$(decap_sum "$kind")
		# UDP: 2 datagrams per connection; TCP: SYN, data and ACKs, FIN.
		if [ $((after - before)) -ge $((CONNS * 2 + CONNS * 5)) ]; then
			pass "decap counted $kind" "+$((after - before)) packets"
		else
			fail "decap counted $kind" "+$((after - before)) packets"
		fi
	done
	drops=0
	for kind in drop_short drop_gre_flags drop_gre_protocol drop_inner drop_tun_write; do
		drops=$((drops + $(decap_sum "$kind")))
	done
	[ "$drops" -eq 0 ] || fail "decap drops after $encap over ipv$family" "$drops"
}

phase_tunnel() {
	local before after encap family
	topo_setup "$P" tunnel
	start_backends "$P"
	for encap in gre ipip; do
		for family in 4 6; do
			tunnel_check "$encap" "$family"
		done
	done

	# GRE with the key bit set (0x2000) must be dropped, not delivered.
	before=$(decap_sum drop_gre_flags)
	TOPO_ENCAPSEND_EXTRA=(--gre-flags 2000)
	lb_kernel_standin "$P" tunnel gre 4
	TOPO_ENCAPSEND_EXTRA=()
	local out rc=0
	out=$(run_in "${P}c" "$LBTOOLS/lbclient" --json --udp --connect "$TOPO_VIP4" "$TOPO_PORT" \
		--conns 3 --timeout-s 3 2>/dev/null) || rc=$?
	after=$(decap_sum drop_gre_flags)
	if [ "$rc" -ne 0 ] && [ "$after" -gt "$before" ] && jq -e '.ok == 0' <<<"$out" >/dev/null; then
		pass "decap refuses GRE flags 0x2000" "drop_gre_flags +$((after - before)), no reply"
	else
		fail "decap refuses GRE flags 0x2000" "exit $rc drop_gre_flags +$((after - before)) $out"
	fi
	topo_teardown "$P"
}

start=$SECONDS
phase_l2
phase_tunnel
if ip netns list | awk '{print $1}' | grep -q "^$P"; then
	fail "namespaces removed" "$(ip netns list | grep "^$P" | tr '\n' ' ')"
else
	pass "namespaces removed" "none left with prefix $P"
fi
echo "check_topology: $((SECONDS - start)) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
