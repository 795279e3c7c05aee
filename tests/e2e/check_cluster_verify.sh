#!/usr/bin/env bash
# sync verify under traffic, suite cluster: a pair, a steady churn of short
# TCP connections through node 1 (each one a NEW and a CLOSE exported and
# replicated while the rounds run) and 100 held connections. Every round of
# `maglbctl sync verify` asked during the churn, from either node, must
# agree: each member's digest describes one point of the agreed order, so
# entries still on their way (exported, not yet delivered) are in no one's
# digest. Then the churn stops and the held connections are checked.
# Prints how many rounds agreed and the connections made; cleans up on
# exit, leftovers of its prefix first.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/cluster.sh

P=${MAGLB_E2E_PREFIX:-e2ecv-}
HELD=100
ROUNDS=10               # verify rounds during the churn, alternating nodes
BURST=30                # connections a churn client makes, one round each
CHURNERS=4              # churn clients at once: some 300 connections a second

dir=$(mktemp -d)
E2E_PASSED=0 E2E_FAILED=0
churn_pid=

stop_churn() {
	[ -n "$churn_pid" ] || return 0
	touch "$dir/churn.stop"
	wait "$churn_pid" 2>/dev/null
	churn_pid=
}
cluster_on_exit "$P" "$dir" stop_churn

sync_json() { cluster_run "$P" "$1" "$MAGLB_BUILD/ctl/maglbctl" --json --sync-service "$(cluster_syncd_service "$P" "$1")" sync; }
synced() { [ "$(sync_json "$1" | jq -r '.node.synced // 0')" = 1 ]; }
verify() {
	cluster_run "$P" "$1" "$MAGLB_BUILD/ctl/maglbctl" --sync-service \
		"$(cluster_syncd_service "$P" "$1")" sync verify
}
lbclient() { run_in "${P}c" "$LBTOOLS/lbclient" --connect "$TOPO_VIP4" "$TOPO_PORT" --json "$@"; }

# churn: CHURNERS loops of bursts of short connections until churn.stop
# appears; counts the connections made in churn.count (a line a burst).
churn() {
	local c
	for c in $(seq 1 "$CHURNERS"); do
		while [ ! -e "$dir/churn.stop" ]; do
			lbclient --conns "$BURST" --rounds 1 --timeout-s 10 2>/dev/null |
				jq -r '.ok // 0' >>"$dir/churn.count"
		done &
	done
	wait
}

# ------------------------------------------------------------------ set-up
cluster_pair_start "$P" "$dir" || exit 1
for i in 1 2; do
	await_cond 30 synced "$i" || { log "node $i: syncd not synced"; exit 1; }
done

lbclient --conns "$HELD" --rounds 2 --hold-file "$dir/held.go" --held-file "$dir/held.held" \
	--timeout-s 240 >"$dir/held.json" 2>"$dir/held.err" &
held_pid=$!
await_cond 60 test -e "$dir/held.held" || { log "the held connections did not open"; exit 1; }

# ------------------------------------------------------------ verify under churn
churn &
churn_pid=$!
await_cond 30 test -s "$dir/churn.count" || { log "no churn connection completed"; exit 1; }
agreed=0
t0=${EPOCHREALTIME/./}
for r in $(seq 1 "$ROUNDS"); do
	i=$(( (r - 1) % 2 + 1 ))
	if out=$(verify "$i" 2>&1); then
		agreed=$((agreed + 1))
	else
		log "round $r from node $i disagreed:"
		log "$out"
	fi
done
stop_churn
ms=$(( (${EPOCHREALTIME/./} - t0) / 1000 ))
made=$(awk '{ n += $1 } END { print n + 0 }' "$dir/churn.count")
echo "verify under churn: $agreed of $ROUNDS rounds agreed in $ms ms; $made short" \
	"connections made ($(( made * 1000 / (ms + 1) ))/s), $HELD held"
check "verify under churn: every round agrees ($agreed of $ROUNDS)" test "$agreed" -eq "$ROUNDS"
check "verify under churn: the churn made connections throughout ($made)" \
	test "$made" -ge $((BURST * ROUNDS))
check "after the churn: sync verify agrees" verify 1

touch "$dir/held.go"
wait "$held_pid"
check "the $HELD held connections all answered" clients_ok "$dir/held.json"

echo "checks: $E2E_PASSED passed, $E2E_FAILED failed"
[ "$E2E_FAILED" -eq 0 ]
