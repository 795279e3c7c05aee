#!/usr/bin/env python3
"""maglb-monitor's web console and JSON API, from fixtures, for check_console.sh.

Serves monitor/www's four files with maglb-monitor's Content-Security-Policy
(plus a report-uri, so that a violation reaches the log) and answers the API
as the daemon does, from FIXTURES/state-*.json and FIXTURES/history.json:

  POST /login              user, password (form): a fixture whose user.name is
                           `user`, password "secret": 303 to / with a session
                           cookie; user "throttled": 303 /login.html?throttled=1;
                           else 303 /login.html?failed=1
  POST /logout             X-CSRF-Token; ends the session
  GET  /api/v1/state       the session's fixture; 401 without a session. Its
                           clock runs, and its packet, byte and new-flow
                           counters grow by a thousandth of their value a second
  GET  /api/v1/history     FIXTURES/history.json, plus the admin actions' events
  POST /api/v1/backend     drain, undrain, weight; X-CSRF-Token must equal the
  POST /api/v1/standby     fixture's csrf (403), the role admin (403); the action
                           changes the session's state

The test's own endpoints, which no browser calls:

  POST /_test/fail         {"path": P, "status": N, "error": TEXT}: P's next
                           request answers N {"error": TEXT}

Every POST to the API and every CSP report goes to --log as a JSON line.
"""

import argparse
import copy
import glob
import http.server
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; "
       "report-uri /csp-report")
ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/login.html": ("login.html", "text/html; charset=utf-8"),
    "/console.js": ("console.js", "text/javascript; charset=utf-8"),
    "/console.css": ("console.css", "text/css; charset=utf-8"),
}
PASSWORD = "secret"
COOKIE = "maglb_session"
WEIGHT_MAX = 1000


class Fixtures:
    def __init__(self, directory):
        self.states = {}
        for path in sorted(glob.glob(os.path.join(directory, "state-*.json"))):
            with open(path) as f:
                state = json.load(f)
            self.states[state["user"]["name"]] = state
        with open(os.path.join(directory, "history.json")) as f:
            self.history = json.load(f)


class Session:
    def __init__(self, user, fixtures):
        self.user = user
        self.state = copy.deepcopy(fixtures.states[user])
        self.history = copy.deepcopy(fixtures.history)
        self.csrf = self.state.get("csrf")
        self.started = time.monotonic()

    def elapsed_ms(self):
        return int((time.monotonic() - self.started) * 1000)

    def now_ms(self):
        return self.state["node"]["time_ms"] + self.elapsed_ms()

    def current(self):
        """The state as the daemon would answer it now."""
        state = copy.deepcopy(self.state)
        elapsed = self.elapsed_ms()
        state["node"]["time_ms"] += elapsed
        for vip in state.get("vips") or []:
            for item in [vip] + vip.get("backend_list", []):
                for name in ("packets", "bytes", "new_flows"):
                    item[name] += item[name] * elapsed // 1_000_000
        return state

    def event(self, text):
        self.history["events"].append({"t_ms": self.now_ms(), "kind": "admin", "text": text})


def backend_action(session, body):
    """(status, answer) for POST /api/v1/backend, the state changed on success."""
    vips = {v["name"]: v for v in session.state.get("vips") or []}
    vip = vips.get(body.get("vip"))
    if vip is None:
        return 404, {"error": f"no VIP named {body.get('vip')!r}"}
    found = [b for b in vip["backend_list"] if b["address"] == body.get("backend")]
    if not found:
        return 404, {"error": f"no backend {body.get('backend')} in {vip['name']}"}
    backend = found[0]
    action = body.get("action")
    if action == "drain":
        weight = 0
    elif action == "undrain":
        weight = backend["config_weight"]
    elif action == "weight":
        weight = body.get("weight")
        if type(weight) is not int or not 0 <= weight <= WEIGHT_MAX:
            return 400, {"error": f"weight must be an integer from 0 to {WEIGHT_MAX}"}
    else:
        return 400, {"error": f"unknown action {action!r}"}
    backend["weight"] = weight
    if weight == 0:
        backend["state"] = "draining"
    else:
        backend["state"] = "up" if backend["health"]["agreed"] == "up" else "down"
    serving = [b for b in vip["backend_list"] if b["state"] == "up"]
    total = sum(b["weight"] for b in serving)
    for b in vip["backend_list"]:
        b["maglev_share"] = round(b["weight"] / total, 4) if b in serving and total else 0
    vip["backends_up"] = len(serving)
    done = {"drain": "drained", "undrain": "undrained"}.get(action, f"set to weight {weight}")
    session.event(f"backend {backend['address']} in {vip['name']} {done} by {session.user}")
    return 200, {"ok": True}


def standby_action(session, body):
    on = body.get("on")
    if type(on) is not bool:
        return 400, {"error": "on must be true or false"}
    cluster = session.state.get("cluster")
    if cluster is None:
        return 503, {"error": "syncd unreachable: Connection refused"}
    cluster["standby"] = on
    cluster["eligible"] = not on
    if on:
        cluster["role"] = "passive"
    session.event(f"standby {'on' if on else 'off'} by {session.user}")
    return 200, {"ok": True}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "maglb-monitor-fixture"

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.log_date_time_string(), fmt % args))

    def record(self, entry):
        with self.server.lock:
            self.server.log.write(json.dumps(entry) + "\n")
            self.server.log.flush()

    def send(self, status, body, content_type="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location, headers=()):
        self.send(303, b"", "text/plain", [("Location", location), *headers])

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def session(self):
        cookies = self.headers.get("Cookie") or ""
        for part in cookies.split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE:
                return self.server.sessions.get(value)
        return None

    def injected(self):
        """An answer /_test/fail planted for this path, sent."""
        with self.server.lock:
            fail = self.server.failures.pop(self.path.split("?")[0], None)
        if fail:
            self.send(fail["status"], {"error": fail["error"]})
        return bool(fail)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path in ASSETS:
            name, content_type = ASSETS[path]
            with open(os.path.join(self.server.root, name), "rb") as f:
                self.send(200, f.read(), content_type)
            return
        if path not in ("/api/v1/state", "/api/v1/history"):
            self.send(404, {"error": "not found"})
            return
        if self.injected():
            return
        session = self.session()
        if session is None:
            self.send(401, {"error": "login required"})
            return
        with self.server.lock:
            answer = session.current() if path == "/api/v1/state" else copy.deepcopy(session.history)
        self.send(200, answer)

    def do_POST(self):
        path = self.path.split("?")[0]
        raw = self.body()
        if path == "/csp-report":
            self.record({"path": path, "report": json.loads(raw or b"null")})
            self.send(204, b"", "text/plain")
        elif path == "/_test/fail":
            fail = json.loads(raw)
            with self.server.lock:
                self.server.failures[fail["path"]] = fail
            self.send(200, {"ok": True})
        elif path == "/login":
            self.login(raw)
        elif path == "/logout":
            self.logout()
        elif path in ("/api/v1/backend", "/api/v1/standby"):
            if not self.injected():
                self.action(path, raw)
        else:
            self.send(404, {"error": "not found"})

    def login(self, raw):
        form = urllib.parse.parse_qs(raw.decode(), keep_blank_values=True)
        user = form.get("user", [""])[0]
        password = form.get("password", [""])[0]
        form_type = self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded")
        self.record({"path": "/login", "user": user, "form": form_type})
        if user == "throttled":
            self.redirect("/login.html?throttled=1")
        elif form_type and user in self.server.fixtures.states and password == PASSWORD:
            token = secrets.token_hex(16)
            with self.server.lock:
                self.server.sessions[token] = Session(user, self.server.fixtures)
            cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
            self.redirect("/", [("Set-Cookie", cookie)])
        else:
            self.redirect("/login.html?failed=1")

    def logout(self):
        session = self.session()
        ok = session is not None and self.headers.get("X-CSRF-Token") == session.csrf
        self.record({"path": "/logout", "csrf_ok": ok})
        if not ok:
            self.send(403, {"error": "bad CSRF token"})
            return
        with self.server.lock:
            for token, s in list(self.server.sessions.items()):
                if s is session:
                    del self.server.sessions[token]
        self.redirect("/login.html", [("Set-Cookie", f"{COOKIE}=; Path=/; Max-Age=0")])

    def action(self, path, raw):
        session = self.session()
        entry = {"path": path, "user": session.user if session else None,
                 "content_type": self.headers.get("Content-Type"),
                 "csrf_ok": session is not None and self.headers.get("X-CSRF-Token") == session.csrf}
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        entry["body"] = body
        if session is None:
            status, answer = 401, {"error": "login required"}
        elif not entry["csrf_ok"]:
            status, answer = 403, {"error": "bad CSRF token"}
        elif session.state["user"]["role"] != "admin":
            status, answer = 403, {"error": "admin role required"}
        elif entry["content_type"] != "application/json" or not isinstance(body, dict):
            status, answer = 415, {"error": "a JSON object, please"}
        else:
            with self.server.lock:
                act = backend_action if path == "/api/v1/backend" else standby_action
                status, answer = act(session, body)
        entry["status"] = status
        self.record(entry)
        self.send(status, answer)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="monitor/www")
    parser.add_argument("--fixtures", help="the fixtures (ROOT/fixtures)")
    parser.add_argument("--port-file", required=True, help="where to write the port")
    parser.add_argument("--log", required=True, help="the POSTs and CSP reports, JSON lines")
    args = parser.parse_args()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.root = args.root
    server.fixtures = Fixtures(args.fixtures or os.path.join(args.root, "fixtures"))
    server.sessions = {}
    server.failures = {}
    server.lock = threading.Lock()
    server.log = open(args.log, "a")
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{server.server_address[1]}\n")
    os.rename(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
