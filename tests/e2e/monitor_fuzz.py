#!/usr/bin/env python3
"""Malformed and oversized requests against one maglb-monitor, for
tests/e2e/check_monitor.sh (step f). Standard library only.

  monitor_fuzz.py --host ADDR --port PORT --cafile CA.pem [--count 10000]
                  [--workers 6] [--source ADDR] [--cookie maglb_session=..]
                  [--csrf TOKEN] [--seed N] [--json]

COUNT requests in all, spread over WORKERS processes (each its own
connections, bound to --source), of these kinds, round robin:

  garbage         random bytes after the TLS handshake
  tls_junk        a TLS record header with garbage after the handshake
  truncated       a request cut short, then the connection closed
  huge_header     one header of 33..64 KiB, or many that add up past 32 KiB
  big_body        POST bodies of 4097..65536 bytes (Content-Length, or
                  chunked without one)
  bad_length      Content-Length of -1, "abc", 2^64, two of them, a length
                  larger than the body sent
  bad_method      unknown or wrong methods on every route
  bad_json        POST /api/v1/backend and /api/v1/standby with an admin's
                  session and token (--cookie, --csrf: the JSON parser is
                  reached) and bodies that are not what they take; none is
                  a valid change
  bad_basic       malformed or wrong Authorization headers
  bad_cookie      forged session cookies on a change
  absurd_url      long, NUL-escaped, dot-dot, absolute-form, '*' targets
  bad_syntax      bare LF, no version, HTTP/9.9, a header without ':',
                  obs-fold, NUL bytes in a header
  plain           not TLS at all: plain HTTP or random bytes on the port

A request that can keep its connection goes over the worker's persistent
connection (reopened when the server closes it); the others get a
connection each. What the server answers is tallied by kind (the status,
"close" when it closed without an answer, "timeout" when it did not
answer within 3 s). Violations: an answer 200 to any of them (none is a
valid request), a 5xx, an HTTP answer to plain bytes, a connection refused
(the monitor gone). Prints the tally (JSON with --json) and exits 1 when a
violation happened.
"""

import argparse
import base64
import json
import multiprocessing
import os
import random
import socket
import ssl
import sys
import time

KINDS = ["garbage", "tls_junk", "truncated", "huge_header", "big_body", "bad_length",
         "bad_method", "bad_json", "bad_basic", "bad_cookie", "absurd_url", "bad_syntax",
         "plain"]
CONNECT_TIMEOUT = 3.0
ANSWER_TIMEOUT = 3.0    # a request the server can answer
SILENT_AFTER = 0.25     # a connection of its own: no answer within this is "silent"
AWAIT_EVERY = 3         # of those, one in AWAIT_EVERY awaits the answer, the rest close at once


class Conn:
    """One TLS (or plain) connection and what it reads."""

    def __init__(self, args, tls=True):
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.settimeout(CONNECT_TIMEOUT)
        if args.source:
            raw.bind((args.source, 0))
        raw.connect((args.host, args.port))
        if tls:
            ctx = ssl.create_default_context(cafile=args.cafile)
            self.sock = ctx.wrap_socket(raw, server_hostname=args.host)
        else:
            self.sock = raw
        self.sock.settimeout(ANSWER_TIMEOUT)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError
        self.buf += chunk

    def response(self, head=False):
        """(status, headers dict, body) of one answer (to a HEAD: no body);
        raises EOFError, socket.timeout or ssl/OS errors."""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        top, _, rest = self.buf.partition(b"\r\n\r\n")
        lines = top.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise ValueError("not HTTP: " + lines[0][:60])
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = 0 if head else int(headers.get("content-length", "0") or 0)
        while len(rest) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            rest += chunk
        body, self.buf = rest[:n], rest[n:]
        return status, headers, body

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def b64(s):
    return base64.b64encode(s if isinstance(s, bytes) else s.encode()).decode()


def req(method, path, headers=(), body=b"", host="x"):
    h = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    h += list(headers)
    if body and not any(x.lower().startswith(("content-length", "transfer-encoding"))
                        for x in headers):
        h.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(h) + "\r\n\r\n").encode("latin-1") + body


ROUTES = ["/", "/index.html", "/login.html", "/console.js", "/console.css", "/metrics",
          "/api/v1/state", "/api/v1/history", "/login", "/logout", "/api/v1/backend",
          "/api/v1/standby"]

# Bodies none of which is a valid change (real VIP and backends in some,
# so that it is the parser, not the lookup, that refuses them).
BAD_BACKEND_BODIES = [
    b"", b"{", b"}", b"[]", b"null", b"\"web\"", b"{\"vip\":", b"{\"vip\":\"web\"",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"explode\"}",
    b"{\"vip\":\"web\",\"backend\":\"not-an-address\",\"action\":\"drain\"}",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"drain\",\"action\":\"drain\"}",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":{\"x\":1}}",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":[\"drain\"]}",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"weight\"}",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"weight\",\"weight\":-1}",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"weight\",\"weight\":1e400}",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"weight\",\"weight\":\"x\"}",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"weight\",\"weight\":99999999999999999999}",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"dr\\u0000ain\"}",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"dr\\u00e9ain\"}",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"drain\"} trailing",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"drain\",}",
    b"{\"vip\":\"web\" \"backend\":\"198.18.0.21\"}",
    b"{\"vip\":\"web\x00\",\"backend\":\"198.18.0.21\",\"action\":\"drain\"}",
    b"{\"vip\":\"" + b"w" * 3000 + b"\",\"backend\":\"198.18.0.21\",\"action\":\"drain\"}",
    b"{" + b",".join(b"\"k%d\":%d" % (i, i) for i in range(300)) + b"}",
    b"{\"" + b"k" * 200 + b"\":1}",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"drain\\",
    b"{\"vip\":tru,\"backend\":\"198.18.0.21\",\"action\":\"drain\"}",
    b"\xff\xfe{\x00\"\x00v\x00",
    b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"drain\"" + b" " * 3900,
]
BAD_STANDBY_BODIES = [
    b"{\"on\":\"maybe\"}", b"{\"on\":1}", b"{\"on\":\"TRUE\"}", b"{\"on\":null}", b"{}",
    b"{\"on\":tru}", b"{\"on\":true,\"on\":false}", b"{\"on\":[true]}", b"{\"on\":\"true \"}",
    b"{\"off\":true}", b"{\"on\":true", b"on=true",
]


def gen(kind, rnd, args):
    """(mode, payload, expectation): mode "tls" (a connection of its own),
    "keep" (the persistent one), "plain" (no TLS); expectation "http"
    (an answer, or a close), "nohttp" (no HTTP answer)."""
    if kind == "garbage":
        n = rnd.choice([1, 7, 64, 512, 4096, rnd.randint(1, 8192)])
        data = bytes(rnd.getrandbits(8) for _ in range(n))
        if rnd.random() < 0.3:
            data = b"\x00" * n
        return "tls", data, "http"
    if kind == "tls_junk":
        # the application's bytes inside TLS are a record header and junk
        return "tls", bytes([0x16, 0x03, 0x03, 0xff, 0xff]) + os.urandom(rnd.randint(0, 300)), "http"
    if kind == "truncated":
        full = req(rnd.choice(["GET", "POST"]), rnd.choice(ROUTES),
                   ["Authorization: Basic " + b64("viewer:x"), "Content-Type: application/json"],
                   b"{\"vip\":\"web\"}")
        return "tls_cut", full[:rnd.randint(1, len(full) - 1)], "http"
    if kind == "huge_header":
        if rnd.random() < 0.5:
            headers = ["X-Big: " + "a" * rnd.randint(33 * 1024, 64 * 1024)]
        else:
            headers = [f"X-H{i}: " + "b" * 1000 for i in range(rnd.randint(34, 60))]
        return "tls", req("GET", rnd.choice(["/metrics", "/api/v1/state", "/"]), headers), "http"
    if kind == "big_body":
        n = rnd.choice([4097, 5000, 16384, 65536])
        path = rnd.choice(["/api/v1/backend", "/api/v1/standby", "/login"])
        headers = [f"Cookie: {args.cookie}", f"X-CSRF-Token: {args.csrf}"] if args.cookie else []
        if rnd.random() < 0.5:
            return "tls", req("POST", path, headers + ["Content-Type: application/json"], b"{" * n), "http"
        body = b"".join(b"%x\r\n%s\r\n" % (1024, b"x" * 1024) for _ in range(n // 1024 + 1)) + b"0\r\n\r\n"
        return "tls", req("POST", path, headers + ["Transfer-Encoding: chunked"], body), "http"
    if kind == "bad_length":
        v = rnd.choice(["-1", "abc", "18446744073709551616", "4096, 4096", "1e3", " ", "0x10"])
        headers = [f"Content-Length: {v}"]
        if rnd.random() < 0.3:
            headers = ["Content-Length: 10", "Content-Length: 20"]
        if rnd.random() < 0.2:
            headers = ["Content-Length: 100", "Transfer-Encoding: chunked"]
        return "tls", req("POST", rnd.choice(["/api/v1/backend", "/login"]), headers, b"{}"), "http"
    if kind == "bad_method":
        m = rnd.choice(["PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "FOO", "get", "GETT",
                        "P0ST", "M" * 200, "PROPFIND", "POST", "GET"])
        path = rnd.choice(ROUTES)
        # POST to a GET route or GET to a POST route: a wrong method too
        if m == "POST" and path in ("/login", "/logout", "/api/v1/backend", "/api/v1/standby"):
            m = "PUT"
        if m == "GET" and path not in ("/login", "/logout", "/api/v1/backend", "/api/v1/standby"):
            m = "DELETE"
        return "keep", req(m, path), "http"
    if kind == "bad_json":
        if rnd.random() < 0.75:
            path, body = "/api/v1/backend", rnd.choice(BAD_BACKEND_BODIES)
        else:
            path, body = "/api/v1/standby", rnd.choice(BAD_STANDBY_BODIES)
        headers = ["Content-Type: application/json"]
        if args.cookie:
            headers += [f"Cookie: {args.cookie}", f"X-CSRF-Token: {args.csrf}"]
        if not body:
            headers.append("Content-Length: 0")
        return "keep", req("POST", path, headers, body), "http"
    if kind == "bad_basic":
        a = rnd.choice(["Basic", "Basic ", "Basic !!!!", "Basic " + b64("nocolon"), "Basic " + b64(":"),
                        "Basic " + b64("viewer:wrong" + str(rnd.randint(0, 9))),
                        "Basic " + b64("nosuchuser:pw"), "Basic " + b64("admin:"),
                        "Basic " + b64("a" * 2000 + ":b"), "Basic " + "A" * 8000, "Bearer abc",
                        "Digest username=\"admin\"", "Basic " + b64(b"admin\x00:pw"),
                        "Basic " + b64("viewer:" + "p" * 3000), "basic " + b64("viewer:x"),
                        "Basic  " + b64("viewer:x") + " extra"])
        path = rnd.choice(["/metrics", "/api/v1/state", "/api/v1/history", "/api/v1/backend"])
        body = b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"drain\"}"
        m = "POST" if path == "/api/v1/backend" else "GET"
        return "keep", req(m, path, ["Authorization: " + a], body if m == "POST" else b""), "http"
    if kind == "bad_cookie":
        c = rnd.choice(["maglb_session=", "maglb_session=" + "0" * 64, "maglb_session=" + "z" * 5000,
                        "maglb_session=../../etc", "maglb_session=%00", "a=b; maglb_session",
                        "maglb_session=" + os.urandom(32).hex() + "; maglb_session=x",
                        ";;;;", "maglb_session=\"" + "1" * 64 + "\""])
        body = b"{\"vip\":\"web\",\"backend\":\"198.18.0.21\",\"action\":\"drain\"}"
        return "keep", req("POST", rnd.choice(["/api/v1/backend", "/logout"]),
                           ["Cookie: " + c, "X-CSRF-Token: " + "0" * 64,
                            "Content-Type: application/json"], body), "http"
    if kind == "absurd_url":
        u = rnd.choice(["/" + "A" * rnd.randint(2000, 30000), "/%00", "/metrics%00", "/../../etc/passwd",
                        "/..%2f..%2fetc%2fpasswd", "/metrics?" + "x=1&" * 2000, "*", "http://evil/metrics",
                        "//metrics", "/api/v1/state/../state", "/api/v1/state/", "/\x7f", "/%zz",
                        "/%", "/login.html%3f", "/API/V1/STATE", "/index.html/", "/.", "/%2e%2e/",
                        "/console.js/" + "%" * 100, "/" + "/" * 5000])
        m = rnd.choice(["GET", "HEAD"])
        return "keep", req(m, u), "http"
    if kind == "bad_syntax":
        p = rnd.choice([b"GET /metrics HTTP/1.1\nHost: x\n\n", b"GET /metrics\r\n\r\n",
                        b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n",
                        b"GET /metrics HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n",
                        b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: a\r\n  folded\r\n\r\n",
                        b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
                        b"GET  /metrics  HTTP/1.1\r\nHost: x\r\n\r\n",
                        b"GET /metrics HTTP/1.1\r\n\r\n",
                        b"\r\n\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                        b"GET /metrics HTTP/1.1 extra\r\nHost: x\r\n\r\n",
                        b"GET /metrics HTTP/1.1\r\nHost: x\r\n: empty-name\r\n\r\n",
                        b"GET /metrics HTTP/1.0\r\n\r\n",
                        b"\x16\x03\x01\x00\x05hello",
                        b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nuser=",
                        b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\nuser=%zz&password=%"])
        return "tls", p, "http"
    if kind == "plain":
        p = rnd.choice([b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                        b"POST /api/v1/backend HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
                        os.urandom(rnd.randint(1, 2048)), b"\x16\x03\x01\x02\x00" + os.urandom(512),
                        b"\x80\x2c\x01\x03\x01", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"])
        return "plain", p, "nohttp"
    raise ValueError(kind)


def one(args, rnd, kind, keep, tally, problems):
    mode, payload, expect = gen(kind, rnd, args)
    t = tally.setdefault(kind, {})

    def count(what):
        t[what] = t.get(what, 0) + 1

    def judge(status):
        count(str(status))
        # 501 and 505 say what they do not take; the rest of 5xx is a fault
        if status == 200 or (status >= 500 and status not in (501, 505)):
            problems.append(f"{kind}: answered {status} to {payload[:80]!r}")

    try:
        if mode == "keep":
            for attempt in (0, 1):
                if keep[0] is None:
                    keep[0] = Conn(args)
                try:
                    keep[0].send(payload)
                    status, headers, _ = keep[0].response(head=payload.startswith(b"HEAD "))
                    judge(status)
                    if headers.get("connection", "").lower() == "close":
                        keep[0].close()
                        keep[0] = None
                    return
                except ValueError as e:
                    count("not-http")
                    problems.append(f"{kind}: {e}")
                    keep[0].close()
                    keep[0] = None
                    return
                except (EOFError, ConnectionResetError, BrokenPipeError, ssl.SSLError) as e:
                    keep[0].close()
                    keep[0] = None
                    if attempt == 1:
                        count("close")
                        return
                    # the server closed the kept connection between requests: once more, afresh
                    del e
        c = Conn(args, tls=mode != "plain")
        try:
            try:
                c.send(payload)
            except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
                count("closed-while-sent")
                return
            if mode == "tls_cut" or rnd.randrange(AWAIT_EVERY) != 0:
                count("cut" if mode == "tls_cut" else "sent")
                return
            if mode == "plain":
                c.sock.shutdown(socket.SHUT_WR)
            c.sock.settimeout(SILENT_AFTER)
            try:
                status, _, _ = c.response()
            except socket.timeout:
                # waiting for the rest of what it cannot know is garbage
                count("silent")
                return
            except (EOFError, ConnectionResetError, BrokenPipeError, ssl.SSLError, ssl.SSLEOFError):
                count("close")
                return
            except ValueError as e:
                # bytes that are not HTTP
                count("not-http")
                if expect == "http":
                    problems.append(f"{kind}: {e}")
                return
            if expect == "nohttp":
                count(f"http-{status}")
                problems.append(f"{kind}: plain bytes got an HTTP answer {status}")
                return
            judge(status)
        finally:
            c.close()
    except socket.timeout:
        count("timeout")
    except ConnectionRefusedError:
        count("refused")
        problems.append(f"{kind}: connection refused (the monitor is gone?)")
        time.sleep(0.05)
    except (OSError, ssl.SSLError) as e:
        count("error:" + type(e).__name__)


def worker(args, index, n, out):
    rnd = random.Random(args.seed * 1000 + index)
    tally, problems, keep = {}, [], [None]
    for i in range(n):
        one(args, rnd, KINDS[(index + i) % len(KINDS)], keep, tally, problems)
    if keep[0] is not None:
        keep[0].close()
    out.put((tally, problems))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cafile", required=True)
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--source")
    ap.add_argument("--cookie", default="")
    ap.add_argument("--csrf", default="")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    t0 = time.monotonic()
    out = multiprocessing.Queue()
    per = [args.count // args.workers + (1 if i < args.count % args.workers else 0)
           for i in range(args.workers)]
    procs = [multiprocessing.Process(target=worker, args=(args, i, per[i], out))
             for i in range(args.workers)]
    for p in procs:
        p.start()
    tally, problems = {}, []
    for _ in procs:
        t, pr = out.get()
        for kind, counts in t.items():
            for k, v in counts.items():
                tally.setdefault(kind, {})[k] = tally.setdefault(kind, {}).get(k, 0) + v
        problems += pr
    for p in procs:
        p.join()
    total = sum(sum(c.values()) for c in tally.values())
    result = {"requests": total, "seconds": round(time.monotonic() - t0, 1),
              "by_kind": tally, "problems": len(problems), "examples": problems[:10]}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{total} requests in {result['seconds']} s, {len(problems)} problems")
        for kind in KINDS:
            print(f"  {kind}: {json.dumps(tally.get(kind, {}), sort_keys=True)}")
        for p in problems[:10]:
            print(f"  problem: {p}")
    return 1 if problems or total != args.count else 0


if __name__ == "__main__":
    sys.exit(main())
