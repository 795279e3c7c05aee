# shellcheck shell=bash
# Running maglb-dataplane in a topology of lib.sh, for the e2e tests.
#
#   . tests/e2e/lib.sh; . tests/e2e/dp.sh
#   dp_start PREFIX CONFIG       start it in ${PREFIX}lb, await its IPC; its
#                                lcores are DP_CORES (default "-l 0,1": the
#                                control thread and one worker)
#   dp_ctl PREFIX ARGS...        maglbctl against it
#   dp_counter PREFIX SCOPE NAME the value of one counter
#   dp_stop PREFIX               SIGTERM, await a clean exit (fails otherwise)
#   dp_l2_setup PREFIX           P=PREFIX, the l2 topology and its backends, a
#                                work folder in $dir, and an EXIT trap that stops
#                                the dataplane and removes both
#   dp_l2_web_config FILE N...   a config of one l2 TCP VIP "web" (TOPO_VIP4,
#                                TOPO_PORT) to l2 backends N...; FLOWS_CAPACITY,
#                                SHARED_CAPACITY and FLOWS_EXTRA (keys of the
#                                flows group) if set,
#                                DEVICE_EXTRA (",key=value" of the port's vdev),
#                                VIP_EXTRA (more keys of "web", e.g. its
#                                sync_group), VIPS_EXTRA (more VIPs after it:
#                                "{ ... }, { ... }"), CONF_EXTRA (more
#                                top-level groups)
#   dp_l2_backends N...          the backends list of those VIPs (l2 backends
#                                N..., without the parentheses), for VIPS_EXTRA
#
# Binaries come from MAGLB_BUILD (default: build/ of this checkout). Each
# prefix gets its own EAL file prefix and IPC service, so tests can run one
# after the other without leftovers mattering.

: "${MAGLB_BUILD:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build}"

dp_service() { printf 'maglb-e2e-%s' "${1%-}"; }

dp_ctl() {
	local p=$1
	shift
	ip netns exec "${p}lb" "$MAGLB_BUILD/ctl/maglbctl" --service "$(dp_service "$p")" "$@"
}

dp_l2_setup() {
	P=$1
	dir=$(mktemp -d)
	trap 'dp_stop "$P"; topo_teardown "$P"; rm -rf "$dir"' EXIT
	topo_setup "$P" l2 && start_backends "$P"
}

dp_l2_backends() {
	local n bk=""
	for n in "$@"; do
		bk+="{ address = \"$(topo_backend_addr4 l2 "$n")\"; mac = \"$(topo_backend_mac l2 "$n")\"; },"
	done
	printf '%s' "${bk%,}"
}

dp_l2_web_config() {
	local out=$1
	shift
	cat >"$out" <<CONF
cluster = { hash_seed = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"; };
node = { id = 1; address = "$TOPO_LB_ADDR4"; };
ports = ( { name = "lan0"; device = "net_af_packet0,iface=$TOPO_LB_IF${DEVICE_EXTRA:-}"; } );
flows = { capacity = ${FLOWS_CAPACITY:-65536}; shared_capacity = ${SHARED_CAPACITY:-65536}; ${FLOWS_EXTRA:-} };
vips = (
  { name = "web"; address = "$TOPO_VIP4"; port = $TOPO_PORT; protocol = "tcp"; encap = "l2";${VIP_EXTRA:+ $VIP_EXTRA}
    backends = ( $(dp_l2_backends "$@") ); }${VIPS_EXTRA:+,
  $VIPS_EXTRA}
);
${CONF_EXTRA:-}
CONF
}

_dp_up() { dp_ctl "$1" status >/dev/null 2>&1; }
_dp_up_or_gone() { _dp_up "$1" || _pid_gone "$2"; }

dp_start() {
	local p=$1 conf=$2 dir cores
	dir=$(topo_dir "$p")
	read -ra cores <<<"${DP_CORES:--l 0,1}"
	ip netns exec "${p}lb" "$MAGLB_BUILD/dataplane/maglb-dataplane" --no-huge --no-shconf \
		-m 512 --no-pci "${cores[@]}" --file-prefix "${p}dp" --log-level=lib.eal:warning -- \
		-c "$conf" -f --poll adaptive --service "$(dp_service "$p")" \
		>"$dir/dataplane.out" 2>"$dir/dataplane.err" &
	echo $! >"$dir/dataplane.pid"
	await_cond 20 _dp_up_or_gone "$p" "$!"
	if ! _dp_up "$p"; then
		log "dp_start: the dataplane did not come up; stderr:"
		cat "$dir/dataplane.err" >&2
		return 1
	fi
}

dp_stop() {
	local p=$1 pidfile pid rc=0
	pidfile="$(topo_dir "$p")/dataplane.pid"
	if [ -e "$pidfile" ]; then
		pid=$(<"$pidfile")
		rm -f "$pidfile"
		if kill -TERM "$pid" 2>/dev/null; then
			wait "$pid" || rc=$?
			[ "$rc" -eq 0 ] || log "dp_stop: the dataplane exited with status $rc"
		fi
	fi
	eal_dirs "${p}dp" | xargs rm -rf
	return "$rc"
}

# dp_counter PREFIX SCOPE NAME: one counter's value (0 when absent).
dp_counter() {
	dp_ctl "$1" --json counters "$2" |
		jq -r --arg s "$2" --arg n "$3" \
			'[.counters[] | select(.scope == $s and .name == $n) | .value] | add // 0'
}

# check WHAT COMMAND...: run a check, print PASS/FAIL, count failures.
E2E_FAILED=0
E2E_PASSED=0
check() {
	local what=$1
	shift
	if "$@"; then
		printf 'PASS %s\n' "$what"
		E2E_PASSED=$((E2E_PASSED + 1))
	else
		printf 'FAIL %s\n' "$what"
		E2E_FAILED=$((E2E_FAILED + 1))
	fi
}

# clients_ok JSON [MIN_PER_BACKEND]: every connection answered with the right
# payload by one backend, and (with MIN) every backend served at least MIN.
# Maglev spreads connections at random: pick N and MIN so that a fair spread
# fails by chance almost never. Over 3 equal backends, 60 and 5: ~3e-6 a
# check; 30 and 2 was 2.5e-4, and failed once (15/14/1).
clients_ok() {
	local json=$1 min=${2:-0}
	jq -e --argjson min "$min" \
		'.ok == .conns and .failed == 0 and .backend_changed == 0 and
		 ([.per_backend[]] | length) >= (if $min > 0 then 3 else 0 end) and
		 ([.per_backend[]] | min // $min) >= $min' "$json" >/dev/null ||
		{ log "clients: $(cat "$json")"; return 1; }
}

# served_by JSON BACKEND: how many connections BACKEND served.
served_by() { jq -r --arg b "$2" '.per_backend[$b] // 0' "$1"; }

e2e_summary() {
	printf '%d passed, %d failed\n' "$E2E_PASSED" "$E2E_FAILED"
	[ "$E2E_FAILED" -eq 0 ]
}
