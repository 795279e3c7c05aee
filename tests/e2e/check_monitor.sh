#!/usr/bin/env bash
# maglb-monitor on a real pair (suite monitor): two nodes of cluster.sh, each
# with corosync, maglb-dataplane, maglb-syncd (active-passive, preempt, node
# 1 preferred) and maglb-monitor listening on its ring address
# (MONITOR_PORT, 9443) over TLS: a test CA and a server certificate per
# node (its IP as SAN) made with certtool in the test's folder. The
# "operator's machine" is namespace ${P}m on the ring bridge (monitor.sh):
# 198.18.30.100, and .101 (the fuzzer) and .102 (wrong passwords) as clients
# of their own, since the login throttle counts failures by address.
#  a. 40 lbhold connections through node 1 (a line every 100 ms each), their
#     entries synced to node 2; then held idle (lbhold stopped, SIGSTOP) so
#     that the counters stand still;
#  b. a real Prometheus (Debian's) in ${P}m scraping both monitors every
#     second over HTTPS (ca_file: the test CA; basic_auth: a viewer user):
#     both targets up, then Prometheus' latest sample of each compared
#     series equals what maglbctl says on that node (counters, vips,
#     backends, status, sync, cluster), awaited until both settled; every
#     pair is printed (again at the end);
#  c. promtool check metrics passes on a scrape (curl --cacert -u);
#     its first lines are printed;
#  d. auth: no credentials 401 (auth_missing grows), a wrong password 401
#     (auth_failures grows), plain HTTP to the TLS port gets no HTTP answer,
#     a viewer's change 403 (forbidden grows), an admin's session without
#     X-CSRF-Token 403 (csrf_refused grows, nothing changes), with it 200;
#     a wrong method 405, a body over 4 KiB 413; the login throttle of one
#     address leaves the others (Prometheus) alone; every answer carries
#     Content-Security-Policy, X-Content-Type-Options: nosniff and
#     Strict-Transport-Security; the session cookie is Secure, HttpOnly,
#     SameSite=Strict;
#  e. headless Chromium in ${P}m trusting the monitors' keys by their SPKI
#     hash only (--ignore-certificate-errors-spki-list): the admin logs in
#     through login.html; the console's role, members and backends match
#     maglbctl; a click on Drain drains the backend (maglbctl backends, the
#     monitor's log names the user), Undrain brings it back; a screenshot
#     (kept in LOG_DIR); the viewer sees no control, and a POST forced from
#     the page is refused 403; node 2's console says passive;
#  f. 10,000 malformed or oversized requests (tests/e2e/monitor_fuzz.py)
#     against node 1's monitor, several at once, plain bytes among them:
#     the same process still answers /metrics 200, the held connections
#     still exchange data, no drop counter of node 1's dataplane moved
#     (but OTHER_HOST and NOT_VIP: frames not for the dataplane, which
#     af_packet hands it from lb0, its kernel's and flooded ones), the
#     backends are as they were;
#  g. node 1's monitor killed (SIGKILL) under the held traffic and started
#     again: the connections answered all along, node 2's synced entries
#     and both syncds' synced state unchanged, the new monitor serves within
#     MONITOR_BACK_S (5 s) and Prometheus sees it up again.
# The held connections must all survive to the end (lbhold's summary).
# Prints "ok N - ..." / "not ok N - ..." lines and "# ..." notes; exits 1
# when a check failed, 77 when a program it needs is missing. LOG_DIR
# (MONITOR_LOG_DIR, default $MAGLB_BUILD/meson-logs/check_monitor) keeps
# the screenshots, a scrape, promtool's and the fuzzer's output and the
# compared values; everything else is removed on exit (the nodes' logs
# printed if it failed), leftovers of the prefix (MAGLB_E2E_PREFIX, default
# e2emon-) first.
# shellcheck disable=SC2016,SC2034 # the checks run by eval read these
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/monitor.sh

P=${MAGLB_E2E_PREFIX:-e2emon-}
CONNS=40
FUZZ_COUNT=${MONITOR_FUZZ_COUNT:-10000}
FUZZ_WORKERS=8
MONITOR_BACK_S=5
PROM_PORT=9090
LOG_DIR=${MONITOR_LOG_DIR:-$MAGLB_BUILD/meson-logs/check_monitor}
OP=${P}m
OP_FUZZ=${MONITOR_OPERATOR_EXTRA[0]}
OP_WRONG=${MONITOR_OPERATOR_EXTRA[1]}
started=$SECONDS

for tool in certtool openssl curl jq prometheus promtool chromium python3; do
	if ! command -v "$tool" >/dev/null; then
		echo "skipped: $tool is missing (apt-get install gnutls-bin prometheus chromium curl jq)"
		exit 77
	fi
done
if [ ! -x "$MAGLB_BUILD/monitor/maglb-monitor" ]; then
	log "maglb-monitor is not built in $MAGLB_BUILD (meson compile -C $MAGLB_BUILD)"
	exit 1
fi

dir=$(mktemp -d)
mkdir -p "$LOG_DIR" || exit 1
rm -f "$LOG_DIR"/*.png "$LOG_DIR"/*.txt "$LOG_DIR"/*.json
TLS=$dir/tls
USERS=$dir/users
ADMIN_PW=$(openssl rand -hex 12)
VIEWER_PW=$(openssl rand -hex 12)
PROM_USER_PW=$(openssl rand -hex 12)
BROWSER_PID=""
HOLD_PAUSED=""
undo() {
	[ -z "$BROWSER_PID" ] || kill -KILL -- "-$BROWSER_PID" 2>/dev/null
	[ -z "$HOLD_PAUSED" ] || kill -CONT "$HOLD_PAUSED" 2>/dev/null
	[ -z "$BROWSER_PID" ] || wait "$BROWSER_PID" 2>/dev/null
	return 0
}
cluster_on_exit "$P" "$dir" undo

# ------------------------------------------------------------ reporting
N=0
E2E_PASSED=0 E2E_FAILED=0
tap() {
	local what=$1
	shift
	N=$((N + 1))
	if "$@"; then
		echo "ok $N - $what"
		E2E_PASSED=$((E2E_PASSED + 1))
		return 0
	fi
	echo "not ok $N - $what"
	E2E_FAILED=$((E2E_FAILED + 1))
	return 1
}
note() { printf '# %s\n' "$*"; }
now_us() { echo "${EPOCHREALTIME/./}"; }

# ------------------------------------------------------------ helpers

# mcurl ARGS...: curl from the operator's namespace, the test CA trusted.
mcurl() { monitor_curl "$P" "$TLS" "$@"; }
# status ARGS...: the HTTP status only (000: no HTTP answer).
status() { mcurl -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; }
# scrape I: node I's /metrics (as Prometheus' user).
scrape() { mcurl -u "prometheus:$PROM_USER_PW" "$(monitor_url "$1")/metrics"; }
# metric I NAME[{LABELS}]: one sample of node I's scrape (the first match).
metric() {
	scrape "$1" | awk -v n="$2" '$1 == n { print $2; found = 1; exit } END { exit !found }'
}
metric_grew() { [ "$(metric "$1" "$2")" -gt "$3" ]; }

prom() {
	ip netns exec "$OP" curl -sS --max-time 5 \
		"http://127.0.0.1:$PROM_PORT/api/v1/$1" "${@:2}"
}
# prom_value PROMQL: the value of its one series ("none", "n=K" else).
prom_value() {
	prom query --data-urlencode "query=$1" 2>/dev/null |
		jq -r '.data.result | if length == 1 then .[0].value[1]
			elif length == 0 then "none" else "n=\(length)" end' 2>/dev/null
}
prom_targets_up() {
	[ "$(prom targets | jq '[.data.activeTargets[] | select(.health == "up")] | length')" = 2 ]
}

ctl_counter() { cluster_counter "$P" "$@"; }
# backend_counter I ADDR NAME: web's backend ADDR's counter NAME on node I.
backend_counter() {
	ctl_json "$1" counters backend:web | jq -r --arg n "$2 $3" \
		'[.counters[] | select(.scope == "backend:web" and .name == $n) | .value] | add // empty'
}
ctl_json() { cluster_ctl "$P" "$1" --json "${@:2}"; }
backend_state() {
	ctl_json "$1" backends | jq -r --arg a "$2" '.backends[] | select(.vip == "web" and .address == $a) | .state'
}
backend_weight() {
	ctl_json "$1" backends | jq -r --arg a "$2" '.backends[] | select(.vip == "web" and .address == $a) | .weight'
}
backends_line() {   # every backend of web on node I: "ADDR:STATE:WEIGHT ..."
	ctl_json "$1" backends | jq -r '[.backends[] | select(.vip == "web") |
		"\(.address):\(.state):\(.weight)"] | join(" ")'
}
cluster_json() { cluster_syncd_ctl "$P" "$1" --json cluster; }
node_role() { cluster_json "$1" | jq -r .role; }
node_active() { [ "$(node_role "$1")" = active ] && echo 1 || echo 0; }
sync_group() { cluster_sync_json "$P" "$1" | jq -r --arg k "$2" '.groups[] | select(.name == "default") | .[$k]'; }

# compare LABEL PROMQL CMD...: until Prometheus' latest sample of PROMQL is
# CMD's output (both read again on every try, 20 s at most); the pair goes
# to compared.txt.
compare() {
	local label=$1 q=$2 deadline=$((SECONDS + 20)) c p
	shift 2
	while :; do
		c=$("$@" 2>/dev/null)
		p=$(prom_value "$q")
		if [ -n "$c" ] && [ "$p" = "$c" ]; then
			printf '%-44s %-70s = %s (maglbctl: %s)\n' "$label" "$q" "$p" "$c" >>"$LOG_DIR/compared.txt"
			return 0
		fi
		if ((SECONDS >= deadline)); then
			printf '%-44s %-70s = %s, but maglbctl: %s  MISMATCH\n' "$label" "$q" "$p" "$c" \
				>>"$LOG_DIR/compared.txt"
			log "compare $label: Prometheus $q = '$p', maglbctl = '$c' after 20 s"
			return 1
		fi
		sleep 0.3
	done
}

# ----------------------------------------------------- the held connections

HOLD=$(topo_dir "$P")/hold
hold_start() {
	local pid
	rm -f "$HOLD.ready" "$HOLD.snap"
	# --dead-after-ms: long enough for the pause of step b (SIGSTOP)
	ip netns exec "${P}c" "$LBTOOLS/lbhold" --connect "$TOPO_VIP4" "$TOPO_PORT" --conns "$CONNS" \
		--interval-ms 100 --dead-after-ms 120000 --ready-file "$HOLD.ready" \
		--snapshot-file "$HOLD.snap" --json >"$HOLD.json" 2>"$HOLD.err" &
	pid=$!
	echo "$pid" >"$HOLD.pid"
	await_cond 60 _hold_ready_or_gone "$pid"
	[ -e "$HOLD.ready" ] || { log "lbhold: not all answered: $(cat "$HOLD.json" "$HOLD.err")"; return 1; }
}
_hold_ready_or_gone() { [ -e "$HOLD.ready" ] || _pid_gone "$1"; }
hold_pid() { cat "$HOLD.pid"; }
hold_snapshot() {
	rm -f "$HOLD.snap"
	kill -USR1 "$(hold_pid)" && await_cond 5 test -e "$HOLD.snap" && cat "$HOLD.snap"
}
# hold_answered_since T_US: every connection alive and answered since T_US.
_hold_answered() {
	local s
	s=$(hold_snapshot 2>/dev/null) &&
		jq -e --argjson t "$1" --argjson n "$CONNS" \
			'.alive == $n and .failed == 0 and .oldest_reply_t_us > $t' <<<"$s" >/dev/null
}
hold_answered_since() {
	await_cond 15 _hold_answered "$1" || { log "lbhold: $(hold_snapshot)"; return 1; }
}
hold_stop() {
	local pid
	pid=$(hold_pid) || return 1
	rm -f "$HOLD.pid"
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ -s "$HOLD.json" ]
}

# --------------------------------------------------------------- set-up
cluster_setup "$P" 2 && start_backends "$P" || exit 1
for i in 1 2; do
	cluster_corosync_start "$P" "$i" || exit 1
done
cluster_await_members "$P" 1 2 || exit 1
monitor_tls_setup "$TLS" 2 || exit 1
monitor_users "$USERS" "admin:$ADMIN_PW:admin" "viewer:$VIEWER_PW:viewer" \
	"prometheus:$PROM_USER_PW:viewer" || exit 1
for i in 1 2; do
	conf=$dir/n$i.conf
	cluster_config "$P" "$i" "$conf" || exit 1
	sed -i -e "s|^\(cluster = { hash_seed = \"[0-9a-f]*\";\) };|\1 mode = \"active-passive\"; preempt = true; };|" \
		-e "s|^node = { id = $i; |node = { id = $i; priority = $((250 - i)); |" "$conf"
	grep -q 'preempt = true' "$conf" && grep -q "priority = $((250 - i))" "$conf" ||
		cluster_fail "cannot rewrite $conf (cluster_config changed?)"
	monitor_config_add "$conf" "$i" "$TLS" "$USERS"
	cluster_dataplane_start "$P" "$i" "$conf" && cluster_syncd_start "$P" "$i" "$conf" || exit 1
done
for i in 1 2; do
	cluster_await_synced "$P" "$i" || cluster_fail "node $i's syncd is not synced"
done
role_is() { [ "$(node_role "$1" 2>/dev/null)" = "$2" ]; }
await_cond 30 role_is 1 active && await_cond 30 role_is 2 passive ||
	cluster_fail "roles: node 1 $(node_role 1), node 2 $(node_role 2); want active, passive"
for i in 1 2; do
	monitor_start "$P" "$i" "$dir/n$i.conf" || exit 1
done
monitor_operator_setup "$P" || exit 1
note "set-up: 2 nodes (node 1 active), monitors on $(monitor_url 1) and $(monitor_url 2), operator $MONITOR_OPERATOR_ADDR4 in $OP; $((SECONDS - started)) s"

# ------------------------------------------------------------ a. traffic
hold_start || cluster_fail "a: the held connections did not all get through"
own_flows() { cluster_ctl "$P" 1 --json status | jq -r .flows_local; }
synced_flows() { cluster_ctl "$P" "$1" --json status | jq -r .flows_synced; }
synced_is() { [ "$(synced_flows "$1")" = "$2" ]; }
tap "a: $CONNS lbhold connections through node 1, every one answered; node 2 holds their $CONNS synced entries" \
	await_cond 20 synced_is 2 "$CONNS"
cluster_pause "$(hold_pid)"
HOLD_PAUSED=$(hold_pid)
vip_packets() { ctl_counter 1 vip:web PACKETS; }
idle() {
	local a b
	a=$(vip_packets)
	sleep 1
	b=$(vip_packets)
	[ "$a" = "$b" ]
}
tap "a: traffic idle (lbhold stopped): node 1's VIP packets stand still at $(vip_packets)" \
	await_cond 20 idle

# ---------------------------------------------------------- b. Prometheus
mkdir -p "$dir/prometheus"
printf '%s' "$PROM_USER_PW" >"$dir/prometheus/password"
chmod 0600 "$dir/prometheus/password"
cat >"$dir/prometheus/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: maglb
    scheme: https
    metrics_path: /metrics
    tls_config:
      ca_file: $TLS/ca.pem
    basic_auth:
      username: prometheus
      password_file: $dir/prometheus/password
    static_configs:
      - targets: ['$(cluster_ring_addr4 1):$MONITOR_PORT']
        labels: {node: n1}
      - targets: ['$(cluster_ring_addr4 2):$MONITOR_PORT']
        labels: {node: n2}
EOF
promtool check config "$dir/prometheus/prometheus.yml" >"$dir/prometheus/check.txt" 2>&1 ||
	cluster_fail "b: promtool check config: $(cat "$dir/prometheus/check.txt")"
# nice: the two dataplanes' control threads share these two cores
ip netns exec "$OP" nice -n 19 prometheus --config.file="$dir/prometheus/prometheus.yml" \
	--storage.tsdb.path="$dir/prometheus/data" --web.listen-address="127.0.0.1:$PROM_PORT" \
	>"$dir/prometheus/out" 2>"$(topo_dir "$P")/prometheus-n0.err" &
echo $! >"$(topo_dir "$P")/prometheus.pid"
prom_ready() { ip netns exec "$OP" curl -sf --max-time 2 "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null; }
await_cond 30 prom_ready || cluster_fail "b: Prometheus did not get ready: $(tail -n 5 "$(topo_dir "$P")/prometheus-n0.err")"
t0=$SECONDS
await_cond 30 prom_targets_up
tap "b: Prometheus scrapes both monitors over HTTPS (the test CA, basic auth): both targets up ($((SECONDS - t0)) s)" \
	prom_targets_up ||
	note "b: targets: $(prom targets | jq -c '[.data.activeTargets[] | [.labels.node, .health, .lastError]]')"

: >"$LOG_DIR/compared.txt"
status_value() { ctl_json "$1" status | jq -r ".$2"; }
vips_value() { ctl_json "$1" vips | jq -r --arg k "$2" '.vips[] | select(.name == "web") | .[$k]'; }
one() { echo 1; }
B1=$(topo_backend_addr4 l2 1) B2=$(topo_backend_addr4 l2 2) B3=$(topo_backend_addr4 l2 3)
n1='node="n1"' n2='node="n2"'
series=(
	"n1 vip packets|maglb_vip_packets_total{$n1,vip=\"web\"}|ctl_counter 1 vip:web PACKETS"
	"n1 vip bytes|maglb_vip_bytes_total{$n1,vip=\"web\"}|ctl_counter 1 vip:web BYTES"
	"n1 vip new flows|maglb_vip_new_flows_total{$n1,vip=\"web\"}|ctl_counter 1 vip:web NEW_FLOWS"
	"n1 vip flows|maglb_vip_flows{$n1,vip=\"web\"}|vips_value 1 flows"
	"n1 vip backends up|maglb_vip_backends_up{$n1,vip=\"web\"}|vips_value 1 backends_up"
	"n1 vip owned|maglb_vip_owned{$n1,vip=\"web\"}|vips_value_num 1 owned"
)
vips_value_num() { [ "$(vips_value "$@")" = true ] && echo 1 || echo 0; }
for b in "$B1" "$B2" "$B3"; do
	series+=("n1 backend $b packets|maglb_backend_packets_total{$n1,vip=\"web\",backend=\"$b\"}|backend_counter 1 $b PACKETS")
	series+=("n1 backend $b new flows|maglb_backend_new_flows_total{$n1,vip=\"web\",backend=\"$b\"}|backend_counter 1 $b NEW_FLOWS")
	series+=("n1 backend $b weight|maglb_backend_weight{$n1,vip=\"web\",backend=\"$b\"}|backend_weight 1 $b")
	series+=("n1 backend $b state $(backend_state 1 "$b")|maglb_backend_state{$n1,vip=\"web\",backend=\"$b\",state=\"$(backend_state 1 "$b")\"}|one")
done
series+=(
	"n1 flow table local|maglb_flow_table_entries{$n1,table=\"local\"}|status_value 1 flows_local"
	"n1 forwarded|maglb_dataplane_events_total{$n1,event=\"forwarded\"}|ctl_counter 1 total FORWARDED"
	"n1 new flows|maglb_dataplane_events_total{$n1,event=\"new_flows\"}|ctl_counter 1 total NEW_FLOWS"
	"n1 sync entries sent|maglb_sync_entries_sent_total{$n1,group=\"default\"}|sync_group 1 entries_sent"
	"n2 flow table synced|maglb_flow_table_entries{$n2,table=\"synced\"}|status_value 2 flows_synced"
	"n2 sync entries received|maglb_sync_entries_received_total{$n2,group=\"default\"}|sync_group 2 entries_received"
	"n2 sync entries imported|maglb_sync_entries_imported_total{$n2,group=\"default\"}|sync_group 2 imported"
	"n1 cluster active|maglb_cluster_active{$n1}|node_active 1"
	"n2 cluster active|maglb_cluster_active{$n2}|node_active 2"
	"n1 dataplane up|maglb_up{$n1,daemon=\"dataplane\"}|one"
	"n2 syncd up|maglb_up{$n2,daemon=\"syncd\"}|one"
)
for s in "${series[@]}"; do
	IFS='|' read -r label q cmd <<<"$s"
	# shellcheck disable=SC2086 # the command's words
	tap "b: Prometheus $q equals maglbctl's ($cmd)" compare "$label" "$q" $cmd
done
note "b: Prometheus' latest samples compared with maglbctl (node 1 active, node 2 passive):"
sed 's/^/#   /' "$LOG_DIR/compared.txt"
cluster_resume "$HOLD_PAUSED"
HOLD_PAUSED=""

# ------------------------------------------------------ c. promtool
scrape 1 >"$LOG_DIR/scrape-n1.txt"
tap "c: a scrape of node 1 ($(wc -l <"$LOG_DIR/scrape-n1.txt") lines) passes promtool check metrics" \
	sh -c 'promtool check metrics <"$1" >"$2" 2>&1' sh "$LOG_DIR/scrape-n1.txt" "$LOG_DIR/promtool.txt" ||
	{ note "c: promtool check metrics says:"; sed 's/^/#   /' "$LOG_DIR/promtool.txt"; }
note "c: the scrape, first 30 lines (all in $LOG_DIR/scrape-n1.txt):"
head -n 30 "$LOG_DIR/scrape-n1.txt" | sed 's/^/#   /'

# ----------------------------------------------------------- d. auth
U1=$(monitor_url 1)
missing0=$(metric 1 maglb_monitor_auth_missing_total)
tap "d: /metrics without credentials: 401" test "$(status "$U1/metrics")" = 401
tap "d: ... and maglb_monitor_auth_missing_total grew (was $missing0)" \
	await_cond 5 metric_grew 1 maglb_monitor_auth_missing_total "$missing0"
failures0=$(metric 1 maglb_monitor_auth_failures_total)
tap "d: a wrong password (from $OP_WRONG): 401" \
	test "$(status --interface "$OP_WRONG" -u "viewer:not-$VIEWER_PW" "$U1/api/v1/state")" = 401
tap "d: ... and maglb_monitor_auth_failures_total grew (was $failures0)" \
	await_cond 5 metric_grew 1 maglb_monitor_auth_failures_total "$failures0"
plain_refused() {
	local code rc=0
	: >"$dir/plain.out"
	code=$(ip netns exec "$OP" curl -s --max-time 5 -o "$dir/plain.out" -w '%{http_code}' \
		"http://$(cluster_ring_addr4 1):$MONITOR_PORT/metrics") || rc=$?
	note "d: plain HTTP to the TLS port: curl exit $rc, HTTP status $code, $(wc -c <"$dir/plain.out") bytes"
	[ "$rc" -ne 0 ] && [ "$code" = 000 ]
}
tap "d: plain HTTP to the TLS port gets no HTTP answer" plain_refused
forbidden0=$(metric 1 maglb_monitor_forbidden_total)
drain_b1='{"vip":"web","backend":"'$B1'","action":"drain"}'
tap "d: a viewer's POST /api/v1/backend (HTTP Basic): 403" \
	test "$(status -u "viewer:$VIEWER_PW" -H 'Content-Type: application/json' -d "$drain_b1" "$U1/api/v1/backend")" = 403
tap "d: ... maglb_monitor_forbidden_total grew, $B1 still up" \
	eval 'await_cond 5 metric_grew 1 maglb_monitor_forbidden_total "$forbidden0" && [ "$(backend_state 1 "$B1")" = up ]'
JAR=$dir/admin.jar
login_admin() {
	mcurl -c "$JAR" -D "$dir/login.head" -o /dev/null --data-urlencode user=admin \
		--data-urlencode "password=$ADMIN_PW" "$U1/login" &&
		grep -q '^HTTP/1.1 303' "$dir/login.head" && grep -qi '^Location: /\s*$' "$dir/login.head" &&
		grep -qiE '^Set-Cookie: maglb_session=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict; Secure' "$dir/login.head"
}
tap "d: the admin logs in (POST /login): 303 to /, a Secure HttpOnly SameSite=Strict session cookie" login_admin
CSRF=$(mcurl -b "$JAR" "$U1/api/v1/state" | jq -r '.csrf // empty')
tap "d: the session's /api/v1/state gives its CSRF token" test "${#CSRF}" -eq 64
csrf0=$(metric 1 maglb_monitor_csrf_refused_total)
drain_b3='{"vip":"web","backend":"'$B3'","action":"drain"}'
undrain_b3='{"vip":"web","backend":"'$B3'","action":"undrain"}'
tap "d: the admin's session POSTs a drain without X-CSRF-Token: 403" \
	test "$(status -b "$JAR" -H 'Content-Type: application/json' -d "$drain_b3" "$U1/api/v1/backend")" = 403
tap "d: ... maglb_monitor_csrf_refused_total grew, $B3 still up" \
	eval 'await_cond 5 metric_grew 1 maglb_monitor_csrf_refused_total "$csrf0" && [ "$(backend_state 1 "$B3")" = up ]'
tap "d: with the token: 200, and maglbctl says $B3 is draining" \
	eval 'test "$(status -b "$JAR" -H "X-CSRF-Token: $CSRF" -H "Content-Type: application/json" -d "$drain_b3" "$U1/api/v1/backend")" = 200 &&
		[ "$(backend_state 1 "$B3")" = draining ]'
tap "d: undrain with the token: 200, $B3 up again with its weight 1" \
	eval 'test "$(status -b "$JAR" -H "X-CSRF-Token: $CSRF" -H "Content-Type: application/json" -d "$undrain_b3" "$U1/api/v1/backend")" = 200 &&
		[ "$(backend_state 1 "$B3")" = up ] && [ "$(backend_weight 1 "$B3")" = 1 ]'
tap "d: GET /api/v1/backend: 405" test "$(status -u "viewer:$VIEWER_PW" "$U1/api/v1/backend")" = 405
head -c 5000 /dev/zero | tr '\0' x >"$dir/big.body"
tap "d: a body of 5000 bytes: 413" \
	test "$(status -b "$JAR" -H "X-CSRF-Token: $CSRF" -H 'Content-Type: application/json' --data-binary "@$dir/big.body" "$U1/api/v1/backend")" = 413
security_headers() {   # ARGS...: the answer's headers carry the three
	local h
	h=$(mcurl -o /dev/null -D - "$@" | tr -d '\r')
	grep -qi "^Content-Security-Policy: default-src 'self'; script-src 'self'" <<<"$h" &&
		! grep -i '^Content-Security-Policy:' <<<"$h" | grep -q unsafe &&
		grep -qi '^X-Content-Type-Options: nosniff$' <<<"$h" &&
		grep -qiE '^Strict-Transport-Security: max-age=[1-9][0-9]*' <<<"$h" ||
		{ log "headers of $*: $h"; return 1; }
}
tap "d: security headers on a 200 (/metrics)" security_headers -u "viewer:$VIEWER_PW" "$U1/metrics"
tap "d: security headers on a 303 (/ without a session)" security_headers "$U1/"
tap "d: security headers on a 401" security_headers "$U1/api/v1/state"
tap "d: security headers on the console's page (/ with the session)" security_headers -b "$JAR" "$U1/"
login_from() {   # ADDR PASSWORD: where POST /login sends ADDR
	mcurl --interface "$1" -o /dev/null -w '%{redirect_url}' --data-urlencode user=viewer \
		--data-urlencode "password=$2" "$U1/login"
}
throttled0=$(metric 1 maglb_monitor_logins_throttled_total)
throttle() {
	local k to
	for k in 2 3 4; do   # the 1st failure of $OP_WRONG was above
		to=$(login_from "$OP_WRONG" wrong)
		[[ $to == */login.html\?failed=1 ]] || { log "failure $k went to '$to'"; return 1; }
	done
	to=$(login_from "$OP_WRONG" "$VIEWER_PW")
	[[ $to == */login.html\?throttled=1 ]] || { log "after 4 failures, the right password went to '$to'"; return 1; }
}
tap "d: wrong logins go to login.html?failed=1; after 4 from $OP_WRONG even the right password gets ?throttled=1" throttle
tap "d: ... maglb_monitor_logins_throttled_total grew, and the throttle of $OP_WRONG leaves others alone: a login from $MONITOR_OPERATOR_ADDR4 gets in" \
	eval 'metric_grew 1 maglb_monitor_logins_throttled_total "$throttled0" &&
		[[ $(login_from "$MONITOR_OPERATOR_ADDR4" "$VIEWER_PW") == */ ]]'
tap "d: Prometheus' targets still up" prom_targets_up

# ---------------------------------------------------------- e. Chromium
untrusted() {   # without the test CA, curl refuses the certificate (60)
	local rc=0
	ip netns exec "$OP" curl -s --max-time 5 -o /dev/null "$U1/login.html" || rc=$?
	[ "$rc" = 60 ]
}
tap "e: the monitors' certificate is trusted by nobody but the test (curl without --cacert: exit 60)" untrusted
SPKI="$(monitor_spki "$TLS" 1),$(monitor_spki "$TLS" 2)"
note "e: Chromium trusts the monitors' keys by SPKI SHA-256 only: $SPKI"
mkdir -p "$dir/chromium"
# Its own session (a process group: ended whole on exit); nice as Prometheus.
setsid ip netns exec "$OP" nice -n 19 chromium --headless=new --no-sandbox --disable-gpu \
	--no-first-run --no-default-browser-check --disable-extensions \
	--disable-background-networking --disable-component-update --disable-sync \
	--password-store=basic --use-mock-keychain --hide-scrollbars --window-size=1280,900 \
	--user-data-dir="$dir/chromium" --remote-debugging-address=127.0.0.1 --remote-debugging-port=0 \
	--ignore-certificate-errors-spki-list="$SPKI" about:blank \
	>"$LOG_DIR/chromium.txt" 2>&1 &
BROWSER_PID=$!
await_cond 20 test -s "$dir/chromium/DevToolsActivePort" || cluster_fail "e: Chromium did not start: $(tail -n 5 "$LOG_DIR/chromium.txt")"
CDP_PORT=$(head -n 1 "$dir/chromium/DevToolsActivePort")
console() {
	ip netns exec "$OP" python3 tests/e2e/monitor_console.py --port "$CDP_PORT" "$@" 2>>"$LOG_DIR/console.txt"
}
tap "e: the admin logs in through login.html (typed, submit clicked) and gets the console" \
	console login "$U1" admin "$ADMIN_PW"
console read >"$dir/console-admin.json"
cp "$dir/console-admin.json" "$LOG_DIR/console-admin.json"
page() { jq -r "$1" "$dir/console-admin.json"; }
# The page polls every second and maglbctl asks now: a role that moved in
# between (these cores are shared) is read again, for 10 s at most.
role_badge_ok() {   # I FILE: the console's role badge is node I's role
	local want
	console read >"$2" && want=$(node_role "$1") &&
		[ "$(jq -r '.role_attr + "/" + .role' "$2")" = "$want/$want" ]
}
tap "e: the role badge shows node 1's role as maglbctl cluster says ($(node_role 1))" \
	await_cond 10 role_badge_ok 1 "$dir/console-admin.json"
_members_ok() {
	console read >"$dir/console-admin.json" || return 1
	members_want=$(cluster_json 1 | jq -c '[.members[] | [.id, .role]] | sort')
	members_got=$(jq -c '[.members[] | [.node, .role]] | sort' "$dir/console-admin.json")
	[ "$members_want" = "$members_got" ] && [ "$(jq '.members | length' "$dir/console-admin.json")" = 2 ]
}
members_ok() {
	local rc=0
	await_cond 10 _members_ok || rc=1
	note "e: members: console $members_got, maglbctl cluster $members_want"
	return "$rc"
}
tap "e: the members table has a row per node with the role maglbctl cluster gives" members_ok
backends_ok() {   # I JSON: the console's backends of web are maglbctl's, state by state
	local want got
	want=$(ctl_json "$1" backends | jq -c '[.backends[] | select(.vip == "web") | [.address, .state]] | sort')
	got=$(jq -c '[.vips[] | select(.vip == "web") | .backends[] | [.backend, .state]] | sort' "$2")
	note "e: backends: console $got, maglbctl backends $want"
	[ "$want" = "$got" ] && [ "$(jq '[.vips[] | select(.vip == "web") | .backends[]] | length' "$2")" = 3 ]
}
tap "e: the VIP web has its 3 backends, each in the state maglbctl backends says" backends_ok 1 "$dir/console-admin.json"
tap "e: the admin has a Drain control per backend" test "$(page '[.vips[].backends[].drain.action] | join(" ")')" = "drain drain drain"
DRAIN="#vips .vip[data-vip=\"web\"] tr.backend[data-backend=\"$B2\"] button.drain"
tap "e: a click on $B2's Drain: the console shows it draining" \
	eval 'console click "$DRAIN" && console await-backend web "$B2" draining undrain'
tap "e: ... and maglbctl backends on node 1 says $B2 is draining (weight 0)" \
	test "$(backend_state 1 "$B2")/$(backend_weight 1 "$B2")" = draining/0
tap "e: ... the monitor's log names the user: 'user admin ($MONITOR_OPERATOR_ADDR4): backend drain web $B2'" \
	grep -qF "user admin ($MONITOR_OPERATOR_ADDR4): backend drain web $B2" "$(monitor_log "$P" 1)"
SHOT=$LOG_DIR/console-admin-draining.png
console screenshot "$SHOT" >/dev/null
tap "e: a screenshot of the console with $B2 draining" test -s "$SHOT"
note "screenshot: $SHOT"
tap "e: Undrain: the console shows $B2 up again, maglbctl too (weight 1), logged with the user" \
	eval 'console click "$DRAIN" && console await-backend web "$B2" up drain &&
		[ "$(backend_state 1 "$B2")/$(backend_weight 1 "$B2")" = up/1 ] &&
		grep -qF "user admin ($MONITOR_OPERATOR_ADDR4): backend set-weight web $B2 1" "$(monitor_log "$P" 1)"'
tap "e: the admin logs out (Log out): back to login.html" console logout
tap "e: the viewer logs in through login.html" console login "$U1" viewer "$VIEWER_PW"
console read >"$dir/console-viewer.json"
cp "$dir/console-viewer.json" "$LOG_DIR/console-viewer.json"
tap "e: the viewer's console: no drain, weight or standby control" \
	test "$(jq -c '[.drain_buttons, .weight_forms, .standby_toggle, ([.vips[].backends[].drain] | unique)]' "$dir/console-viewer.json")" = '[0,0,false,[null]]'
tap "e: the viewer's console shows the backends as maglbctl does" backends_ok 1 "$dir/console-viewer.json"
viewer_post() {
	local out
	out=$(console post /api/v1/backend "$drain_b1") || return 1
	note "e: the viewer's POST from the page: $out"
	jq -e '.status == 403 and .csrf_known' <<<"$out" >/dev/null
}
tap "e: a POST forced from the viewer's page (its own CSRF token): 403" viewer_post
tap "e: ... and $B1 is still up with weight 1" test "$(backend_state 1 "$B1")/$(backend_weight 1 "$B1")" = up/1
console screenshot "$LOG_DIR/console-viewer.png" >/dev/null
note "screenshot: $LOG_DIR/console-viewer.png"
tap "e: node 2's console (the viewer): the role badge says $(node_role 2), as maglbctl cluster on node 2" \
	eval 'console login "$(monitor_url 2)" viewer "$VIEWER_PW" &&
		await_cond 10 role_badge_ok 2 "$dir/console-n2.json"'
kill -KILL -- "-$BROWSER_PID" 2>/dev/null
wait "$BROWSER_PID" 2>/dev/null
BROWSER_PID=""

# ----------------------------------------------------------- f. garbage
DROPS=$(sed -n '/^#define DP_DROP_REASONS/,/^$/p' dataplane/core/counters.h |
	grep -o 'X([A-Z_0-9]*' | cut -c3- | grep -vxE 'OTHER_HOST|NOT_VIP' | paste -sd'|')
drops() {
	ctl_json 1 counters total | jq -r --arg re "^($DROPS)\$" \
		'[.counters[] | select(.name | test($re)) | "\(.name)=\(.value)"] | join(" ")'
}
pid_before=$(monitor_pid "$P" 1)
rss() { awk '/^VmRSS/ { print $2 " kB" }' "/proc/$1/status" 2>/dev/null; }
rss_before=$(rss "$pid_before")
drops_before=$(drops)
backends_before=$(backends_line 1)
refused0=$(metric 1 maglb_monitor_http_refused_requests_total)
requests0=$(metric 1 maglb_monitor_http_requests_total)
# The fuzzer's own admin session (from its address), so that the bad JSON
# bodies reach the parser.
mcurl --interface "$OP_FUZZ" -c "$dir/fuzz.jar" -o /dev/null --data-urlencode user=admin \
	--data-urlencode "password=$ADMIN_PW" "$U1/login"
FUZZ_COOKIE="maglb_session=$(awk '$6 == "maglb_session" { print $7 }' "$dir/fuzz.jar")"
FUZZ_CSRF=$(mcurl -b "$dir/fuzz.jar" "$U1/api/v1/state" | jq -r '.csrf // empty')
t_fuzz=$(now_us)
t0=$SECONDS
ip netns exec "$OP" nice -n 10 python3 tests/e2e/monitor_fuzz.py --host "$(cluster_ring_addr4 1)" \
	--port "$MONITOR_PORT" --cafile "$TLS/ca.pem" --count "$FUZZ_COUNT" --workers "$FUZZ_WORKERS" \
	--source "$OP_FUZZ" --cookie "$FUZZ_COOKIE" --csrf "$FUZZ_CSRF" --json \
	>"$LOG_DIR/fuzz.json" 2>"$LOG_DIR/fuzz.err"
fuzz_rc=$?
fuzz_s=$((SECONDS - t0))
note "f: the fuzzer: exit $fuzz_rc, $(jq -r '"\(.requests) requests in \(.seconds) s, \(.problems) problems"' "$LOG_DIR/fuzz.json" 2>/dev/null)"
jq -r '.by_kind | to_entries[] | "#   \(.key): \(.value | tostring)"' "$LOG_DIR/fuzz.json" 2>/dev/null
jq -r '.examples[]? | "#   problem: \(.)"' "$LOG_DIR/fuzz.json" 2>/dev/null
[ -s "$LOG_DIR/fuzz.err" ] && sed 's/^/#   fuzzer stderr: /' "$LOG_DIR/fuzz.err" | head -n 20
tap "f: $FUZZ_COUNT malformed or oversized requests sent ($fuzz_s s), none answered 200 or 5xx, no connection refused" \
	test "$fuzz_rc" -eq 0
monitor_same() {
	local now
	now=$(monitor_pid "$P" 1)
	if [ "$now" != "$pid_before" ] || _pid_gone "$pid_before"; then
		log "f: node 1's monitor was pid $pid_before, now '${now:-none}'; its log ends: $(tail -n 3 "$(monitor_log "$P" 1)")"
		return 1
	fi
}
tap "f: node 1's monitor is the same process (pid $pid_before; RSS $rss_before before, $(rss "$pid_before") after)" monitor_same
tap "f: ... and answers /metrics 200" test "$(status -u "prometheus:$PROM_USER_PW" "$U1/metrics")" = 200
note "f: maglb_monitor_http_requests_total $requests0 -> $(metric 1 maglb_monitor_http_requests_total), maglb_monitor_http_refused_requests_total $refused0 -> $(metric 1 maglb_monitor_http_refused_requests_total)"
tap "f: the held connections exchanged data all along (each answered since the fuzzer began, none failed)" \
	hold_answered_since "$t_fuzz"
drops_after=$(drops)
tap "f: no drop counter of node 1's dataplane moved (but OTHER_HOST, NOT_VIP)" test "$drops_after" = "$drops_before" ||
	{ note "f: before: $drops_before"; note "f: after:  $drops_after"; }
tap "f: node 1's backends as before ($backends_before)" test "$(backends_line 1)" = "$backends_before"
note "f: node 1: role $(node_role 1), role changes $(cluster_json 1 | jq -r .role_changes) (the two cores are shared)"

# ------------------------------------------------------ g. kill -9
synced2_before=$(synced_flows 2)
t_kill=$(now_us)
pid_old=$(monitor_pid "$P" 1)
monitor_kill9 "$P" 1
killed_at=$SECONDS
tap "g: node 1's monitor killed (SIGKILL, pid $pid_old)" _pid_gone "$pid_old"
sleep 1     # a second without a monitor under traffic, as a crash leaves it
t0=$EPOCHREALTIME
monitor_start "$P" 1 "$dir/n1.conf" || cluster_fail "g: the monitor did not start again"
fresh() {   # the new monitor's scrape: 200, both daemons up, collected after the kill
	local s
	s=$(scrape 1) &&
		grep -qx 'maglb_up{daemon="dataplane"} 1' <<<"$s" && grep -qx 'maglb_up{daemon="syncd"} 1' <<<"$s" &&
		awk -v t="${t_kill:0:-6}" '$1 == "maglb_monitor_snapshot_timestamp_seconds" { exit !($2 >= t) }' <<<"$s"
}
await_cond "$MONITOR_BACK_S" fresh
back_ms=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }')
tap "g: the new monitor (pid $(monitor_pid "$P" 1)) serves fresh /metrics ${back_ms} ms after its start (within $MONITOR_BACK_S s)" fresh
tap "g: Prometheus sees node 1 up again" \
	eval 'compare "n1 up after the restart" "up{$n1}" one'
tap "g: the held connections never stopped (each answered since the kill, none failed)" hold_answered_since "$t_kill"
tap "g: node 2's synced entries unchanged ($synced2_before)" test "$(synced_flows 2)" = "$synced2_before"
tap "g: both syncds synced" eval '[ "$(cluster_sync_value "$P" 1 synced)" = 1 ] && [ "$(cluster_sync_value "$P" 2 synced)" = 1 ]'
same_daemons() {
	local x pid
	for x in dataplane-n1 dataplane-n2 syncd-n1 syncd-n2 corosync-n1 corosync-n2; do
		pid=$(_cluster_pid "$P" "$x") && ! _pid_gone "$pid" || { log "g: $x is gone"; return 1; }
	done
}
tap "g: the dataplanes, syncds and corosyncs are the processes of the start" same_daemons
note "g: $((SECONDS - killed_at)) s from the kill to here"

# ------------------------------------------------------------------ end
hold_stop
held_all() { jq -e --argjson n "$CONNS" '.conns == $n and .alive == $n and .failed == 0' "$HOLD.json" >/dev/null; }
tap "the $CONNS held connections lived through every step: $(jq -c '{conns, alive, failed, max_gap_ms}' "$HOLD.json")" \
	held_all
note "(max_gap_ms: the pause of step b, lbhold stopped)"
note "Prometheus vs maglbctl, compared (also in $LOG_DIR/compared.txt):"
sed 's/^/#   /' "$LOG_DIR/compared.txt"
note "screenshots: $LOG_DIR/console-admin-draining.png $LOG_DIR/console-viewer.png"
note "runtime: $((SECONDS - started)) s"
echo "1..$N"
echo "checks: $E2E_PASSED passed, $E2E_FAILED failed"
[ "$E2E_FAILED" -eq 0 ]
