#!/usr/bin/env bash
# check_console: maglb-monitor's web console (monitor/www) in headless
# Chromium, used the way an operator uses it (meson test check_console,
# suite unit):
#
#   tests/unit/check_console.sh [WWW_DIR [LOG_DIR]]
#
# It serves WWW_DIR with tests/unit/console_server.py (the daemon's
# Content-Security-Policy and JSON API, answered from WWW_DIR/fixtures) on a
# free loopback port, starts Chromium with a profile of its own through
# tests/unit/cdp.py and checks, in that browser:
#  - without a session / sends the browser to /login.html; a wrong password
#    and a throttled login bring the login page back with their message;
#  - the admin fixture (lb-a): the header, the cluster members and their
#    roles, every VIP and every backend with its state and its agreed and
#    local health as the fixture has them, the charts drawn on their
#    canvases, the events as text; the page lays out at 1280, 760 and 400
#    pixels without scrolling sideways;
#  - admin actions from the page: drain, undrain, a refused and an accepted
#    weight, standby on (after its confirmation) and off: the page shows
#    the new state, the server got the POST with the session's
#    X-CSRF-Token; a POST without the token or with a wrong one is refused
#    (403); a failed action (POST /_test/fail) and a failed poll show
#    #message and #status; logout ends the session;
#  - the viewer fixture (lb-b): no management control, and POSTs forced
#    from the page (no token, a wrong one, its own) are refused 403;
#  - the degraded fixture (lb-c): the errors list, the cards without data.
# cdp.py reports to each command the page's script errors, console errors
# and CSP violations since the page loaded: each one fails a check of its
# own, and the server's log must hold no CSP report at the end.
#
# LOG_DIR (default: $TMPDIR/maglb-check-console) gets the screenshots and,
# at the end, the server's log (its POSTs and CSP reports, JSON lines), its
# stderr, Chromium's log and cdp.py's messages. Prints "ok N - ..." / "not ok N - ..."
# lines; exits 1 when a check fails, 77 (skipped) without Chromium, else 0.
# CHROMIUM names the browser (default: chromium, chromium-browser,
# google-chrome, the first found).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
www=$(cd "${1:-$here/../../monitor/www}" && pwd) || exit 1
logdir=${2:-${TMPDIR:-/tmp}/maglb-check-console}
fixtures=$www/fixtures
started=$SECONDS

chromium=${CHROMIUM:-}
if [ -z "$chromium" ]; then
	for c in chromium chromium-browser google-chrome; do
		if command -v "$c" >/dev/null; then
			chromium=$c
			break
		fi
	done
fi
if [ -z "$chromium" ] || ! command -v "$chromium" >/dev/null; then
	printf 'skipped: no chromium (apt-get install chromium, or set CHROMIUM)\n'
	exit 77
fi

# The interpreter itself, not a wrapper (pyenv's shims cost a fork and a
# shell a run, and cdp.py runs a hundred times): python3 -S, standard
# library only.
py=$(python3 -c 'import sys; print(sys.executable)') || exit 1
py() { "$py" -S "$@"; }

# What the checks read stays in $tmp, the run's own: LOG_DIR gets copies
# at the end, so that two runs at once (two meson test) cannot mix logs.
mkdir -p "$logdir" || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/maglb-check-console.XXXXXX") || exit 1
logs=$tmp/logs
mkdir "$logs" && : >"$logs/cdp.log" || exit 1
server_pid=
browser_pid=
checks=0
failed=0
: >"$tmp/page-errors"
: >"$tmp/page-errors.told"

cleanup() {
	local rc=$? i
	set +e
	if [ -n "$browser_pid" ]; then
		# cdp.py launch started it as the leader of a process group of its own
		kill -TERM -- "-$browser_pid" 2>/dev/null
		for ((i = 0; i < 50; i++)); do
			kill -0 "$browser_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$browser_pid" 2>/dev/null
	fi
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
	fi
	cp "$tmp/profile/chromium.log" "$logs/chromium.log" 2>/dev/null
	cp "$logs"/* "$logdir"/ 2>/dev/null
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

_pass() {
	checks=$((checks + 1))
	printf 'ok %d - %s\n' "$checks" "$1"
}

_fail() {
	local name=$1
	shift
	checks=$((checks + 1))
	failed=$((failed + 1))
	printf 'not ok %d - %s\n' "$checks" "$name"
	printf '%s\n' "$@" | sed -e '/^$/d' -e 's/^/#   /'
}

# The page's errors that cdp.py reported (in $tmp/page-errors, from any
# subshell) and no check has yet: a failed check of their own, once each.
page_errors() {
	local new
	new=$(sort -u "$tmp/page-errors" | grep -vxF -f "$tmp/page-errors.told")
	if [ -n "$new" ]; then
		printf '%s\n' "$new" >>"$tmp/page-errors.told"
		_fail "the page: no script error, console error or CSP violation" "$new"
	fi
}

pass() { page_errors; _pass "$@"; }

# fail NAME [DETAIL...]: each DETAIL (lines) shown under it, as # comments.
fail() { page_errors; _fail "$@"; }

# cdp CMD ARGS...: cdp.py on the test's browser; its messages in
# $tmp/cdp.err, and all of them in LOG_DIR/cdp.log. The page's errors go to
# page_errors, and a command that did its work but saw some (exit 2) counts
# as done: cdp.py reports them again to every later command on that page
# (Chromium keeps them), they fail one check, not all the later ones.
cdp() {
	local rc=0 t0=${EPOCHREALTIME/[.,]/} ms
	"$py" -S "$here/cdp.py" --port "$devtools" "$@" 2>"$tmp/cdp.err" || rc=$?
	ms=$(((${EPOCHREALTIME/[.,]/} - t0) / 1000))
	if [ -s "$tmp/cdp.err" ] || ((ms > 3000)); then
		{ printf '## cdp.py %s: exit %d, %d ms\n' "$*" "$rc" "$ms"; cat "$tmp/cdp.err"; } >>"$logs/cdp.log"
	fi
	sed -n 's/^cdp\.py [a-z]*: page: //p' "$tmp/cdp.err" >>"$tmp/page-errors"
	[ "$rc" = 2 ] && rc=0
	return "$rc"
}

# js_string TEXT: TEXT as a JavaScript (JSON) string literal.
js_string() { py -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }

# check NAME JS: passes once JS is truthy in the page (polled up to 8 s).
check() {
	local name=$1 js=$2 out
	if out=$(cdp wait --settle 0 --timeout 8 "$js"); then
		pass "$name"
	else
		fail "$name" "$out" "$(cat "$tmp/cdp.err")"
	fi
}

# check_eq NAME WANT JS: passes once String(JS), awaited when a promise, is
# WANT (polled up to 8 s); else shows what it was.
check_eq() {
	local name=$1 want=$2 js=$3 err got
	if cdp wait --settle 0 --timeout 8 "(async () => String(await ($js)) === $(js_string "$want"))()" >/dev/null; then
		pass "$name"
	else
		err=$(cat "$tmp/cdp.err")
		got=$(cdp eval --settle 0 --allow-errors "(async () => String(await ($js)))()")
		fail "$name" "want: $want" "got:  $got" "$err"
	fi
}

# step NAME CDP_ARGS...: an operator's action (a click, typing); reported
# only when it fails.
step() {
	local name=$1
	shift
	if ! cdp "$@" >/dev/null; then
		fail "$name: cdp.py $*" "$(cat "$tmp/cdp.err")"
		return 1
	fi
}

# fixture FILE PYTHON: the value of PYTHON (s: the fixture's JSON) as
# compact JSON, as the page's JSON.stringify writes it.
fixture() {
	py - "$fixtures/$1" "$2" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps(eval("(" + sys.argv[2] + ")"), separators=(",", ":"), ensure_ascii=False))
EOF
}

# logged PYTHON: how many of the server's log entries (e: one) PYTHON holds for.
logged() {
	py - "$logs/server.log" "$1" <<'EOF'
import json, sys
entries = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
test = compile("(" + sys.argv[2] + ")", "check", "eval")
print(sum(1 for e in entries if eval(test, {"e": e})))
EOF
}

# check_logged NAME PYTHON [N]: the server logged N (default: at least 1)
# entries PYTHON holds for; the page may be a moment ahead of the log.
check_logged() {
	local name=$1 expr=$2 want=${3:-} n deadline=$((SECONDS + 3))
	while :; do
		n=$(logged "$expr") || n=error
		if { [ -z "$want" ] && [ "$n" != error ] && [ "$n" -ge 1 ]; } || [ "$n" = "$want" ]; then
			pass "$name"
			return 0
		fi
		((SECONDS < deadline)) || break
		sleep 0.1
	done
	fail "$name" "$n entries of the server's log match: $expr" "$(tail -n 5 "$logs/server.log")"
}

# http METHOD PATH [JSON]: the test's own request; prints the status.
http() {
	py - "$base" "$@" <<'EOF'
import sys, urllib.error, urllib.request
base, method, path = sys.argv[1:4]
data = sys.argv[4].encode() if len(sys.argv) > 4 else None
headers = {"Content-Type": "application/json"} if data else {}
request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
try:
    with urllib.request.urlopen(request, timeout=5) as answer:
        print(answer.status)
except urllib.error.HTTPError as e:
    print(e.code)
except OSError:
    print(0)
EOF
}

# login USER PASSWORD: on the login page, as an operator: type, click.
login() {
	step "open the login page" goto "$base/login.html" \
		--wait "document.readyState === 'complete' && !!document.getElementById('login-form')" &&
		step "type the user" type '#login-user' "$1" &&
		step "type the password" type '#login-password' "$2" &&
		step "click Log in" click '#login-submit'
}

# screenshot NAME [CDP_ARGS...]: LOG_DIR/NAME.png, the whole page.
screenshot() {
	local name=$1
	shift
	if cdp screenshot "$logdir/$name.png" --full-page "$@" >/dev/null; then
		printf '# screenshot: %s\n' "$logdir/$name.png"
	else
		fail "screenshot $name" "$(cat "$tmp/cdp.err")"
	fi
}

# ---- the server and the browser --------------------------------------------

# "$py" itself, not the function py: $! must be the server's pid.
"$py" -S "$here/console_server.py" --root "$www" --fixtures "$fixtures" \
	--port-file "$tmp/port" --log "$logs/server.log" </dev/null >/dev/null 2>"$logs/server.err" &
server_pid=$!
port=
base=
deadline=$((SECONDS + 10))
while :; do
	if [ -z "$port" ] && [ -s "$tmp/port" ]; then
		port=$(<"$tmp/port")
		base=http://127.0.0.1:$port
	fi
	[ -n "$port" ] && [ "$(http GET /login.html)" = 200 ] && break
	if ! kill -0 "$server_pid" 2>/dev/null || ((SECONDS >= deadline)); then
		fail "console_server.py answers on a loopback port" "$(tail -n 20 "$logs/server.err")"
		exit 1
	fi
	sleep 0.05
done
pass "console_server.py serves $www on $base"

if ! read -r devtools browser_pid < <(py "$here/cdp.py" launch \
	--user-data-dir "$tmp/profile" --window-size 1280,800 --chromium "$chromium" 2>"$tmp/launch.err"); then
	fail "headless $chromium starts" "$(cat "$tmp/launch.err")"
	exit 1
fi
pass "headless $chromium runs (DevTools on port $devtools, pid $browser_pid)"

msg="document.getElementById('login-message')"
ready="document.readyState === 'complete' && document.body.dataset.ready === '1'"
row() { printf "document.querySelector('.vip[data-vip=\"%s\"] tr.backend[data-backend=\"%s\"]')" "$1" "$2"; }

# ---- the login page -------------------------------------------------------------

if step "open /" goto "$base/" --wait "location.pathname === '/login.html' && document.readyState === 'complete'"; then
	pass "without a session, / sends the browser to /login.html"
fi
check "the login page shows no message before a login" \
	"$msg.hidden === true && !!document.getElementById('login-user')"

login admin wrong-password
check_eq "a wrong password: the login page again, with its message" \
	"?failed=1 Wrong user name or password." \
	"location.search + ' ' + ($msg.hidden ? '(hidden)' : $msg.textContent)"
check_logged "the login form POSTs user and password as a form to /login" \
	"e['path'] == '/login' and e['user'] == 'admin' and e['form']"
screenshot console-login

login throttled secret
check_eq "a throttled login: the login page says to wait" \
	"?throttled=1 Too many failed logins: wait a minute, then try again." \
	"location.search + ' ' + ($msg.hidden ? '(hidden)' : $msg.textContent)"

# ---- the admin's console ----------------------------------------------------------

login admin secret
check "admin logs in: / loads and its first poll renders (body data-ready=\"1\")" \
	"location.pathname === '/' && $ready"
check "console.css applies, and defines the chart colours and font console.js reads" \
	"getComputedStyle(document.querySelector('.topbar')).position === 'sticky' &&
	 ['--chart-font', '--chart-ink', '--chart-grid', '--chart-line', '--chart-fill', '--chart-mark']
	   .every((v) => getComputedStyle(document.documentElement).getPropertyValue(v).trim() !== '')"
check_eq "#node shows the node's name" "$(fixture state-admin.json "s['node']['name']" | tr -d '"')" \
	"document.getElementById('node').textContent"
check_eq "#role shows the node's role" \
	"$(fixture state-admin.json "[s['cluster']['role']] * 2" | tr -d '[]"')" \
	"document.getElementById('role').dataset.role + ',' + document.getElementById('role').textContent"
check_eq "#user shows the admin and the role" "admin admin" "document.getElementById('user').textContent"
check_eq "#members: a row per member, with the fixture's roles" \
	"$(fixture state-admin.json "[[m['id'], m['role'] or 'none', (m['role'] or 'none') if m['known'] else 'unknown'] for m in s['cluster']['members']]")" \
	"JSON.stringify([...document.querySelectorAll('#members tbody tr[data-node]')].map((tr) =>
	   [Number(tr.dataset.node), tr.dataset.role, tr.querySelector('td.role').textContent]))"
check_eq "#vips: every VIP, every backend with its state, agreed and local health" \
	"$(fixture state-admin.json "[[v['name'], [[b['address'], b['state'], b['health']['agreed'], b['health']['local']] for b in v['backend_list']]] for v in s['vips']]")" \
	"JSON.stringify([...document.querySelectorAll('#vips .vip[data-vip]')].map((v) => [v.dataset.vip,
	   [...v.querySelectorAll('tr.backend[data-backend]')].map((tr) => [tr.dataset.backend,
	     tr.dataset.state, tr.dataset.healthAgreed, tr.dataset.healthLocal])]))"
check_eq "the backends' state and health cells say what their rows' data says" "ok" \
	"[...document.querySelectorAll('tr.backend')].every((tr) =>
	   tr.querySelector('td.state').dataset.state === tr.dataset.state &&
	   tr.querySelector('td.health-agreed').textContent === tr.dataset.healthAgreed &&
	   tr.querySelector('td.health-local').textContent === tr.dataset.healthLocal) ? 'ok' : 'differ'"
check "the VIPs' rates show from the second poll on" \
	"[...document.querySelectorAll('.vip-stats')].every((e) => /packets\\/s/.test(e.textContent))"
check_eq "#sync-groups and #bfd: a row per sync group and per BFD session" \
	"$(fixture state-admin.json "[[g['name'] for g in s['sync']['groups']], [b['state'].lower() for b in s['bfd']['sessions']]]")" \
	"JSON.stringify([[...document.querySelectorAll('#sync-groups tr[data-group]')].map((tr) => tr.dataset.group),
	   [...document.querySelectorAll('#bfd tr[data-peer] td.state')].map((td) => td.dataset.state)])"
# Non-blank: the grid, the labels and the series put down ink; the series
# is in --chart-line.
check_eq "the three charts drew their series on the canvas" "3" \
	"[...document.querySelectorAll('canvas[data-series]')].filter((c) => {
	   if (!(Number(c.dataset.points) > 0) || !c.width || !c.height) return false;
	   const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
	   const probe = document.createElement('canvas').getContext('2d');
	   probe.fillStyle = getComputedStyle(document.documentElement).getPropertyValue('--chart-line').trim();
	   probe.fillRect(0, 0, 1, 1);
	   const [r, g, b] = probe.getImageData(0, 0, 1, 1).data;
	   let ink = 0, line = 0;
	   for (let i = 0; i < px.length; i += 4) {
	     if (px[i + 3] === 0) continue;
	     ink++;
	     if (px[i + 3] > 200 && Math.abs(px[i] - r) + Math.abs(px[i + 1] - g) + Math.abs(px[i + 2] - b) < 40) line++;
	   }
	   return ink > c.width * c.height / 50 && line > c.width / 2;
	 }).length + (document.getElementById('chart-packets-now').textContent === '–' ? ' (no now)' : '')"
check_eq "#events: the history's events, newest first, markup as text" \
	"$(fixture history.json "[len(s['events']), s['events'][-1]['text']]")" \
	"JSON.stringify([document.querySelectorAll('#events li.event').length,
	   document.querySelector('#events li.event .text').textContent]) +
	 (document.querySelector('#events img') ? ' (an img element)' : '')"
check_eq "no element has a style attribute (the CSP has no 'unsafe-inline')" "0" \
	"document.querySelectorAll('[style]').length"
screenshot console-admin
for width in 760 400; do
	if out=$(cdp eval --viewport "${width}x800" \
		"JSON.stringify([document.documentElement.scrollWidth, document.documentElement.clientWidth])"); then
		if py -c 'import json, sys; w = json.loads(sys.argv[1]); sys.exit(w[0] > w[1])' "$out"; then
			pass "at $width px wide the page does not scroll sideways"
		else
			fail "at $width px wide the page does not scroll sideways" "scrollWidth, clientWidth: $out"
		fi
	else
		fail "at $width px wide the page does not scroll sideways" "$(cat "$tmp/cdp.err")"
	fi
done
screenshot console-admin-400 --viewport 400x800

# ---- admin actions --------------------------------------------------------------------

web1=$(row web 198.19.0.5)
if step "click Drain of 198.19.0.5 in web" click '.vip[data-vip="web"] tr[data-backend="198.19.0.5"] button.drain'; then
	check_eq "Drain: 198.19.0.5 in web turns draining, its button Undrain" "draining undrain Undrain" \
		"[$web1.dataset.state, $web1.querySelector('button.drain').dataset.action,
		  $web1.querySelector('button.drain').textContent].join(' ')"
fi
check_logged "the drain went as POST /api/v1/backend (JSON) with the session's X-CSRF-Token" \
	"e['path'] == '/api/v1/backend' and e['user'] == 'admin' and e['csrf_ok'] and e['status'] == 200
	 and e['content_type'] == 'application/json'
	 and e['body'] == {'vip': 'web', 'backend': '198.19.0.5', 'action': 'drain'}" 1
check_eq "#message says the drain is done" "ok drain 198.19.0.5 in web: done" \
	"(document.getElementById('message').hidden ? 'hidden' : document.getElementById('message').dataset.kind) +
	 ' ' + document.getElementById('message').textContent"
check "#events gets the drain from the history" \
	"[...document.querySelectorAll('#events li.event[data-kind=\"admin\"] .text')]
	   .some((e) => e.textContent === 'backend 198.19.0.5 in web drained by admin')"
if step "click Undrain of 198.19.0.5 in web" click '.vip[data-vip="web"] tr[data-backend="198.19.0.5"] button.drain'; then
	check_eq "Undrain: 198.19.0.5 in web serves again" "up drain" \
		"[$web1.dataset.state, $web1.querySelector('button.drain').dataset.action].join(' ')"
fi
check_logged "the undrain went as POST /api/v1/backend with the token" \
	"e['path'] == '/api/v1/backend' and e['csrf_ok'] and e['status'] == 200
	 and e['body'] == {'vip': 'web', 'backend': '198.19.0.5', 'action': 'undrain'}" 1

w6='.vip[data-vip="web6"] tr[data-backend="2001:db8:1::6"]'
web6=$(row web6 2001:db8:1::6)
step "type weight 5000 for 2001:db8:1::6 in web6" type "$w6 .weight-input" 5000 &&
	step "click Set weight" click "$w6 button.set-weight" &&
	check_eq "a weight above 1000 is refused in the page, nothing sent" \
		"true error weight for 2001:db8:1::6 in web6 must be an integer from 0 to 1000" \
		"$web6.querySelector('.weight-input').getAttribute('aria-invalid') + ' ' +
		 document.getElementById('message').dataset.kind + ' ' + document.getElementById('message').textContent"
check_logged "no POST for the refused weight" "e['path'] == '/api/v1/backend' and e['body'].get('action') == 'weight'" 0
step "type weight 50" type "$w6 .weight-input" 50 &&
	step "click Set weight" click "$w6 button.set-weight" &&
	check_eq "Set weight: 2001:db8:1::6 in web6 shows weight 50 (config 100)" "50|50 (config 100)|" \
		"[$web6.dataset.weight, $web6.querySelector('td.weight').textContent,
		  $web6.querySelector('.weight-input').value].join('|')"
check_logged "the weight went as POST /api/v1/backend {action: weight, weight: 50} with the token" \
	"e['path'] == '/api/v1/backend' and e['csrf_ok'] and e['status'] == 200
	 and e['body'] == {'vip': 'web6', 'backend': '2001:db8:1::6', 'action': 'weight', 'weight': 50}" 1

toggle="document.getElementById('standby-toggle')"
badge="document.getElementById('standby')"
if step "click Enter standby" click '#standby-toggle'; then
	check_eq "Enter standby asks for a confirmation first" "1 Confirm: enter standby" \
		"$toggle.dataset.armed + ' ' + $toggle.textContent"
	check_logged "nothing sent before the confirmation" "e['path'] == '/api/v1/standby'" 0
fi
if step "click Confirm: enter standby" click '#standby-toggle'; then
	check_eq "standby on: the standby badge shows, the role is passive, the button offers to leave" \
		"shown passive Leave standby" \
		"($badge.hidden ? 'hidden' : 'shown') + ' ' + document.getElementById('role').textContent +
		 ' ' + $toggle.textContent"
fi
check_logged "standby on went as POST /api/v1/standby {on: true} with the token" \
	"e['path'] == '/api/v1/standby' and e['csrf_ok'] and e['status'] == 200 and e['body'] == {'on': True}" 1
if step "click Leave standby" click '#standby-toggle'; then
	check_eq "standby off: the badge goes, the button offers standby again" "hidden Enter standby" \
		"($badge.hidden ? 'hidden' : 'shown') + ' ' + $toggle.textContent"
fi
check_logged "standby off went as POST /api/v1/standby {on: false} with the token" \
	"e['path'] == '/api/v1/standby' and e['csrf_ok'] and e['status'] == 200 and e['body'] == {'on': False}" 1

# The admin's session, but a request that is not the page's: no token or a
# wrong one.
forced="(async () => {
	const post = (path, body, headers) => fetch(path, {method: 'POST', body: JSON.stringify(body),
	  headers: Object.assign({'Content-Type': 'application/json'}, headers)}).then((r) => r.status);
	const drain = {vip: 'web', backend: '198.19.0.6', action: 'drain'};
	return [await post('/api/v1/backend', drain, {}),
	        await post('/api/v1/backend', drain, {'X-CSRF-Token': 'not-the-token'}),
	        await post('/api/v1/standby', {on: true}, {}),
	        await post('/api/v1/standby', {on: true}, {'X-CSRF-Token': 'not-the-token'})].join(' ');
})()"
check_eq "the admin's session: POSTs without the X-CSRF-Token or with a wrong one get 403" \
	"403 403 403 403" "$forced"
check_logged "the server refused them before acting" \
	"e['path'].startswith('/api/v1/') and e['user'] == 'admin' and not e['csrf_ok'] and e['status'] == 403" 4
web2=$(row web 198.19.0.6)
check_eq "198.19.0.6 still serves, the node is not in standby" "up hidden" \
	"$web2.dataset.state + ' ' + ($badge.hidden ? 'hidden' : 'shown')"

if [ "$(http POST /_test/fail '{"path": "/api/v1/backend", "status": 500, "error": "dataplane unreachable: Connection refused"}')" = 200 ] &&
	step "click Drain of 198.19.0.6 in web" click '.vip[data-vip="web"] tr[data-backend="198.19.0.6"] button.drain'; then
	check_eq "a failed action: #message shows the server's error, the backend is as it was" \
		"error drain 198.19.0.6 in web failed: HTTP 500: dataplane unreachable: Connection refused|up" \
		"(document.getElementById('message').hidden ? 'hidden' : document.getElementById('message').dataset.kind) +
		 ' ' + document.getElementById('message').textContent + '|' + $web2.dataset.state"
fi
status="document.getElementById('status')"
if [ "$(http POST /_test/fail '{"path": "/api/v1/state", "status": 503, "error": "overloaded"}')" = 200 ]; then
	check "a failed poll: #status says the connection is lost, the page dims (body.stale)" \
		"$status.dataset.kind === 'lost' && $status.textContent.startsWith('connection lost: HTTP 503: overloaded') &&
		 document.body.classList.contains('stale')"
	check "the next poll recovers" \
		"$status.dataset.kind === 'ok' && !document.body.classList.contains('stale')"
else
	fail "POST /_test/fail"
fi

if step "click Log out" click '#logout'; then
	check "Log out: back to /login.html" "location.pathname === '/login.html' && document.readyState === 'complete'"
fi
check_logged "logout went as POST /logout with the token" "e['path'] == '/logout' and e['csrf_ok']" 1
if step "open / again" goto "$base/" --wait "location.pathname === '/login.html' && document.readyState === 'complete'"; then
	pass "after logout, / sends the browser to /login.html again"
fi

# ---- the viewer ---------------------------------------------------------------------------

login ops secret
check "the viewer logs in: / renders" "location.pathname === '/' && $ready"
check_eq "the viewer's node, role and user" \
	"$(fixture state-viewer.json "' '.join([s['node']['name'], s['cluster']['role'], s['user']['name'], s['user']['role']])" | tr -d '"')" \
	"[document.getElementById('node').textContent, document.getElementById('role').textContent,
	  document.getElementById('user').textContent].join(' ')"
check_eq "the viewer sees the backends but no management control" "2 0" \
	"document.querySelectorAll('tr.backend').length + ' ' +
	 document.querySelectorAll('button.drain, form.weight-form, input.weight-input, button.set-weight, ' +
	   '#standby-toggle, th.actions, td.actions').length"
viewer="(async () => {
	const csrf = (await (await fetch('/api/v1/state')).json()).csrf;
	const post = (path, body, headers) => fetch(path, {method: 'POST', body: JSON.stringify(body),
	  headers: Object.assign({'Content-Type': 'application/json'}, headers)}).then((r) => r.status);
	const drain = {vip: 'web', backend: '198.19.0.5', action: 'drain'};
	return [await post('/api/v1/backend', drain, {}),
	        await post('/api/v1/backend', drain, {'X-CSRF-Token': 'not-the-token'}),
	        await post('/api/v1/backend', drain, {'X-CSRF-Token': csrf}),
	        await post('/api/v1/standby', {on: true}, {'X-CSRF-Token': csrf})].join(' ');
})()"
check_eq "the viewer: POSTs forced from the page (no token, a wrong one, its own) get 403" \
	"403 403 403 403" "$viewer"
check_logged "the server refused the viewer's POSTs" \
	"e['path'].startswith('/api/v1/') and e['user'] == 'ops' and e['status'] == 403" 4
check_eq "the viewer's backends are as they were" "up up" \
	"[...document.querySelectorAll('tr.backend')].map((tr) => tr.dataset.state).join(' ')"
step "click Log out" click '#logout' &&
	check "the viewer logs out" "location.pathname === '/login.html' && document.readyState === 'complete'"

# ---- a degraded node ----------------------------------------------------------------------

login auditor secret
check "the degraded node's console renders" "location.pathname === '/' && $ready"
check_eq "#errors lists the state's errors, as text" \
	"$(fixture state-degraded.json "s['errors']")" \
	"(document.getElementById('errors').hidden ? 'hidden ' : '') +
	 JSON.stringify([...document.querySelectorAll('#errors li')].map((li) => li.textContent)) +
	 (document.querySelector('#errors b') ? ' (a b element)' : '')"
check_eq "no cluster, sync or BFD status: those cards say so" "cluster-card sync-card bfd-card" \
	"[...document.querySelectorAll('.card.unavailable')].filter((c) =>
	   !c.querySelector('.unavailable-note').hidden).map((c) => c.id).join(' ')"
check_eq "the header says syncd is down and the role unknown" "false role unknown" \
	"document.getElementById('syncd').dataset.up + ' ' + document.getElementById('role').textContent"
screenshot console-degraded

# ---- the whole run ----------------------------------------------------------------------------

# The page's errors reach cdp.py's next command on that page; a CSP
# violation reaches the server as a report even when no command was looking.
page_errors
if [ -s "$tmp/page-errors.told" ]; then
	_fail "no script error, console error or CSP violation in any page" \
		"$(wc -l <"$tmp/page-errors.told") errors, above"
else
	_pass "no script error, console error or CSP violation in any page"
fi
reports=$(logged "e['path'] == '/csp-report'")
if [ "$reports" = 0 ]; then
	pass "no Content-Security-Policy violation reported"
else
	fail "no Content-Security-Policy violation reported" \
		"$reports reports: $(grep -m 3 csp-report "$logs/server.log")"
fi

printf '# logs: %s (%d s)\n' "$logdir" "$((SECONDS - started))"
printf '%d passed, %d failed\n' "$((checks - failed))" "$failed"
[ "$failed" = 0 ]
