#!/usr/bin/env python3
"""Drive a headless Chromium over the DevTools protocol, standard library only.

The web console's test and the end-to-end tests use it to load pages, log
in, click, read the DOM and take screenshots, the way an operator would.

Command line (every command but launch takes --port, or --user-data-dir of
a browser started by launch, and acts on the browser's first page):

  cdp.py launch --user-data-dir DIR [--window-size 1280,800]
        start chromium headless in the background; print "PORT PID"
  cdp.py goto URL [--wait JS]    load URL (wait for the load event, then JS)
  cdp.py eval JS                 print the value (strings raw, others JSON)
  cdp.py wait JS                 poll until JS is truthy; print its value
  cdp.py click SELECTOR          a real mouse click at the element's centre
  cdp.py type SELECTOR TEXT      focus the field, replace its value by TEXT
  cdp.py dom                     print the document's HTML
  cdp.py screenshot OUT.png [--width W --height H] [--full-page]

Each command fails (exit 2) when the page throws, logs a console error or
violates its Content-Security-Policy while the command runs, or did so
earlier (since it loaded: Chromium tells a new DevTools session the
messages it kept); --allow-errors reports them without failing. A failed
wait or a missing element exits 1. --viewport WxH lays the page out at that
size for the command (the window's own size comes back after it).

As a library: Page.connect(port) returns a Page with goto(), eval(),
wait(), click(), type(), screenshot() and errors (what the page reported).
"""

import argparse
import base64
import hashlib
import json
import os
import socket
import struct
import sys
import time

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class CdpError(Exception):
    pass


class WebSocket:
    """A client of RFC 6455, enough for DevTools: text frames, masking,
    fragmentation, ping/pong and close."""

    def __init__(self, host, port, path, timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        self.message = b""
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                   "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode())
        head = self._read_until(b"\r\n\r\n").decode("latin-1")
        status = head.split("\r\n", 1)[0]
        if " 101 " not in status + " ":
            raise CdpError(f"websocket handshake refused: {status}")
        expect = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        headers = {}
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("sec-websocket-accept") != expect:
            raise CdpError("websocket handshake: bad Sec-WebSocket-Accept")

    def _read_until(self, marker):
        while marker not in self.buf:
            self._fill()
        head, _, self.buf = self.buf.partition(marker)
        return head

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise CdpError("websocket closed by the browser")
        self.buf += chunk

    def _send_frame(self, opcode, payload):
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i & 3] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def send(self, text):
        self._send_frame(0x1, text.encode())

    def _frame(self):
        """The next whole frame (fin, opcode, payload), taken off the buffer
        only once all of it is there: a timeout while it arrives leaves the
        buffer as it was, so that the next recv() resumes the stream."""
        while True:
            buf = self.buf
            if len(buf) >= 2:
                n, at = buf[1] & 0x7F, 2
                if n == 126 and len(buf) >= 4:
                    n, at = struct.unpack("!H", buf[2:4])[0], 4
                elif n == 127 and len(buf) >= 10:
                    n, at = struct.unpack("!Q", buf[2:10])[0], 10
                if (n < 126 or at > 2) and len(buf) >= at + (4 if buf[1] & 0x80 else 0) + n:
                    mask = None
                    if buf[1] & 0x80:
                        mask, at = buf[at:at + 4], at + 4
                    payload, self.buf = buf[at:at + n], buf[at + n:]
                    if mask:
                        payload = bytes(b ^ mask[i & 3] for i, b in enumerate(payload))
                    return bool(buf[0] & 0x80), buf[0] & 0x0F, payload
            self._fill()

    def recv(self, timeout):
        """One whole text message, or None when nothing came within timeout."""
        self.sock.settimeout(timeout)
        try:
            while True:
                fin, opcode, payload = self._frame()
                if opcode == 0x8:
                    raise CdpError("websocket closed by the browser")
                if opcode == 0x9:
                    self._send_frame(0xA, payload)
                    continue
                if opcode in (0x0, 0x1, 0x2):
                    # a fragmented message waits in self.message across timeouts
                    self.message += payload
                    if fin:
                        message, self.message = self.message, b""
                        return message.decode()
        except socket.timeout:
            return None

    def close(self):
        try:
            self._send_frame(0x8, b"")
        except OSError:
            pass
        self.sock.close()


def devtools_json(host, port, method, path, timeout=10.0):
    """The JSON answer of DevTools' HTTP endpoint: plain HTTP/1.1 over a
    socket (http.client alone would take longer to import than this takes
    to run, and each cdp.py command asks once)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                     "Connection: close\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data or len(data) < length:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            length = len(head) + 4
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length += int(value)
    head, _, body = data.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].decode("latin-1")
    if " 200 " not in status + " ":
        raise CdpError(f"{method} {path}: {status or 'no answer'}")
    return json.loads(body)


def describe_exception(details):
    exc = details.get("exception") or {}
    text = exc.get("description") or details.get("text") or "exception"
    return text.splitlines()[0] if text else "exception"


class Page:
    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.events = []
        self.errors = []
        self.loaded = False
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable")

    @classmethod
    def connect(cls, port, host="127.0.0.1"):
        targets = devtools_json(host, port, "GET", "/json/list")
        pages = [t for t in targets if t.get("type") == "page"]
        if not pages:
            pages = [devtools_json(host, port, "PUT", "/json/new?about:blank")]
        url = pages[0]["webSocketDebuggerUrl"]
        path = url.split(f":{port}", 1)[1]
        return cls(WebSocket(host, port, path))

    def _on_event(self, method, params):
        self.events.append((method, params))
        if method == "Page.loadEventFired":
            self.loaded = True
        elif method == "Runtime.exceptionThrown":
            self.errors.append("exception: " + describe_exception(params["exceptionDetails"]))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            texts = [str(a.get("value", a.get("description", ""))) for a in params.get("args", [])]
            self.errors.append("console." + params["type"] + ": " + " ".join(texts))
        elif method == "Log.entryAdded":
            entry = params["entry"]
            # A failed request the page expects (a 401 that sends it to the
            # login page, an error an action answered) is not a fault of the
            # page; a CSP violation or a script error is.
            if entry.get("level") == "error" and entry.get("source") != "network":
                self.errors.append(f"{entry.get('source')}: {entry.get('text')}")

    def _pump(self, timeout):
        raw = self.ws.recv(timeout)
        if raw is None:
            return None
        message = json.loads(raw)
        if "method" in message:
            self._on_event(message["method"], message.get("params", {}))
        return message

    def call(self, method, timeout=30.0, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError(f"{method}: no answer within {timeout}s")
            message = self._pump(left)
            if message and message.get("id") == mid:
                if "error" in message:
                    raise CdpError(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})

    def settle(self, seconds):
        """Take in the page's events for a while."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self._pump(left)

    def eval(self, expression):
        """The value of expression (awaited when a promise); CdpError when it throws."""
        result = self.call("Runtime.evaluate", expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise CdpError("eval: " + describe_exception(result["exceptionDetails"]))
        return result["result"].get("value")

    def wait(self, expression, timeout=10.0, every=0.1):
        """Poll expression until truthy; return its value, or raise CdpError
        with the last value. A navigation under way counts as not yet."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                last = self.eval(expression)
                if last:
                    return last
            except CdpError as e:
                last = str(e)
            if time.monotonic() >= deadline:
                raise CdpError(f"wait: still {last!r} after {timeout}s: {expression}")
            self.settle(every)

    def goto(self, url, timeout=15.0):
        self.loaded = False
        result = self.call("Page.navigate", url=url)
        if result.get("errorText"):
            raise CdpError(f"goto {url}: {result['errorText']}")
        deadline = time.monotonic() + timeout
        while not self.loaded:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError(f"goto {url}: no load event within {timeout}s")
            self._pump(left)

    def _center(self, selector):
        sel = json.dumps(selector)
        box = self.eval(f"""(() => {{
            const e = document.querySelector({sel});
            if (!e) return null;
            e.scrollIntoView({{block: 'center', inline: 'center'}});
            const r = e.getBoundingClientRect();
            const x = r.left + r.width / 2, y = r.top + r.height / 2;
            const hit = document.elementFromPoint(x, y);
            return {{x, y, w: r.width, h: r.height,
                     reachable: !!hit && (hit === e || e.contains(hit))}};
        }})()""")
        if box is None:
            raise CdpError(f"no element matches {selector}")
        if box["w"] == 0 or box["h"] == 0 or not box["reachable"]:
            raise CdpError(f"{selector} is hidden or covered")
        return box["x"], box["y"]

    def click(self, selector):
        x, y = self._center(selector)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y,
                      button="none" if kind == "mouseMoved" else "left", clickCount=1)

    def type(self, selector, text):
        self.click(selector)
        sel = json.dumps(selector)
        self.eval(f"(() => {{ const e = document.querySelector({sel}); e.focus(); e.select(); }})()")
        self.call("Input.insertText", text=text)

    def screenshot(self, path, width=None, height=None, full_page=False):
        if width and height:
            self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                      deviceScaleFactor=1, mobile=False)
        params = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params["captureBeyondViewport"] = True
            params["clip"] = {"x": 0, "y": 0, "width": size["width"],
                              "height": size["height"], "scale": 1}
        data = self.call("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        self.ws.close()


def read_port_file(user_data_dir, timeout=15.0):
    path = os.path.join(user_data_dir, "DevToolsActivePort")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                first = f.readline().strip()
            if first:
                return int(first)
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise CdpError(f"chromium wrote no {path} within {timeout}s")


def launch(user_data_dir, window_size, chromium):
    os.makedirs(user_data_dir, exist_ok=True)
    try:
        os.unlink(os.path.join(user_data_dir, "DevToolsActivePort"))
    except FileNotFoundError:
        pass
    import subprocess  # only here: the other commands start faster without it
    log = open(os.path.join(user_data_dir, "chromium.log"), "wb")
    args = [chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--password-store=basic", "--use-mock-keychain",
            # the layout keeps its width when a full-page screenshot takes
            # the page beyond the viewport (no scrollbar to lose)
            "--hide-scrollbars",
            f"--window-size={window_size}", f"--user-data-dir={user_data_dir}",
            "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
            "about:blank"]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)
    try:
        port = read_port_file(user_data_dir)
    except CdpError:
        proc.kill()
        raise
    return port, proc.pid


def print_value(value, as_json):
    if isinstance(value, str) and not as_json:
        print(value)
    else:
        print(json.dumps(value))


def run(args, page):
    if args.command == "goto":
        page.goto(args.url, timeout=args.timeout)
        if args.wait:
            page.wait(args.wait, timeout=args.timeout)
        print(page.eval("location.href"))
    elif args.command == "eval":
        print_value(page.eval(args.js), args.json)
    elif args.command == "wait":
        print_value(page.wait(args.js, timeout=args.timeout), args.json)
    elif args.command == "click":
        page.click(args.selector)
    elif args.command == "type":
        page.type(args.selector, args.text)
    elif args.command == "dom":
        print(page.eval("document.documentElement.outerHTML"))
    elif args.command == "screenshot":
        page.screenshot(args.out, args.width, args.height, args.full_page)
        print(args.out)
    # What the command set off (a poll, a redraw) reports within a moment.
    page.settle(args.settle)


def main():
    # The common options go before or after the command alike.
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument("--port", type=int, help="the browser's DevTools port")
    common.add_argument("--user-data-dir", help="find the port in this profile (launch's)")
    common.add_argument("--timeout", type=float, help="seconds, for goto and wait (10)")
    common.add_argument("--settle", type=float,
                        help="seconds to watch the page for errors after the command (0.1)")
    common.add_argument("--allow-errors", action="store_true",
                        help="report the page's errors without failing")
    common.add_argument("--json", action="store_true", help="print strings as JSON too")
    common.add_argument("--viewport", help="WxH: lay the page out at that size for the command")
    parser = argparse.ArgumentParser(description="Drive headless Chromium over DevTools.",
                                     parents=[common])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("launch", parents=[common])
    p.add_argument("--window-size", default="1280,800")
    p.add_argument("--chromium", default=os.environ.get("CHROMIUM", "chromium"))
    p = sub.add_parser("goto", parents=[common])
    p.add_argument("url")
    p.add_argument("--wait", help="then poll until this JS is truthy")
    sub.add_parser("eval", parents=[common]).add_argument("js")
    sub.add_parser("wait", parents=[common]).add_argument("js")
    sub.add_parser("click", parents=[common]).add_argument("selector")
    p = sub.add_parser("type", parents=[common])
    p.add_argument("selector")
    p.add_argument("text")
    sub.add_parser("dom", parents=[common])
    p = sub.add_parser("screenshot", parents=[common])
    p.add_argument("out")
    p.add_argument("--width", type=int)
    p.add_argument("--height", type=int)
    p.add_argument("--full-page", action="store_true")
    args = parser.parse_args()
    for name, default in (("port", None), ("user_data_dir", None), ("timeout", 10.0),
                          ("settle", 0.1), ("allow_errors", False), ("json", False),
                          ("viewport", None)):
        if not hasattr(args, name):
            setattr(args, name, default)

    try:
        if args.command == "launch":
            if not args.user_data_dir:
                parser.error("launch needs --user-data-dir")
            port, pid = launch(args.user_data_dir, args.window_size, args.chromium)
            print(port, pid)
            return 0
        port = args.port
        if port is None:
            if not args.user_data_dir:
                parser.error("give --port or --user-data-dir")
            port = read_port_file(args.user_data_dir)
        page = Page.connect(port)
    except (CdpError, OSError) as e:
        print(f"cdp.py {args.command}: {e}", file=sys.stderr)
        return 1
    status = 0
    try:
        if args.viewport:
            width, _, height = args.viewport.partition("x")
            page.call("Emulation.setDeviceMetricsOverride", width=int(width),
                      height=int(height), deviceScaleFactor=1, mobile=False)
        run(args, page)
    except (CdpError, OSError, ValueError) as e:
        print(f"cdp.py {args.command}: {e}", file=sys.stderr)
        status = 1
    finally:
        page.close()
    # Chromium replays messages from before this connection: each once
    for error in dict.fromkeys(page.errors):
        print(f"cdp.py {args.command}: page: {error}", file=sys.stderr)
    if page.errors and not args.allow_errors:
        status = status or 2
    return status


if __name__ == "__main__":
    sys.exit(main())
