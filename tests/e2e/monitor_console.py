#!/usr/bin/env python3
"""The web console of maglb-monitor in a headless Chromium, for
tests/e2e/check_monitor.sh: what an operator does and sees, through
tests/unit/cdp.py (a DevTools client, standard library only).

  monitor_console.py --port PORT COMMAND ...

PORT is the DevTools port of a Chromium the test started (in the
operator's namespace, where this runs too). Commands, on the browser's
first page:

  login BASE USER PASSWORD   load BASE/ (without a session: sent to
                             /login.html), type the user and the password,
                             click the submit button; then wait for the
                             console (path /, body[data-ready="1"]) showing
                             USER
  read                       the console as JSON: the role badge (#role),
                             the user (#user), the members table (a
                             tr[data-node] each: id and role), every
                             backend row of .vip[data-vip] (data-backend,
                             data-state) and its drain control (present,
                             disabled, data-action)
  await-backend VIP ADDR STATE [ACTION]
                             until the console shows that backend in STATE
                             (and, given, its drain button's data-action
                             ACTION)
  click SELECTOR             a real mouse click at the element's centre
  logout                     click #logout; wait for the login page
  post PATH JSON             from the page: fetch(PATH, POST, the JSON,
                             X-CSRF-Token: the "csrf" of /api/v1/state, as
                             the console sends it); prints the HTTP status
                             and the answer
  screenshot OUT.png         the whole page

Fails (exit 1, saying why on stderr) when a wait times out or an element
is missing, and (exit 2) when the page reported a script error, a console
error or a Content-Security-Policy violation (cdp.py's Page.errors;
failed requests the page expects, a 403 refused, are not errors).
"""

import argparse
import json
import os
import sys

# no __pycache__ in the source tree
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit"))
import cdp  # noqa: E402  (tests/unit/cdp.py)

READY = "document.body && document.body.dataset.ready === '1'"

READ_JS = r"""(() => {
  const text = (e) => e ? e.textContent.trim() : null;
  const role = document.getElementById('role');
  const user = document.getElementById('user');
  const members = Array.from(document.querySelectorAll('#members tbody tr[data-node]')).map((tr) => ({
    node: Number(tr.dataset.node), role: tr.dataset.role,
    role_text: text(tr.querySelector('td.role')), self: tr.classList.contains('self'),
  }));
  const vips = Array.from(document.querySelectorAll('#vips .vip[data-vip]')).map((v) => ({
    vip: v.dataset.vip,
    backends: Array.from(v.querySelectorAll('tr.backend[data-backend]')).map((tr) => {
      const b = tr.querySelector('button.drain');
      return {backend: tr.dataset.backend, state: tr.dataset.state,
              drain: b ? {disabled: b.disabled, action: b.dataset.action || null,
                          text: b.textContent.trim()} : null};
    }),
  }));
  return {
    path: location.pathname, ready: document.body.dataset.ready || null,
    role: text(role), role_attr: role ? role.dataset.role : null,
    user: text(user), user_role: user ? user.dataset.role : null,
    status: text(document.getElementById('status')),
    message: text(document.getElementById('message')),
    drain_buttons: document.querySelectorAll('button.drain').length,
    weight_forms: document.querySelectorAll('form.weight-form').length,
    standby_toggle: !!document.getElementById('standby-toggle'),
    members, vips,
  };
})()"""


def fail(message):
    print(f"monitor_console.py: {message}", file=sys.stderr)
    sys.exit(1)


def backend_js(vip, addr):
    return (f"document.querySelector('#vips .vip[data-vip={json.dumps(vip)}] "
            f"tr.backend[data-backend={json.dumps(addr)}]')")


def login(page, base, user, password, timeout):
    page.goto(base + "/", timeout=timeout)
    page.wait("location.pathname === '/login.html' && !!document.getElementById('login-form')",
              timeout=timeout)
    page.type("#login-user", user)
    page.type("#login-password", password)
    page.loaded = False
    page.click("#login-submit")
    page.wait(f"location.pathname === '/' && {READY} && "
              f"(document.querySelector('#user .user-name') || {{}}).textContent === {json.dumps(user)}",
              timeout=timeout)


def post(page, path, body):
    js = f"""(async () => {{
      const state = await (await fetch('/api/v1/state', {{credentials: 'same-origin'}})).json();
      const r = await fetch({json.dumps(path)}, {{method: 'POST', credentials: 'same-origin',
        headers: {{'Content-Type': 'application/json', 'X-CSRF-Token': state.csrf || ''}},
        body: {json.dumps(body)}}});
      return {{status: r.status, body: await r.text(), csrf_known: typeof state.csrf === 'string'}};
    }})()"""
    return page.eval(js)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=20.0)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("login")
    p.add_argument("base")
    p.add_argument("user")
    p.add_argument("password")
    sub.add_parser("read")
    p = sub.add_parser("await-backend")
    p.add_argument("vip")
    p.add_argument("addr")
    p.add_argument("state")
    p.add_argument("action", nargs="?")
    sub.add_parser("click").add_argument("selector")
    sub.add_parser("logout")
    p = sub.add_parser("post")
    p.add_argument("path")
    p.add_argument("json")
    sub.add_parser("screenshot").add_argument("out")
    args = ap.parse_args()

    try:
        page = cdp.Page.connect(args.port)
    except (cdp.CdpError, OSError) as e:
        fail(f"cannot reach the browser on port {args.port}: {e}")
    status = 0
    try:
        if args.command == "login":
            login(page, args.base.rstrip("/"), args.user, args.password, args.timeout)
        elif args.command == "read":
            page.wait(READY, timeout=args.timeout)
            print(json.dumps(page.eval(READ_JS)))
        elif args.command == "await-backend":
            row = backend_js(args.vip, args.addr)
            cond = f"(() => {{ const r = {row}; return !!r && r.dataset.state === {json.dumps(args.state)}"
            if args.action:
                cond += (f" && !!r.querySelector('button.drain') && "
                         f"r.querySelector('button.drain').dataset.action === {json.dumps(args.action)}"
                         f" && !r.querySelector('button.drain').disabled")
            cond += "; })()"
            page.wait(cond, timeout=args.timeout)
        elif args.command == "click":
            page.click(args.selector)
        elif args.command == "logout":
            page.click("#logout")
            page.wait("location.pathname === '/login.html' && !!document.getElementById('login-form')",
                      timeout=args.timeout)
        elif args.command == "post":
            print(json.dumps(post(page, args.path, args.json)))
        elif args.command == "screenshot":
            # from the top: a click scrolled the page, and the sticky header
            # would be drawn where the scroll left it
            page.eval("window.scrollTo(0, 0)")
            page.settle(0.3)
            page.screenshot(args.out, full_page=True)
            print(args.out)
        # what the command set off (a poll, an action's answer) reports within a moment
        page.settle(0.3)
    except (cdp.CdpError, OSError) as e:
        print(f"monitor_console.py {args.command}: {e}", file=sys.stderr)
        status = 1
    finally:
        page.close()
    for error in dict.fromkeys(page.errors):
        print(f"monitor_console.py {args.command}: page: {error}", file=sys.stderr)
    if page.errors:
        status = status or 2
    return status


if __name__ == "__main__":
    sys.exit(main())
