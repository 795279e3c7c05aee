// maglb-monitor's web console: index.html (the node's status, polled) and
// login.html (the login form's messages).
//
// The page runs under a Content-Security-Policy without 'unsafe-inline':
// no inline script or style, no style attribute; looks go through classes
// and data attributes that console.css matches. Every string from the
// network lands in the DOM as text (textContent), never as markup.
'use strict';

(() => {
  const API = {
    state: '/api/v1/state',
    history: '/api/v1/history',
    backend: '/api/v1/backend',
    standby: '/api/v1/standby',
    logout: '/logout',
  };
  const LOGIN_PAGE = '/login.html';
  const STATE_EVERY_MS = 1000;
  const HISTORY_EVERY_MS = 3000;
  const REQUEST_TIMEOUT_MS = 5000;
  const MESSAGE_OK_MS = 8000;
  const CONFIRM_MS = 5000;
  const WEIGHT_MAX = 1000;
  const HISTORY_POINTS = 600;
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const DASH = '–';

  // ---- formatting -------------------------------------------------------

  // Three significant digits, so that a column of figures keeps its width.
  function sig3(v) {
    const a = Math.abs(v);
    if (a >= 100) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1);
    return v.toFixed(2);
  }

  function scaled(v, base, units) {
    let i = 0;
    while (Math.abs(v) >= base - base / 2000 && i < units.length - 1) {
      v /= base;
      i++;
    }
    return [v, units[i], i];
  }

  // 950, 1.23k, 45.6M: counts and rates.
  function fmtCount(n) {
    if (typeof n !== 'number' || !Number.isFinite(n)) return DASH;
    const [v, unit, i] = scaled(n, 1000, ['', 'k', 'M', 'G', 'T', 'P']);
    if (i > 0) return sig3(v) + unit;
    if (Number.isInteger(v)) return String(v);
    const s = sig3(v);
    return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
  }

  // 512 B, 61.0 MiB.
  function fmtBytes(n) {
    if (typeof n !== 'number' || !Number.isFinite(n)) return DASH;
    const [v, unit, i] = scaled(n, 1024, ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']);
    return (i === 0 ? v.toFixed(0) : sig3(v)) + ' ' + unit;
  }

  function fmtMs(ms) {
    if (typeof ms !== 'number' || !Number.isFinite(ms)) return DASH;
    return fmtCount(ms) + ' ms';
  }

  function pad2(n) { return String(n).padStart(2, '0'); }

  // HH:MM:SS in the browser's local time.
  function fmtClock(ms) {
    const d = new Date(ms);
    return pad2(d.getHours()) + ':' + pad2(d.getMinutes()) + ':' + pad2(d.getSeconds());
  }

  function fmtDateTime(ms) {
    const d = new Date(ms);
    return d.getFullYear() + '-' + pad2(d.getMonth() + 1) + '-' + pad2(d.getDate()) + ' ' +
      fmtClock(ms);
  }

  // 42s, 5m 12s, 3h 20m, 2d 4h.
  function fmtDuration(ms) {
    let s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + 's';
    const parts = [[86400, 'd'], [3600, 'h'], [60, 'm'], [1, 's']];
    const out = [];
    for (const [size, unit] of parts) {
      if (s >= size || out.length) {
        out.push(Math.floor(s / size) + unit);
        s %= size;
      }
      if (out.length === 2) break;
    }
    return out.join(' ');
  }

  // 198.18.0.10:443, [2001:db8::10]:443; port 0 is every port.
  function fmtEndpoint(address, port) {
    const host = String(address).includes(':') ? '[' + address + ']' : String(address);
    return host + ':' + (port === 0 ? '*' : String(port));
  }

  function fmtBool(b) { return b ? '✓' : '✗'; }

  // ---- DOM --------------------------------------------------------------

  // h('td', {class: 'num', data: {x: 1}}, [child, 'text']): children that
  // are strings become text nodes.
  function h(tag, props, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k === 'data') Object.assign(e.dataset, v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of [].concat(children === undefined ? [] : children)) e.append(c);
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }

  function $(id) { return document.getElementById(id); }

  // Writes only what changed: a rewrite of the same text every second
  // would restart selections and screen readers for nothing.
  function setText(e, text) {
    text = String(text);
    if (e.textContent !== text) e.textContent = text;
  }

  function setData(e, name, value) {
    value = String(value);
    if (e.dataset[name] !== value) e.dataset[name] = value;
  }

  function setAttr(e, name, value) {
    if (value === null || value === undefined || value === false) {
      if (e.hasAttribute(name)) e.removeAttribute(name);
    } else if (e.getAttribute(name) !== String(value)) {
      e.setAttribute(name, String(value));
    }
  }

  // Keeps parent's children in the order of items, one per key (in
  // data-<attr>), made by create() once and refreshed by update() on every
  // poll: a row under the mouse or a field being typed in stays the same
  // element. Children without the key (placeholders) go.
  function syncChildren(parent, items, attr, keyOf, create, update) {
    const old = new Map();
    for (const child of Array.from(parent.children)) {
      const key = child.dataset[attr];
      if (key === undefined) child.remove();
      else old.set(key, child);
    }
    items.forEach((item, i) => {
      const key = String(keyOf(item));
      let node = old.get(key);
      if (node) old.delete(key);
      else {
        node = create(item);
        node.dataset[attr] = key;
      }
      update(node, item);
      if (parent.children[i] !== node) parent.insertBefore(node, parent.children[i] || null);
    });
    for (const node of old.values()) node.remove();
  }

  function cells(row, names) {
    for (const name of names) row.append(h('td', {class: name}));
    return row;
  }

  function cell(row, name) { return row.querySelector('td.' + name); }

  function emptyRow(tbody, columns, text) {
    tbody.replaceChildren(h('tr', {class: 'empty'}, h('td', {colspan: columns, text})));
  }

  // ---- requests ---------------------------------------------------------

  class HttpError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function request(method, path, body, csrf) {
    const headers = {Accept: 'application/json'};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (csrf) headers['X-CSRF-Token'] = csrf;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), REQUEST_TIMEOUT_MS);
    let response;
    try {
      response = await fetch(path, {
        method, headers, credentials: 'same-origin', cache: 'no-store', signal: abort.signal,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      throw new Error(e.name === 'AbortError' ?
        'no answer within ' + REQUEST_TIMEOUT_MS / 1000 + ' s' : e.message);
    } finally {
      clearTimeout(timer);
    }
    let answer = null;
    try {
      answer = await response.json();
    } catch (e) {
      answer = null;
    }
    if (!response.ok) {
      const why = answer && typeof answer.error === 'string' ? answer.error : response.statusText;
      throw new HttpError(response.status, 'HTTP ' + response.status + (why ? ': ' + why : ''));
    }
    return answer;
  }

  function goLogin() {
    window.location.assign(LOGIN_PAGE);
  }

  // ---- the page's state -------------------------------------------------

  const view = {
    user: null,
    admin: null,       // the role the VIP tables were built for
    csrf: null,
    lastOk: 0,
    nodeTime: 0,
    counters: new Map(),  // key -> {t, packets, bytes, new_flows, rates}
    history: null,
    eventsKey: '',
    isAdmin: false,
  };

  // Packets, bytes and new flows a second, from this poll's counters and
  // the last one's, on the node's clock: the browser's would count the
  // network's delays. null until there are two polls.
  function rates(key, item, t, seen) {
    seen.add(key);
    const prev = view.counters.get(key);
    const now = {t, packets: item.packets, bytes: item.bytes, new_flows: item.new_flows, rates: null};
    if (prev) {
      const dt = (t - prev.t) / 1000;
      const grew = now.packets >= prev.packets && now.bytes >= prev.bytes &&
        now.new_flows >= prev.new_flows;
      if (dt > 0 && grew) {
        now.rates = {
          packets: (now.packets - prev.packets) / dt,
          bytes: (now.bytes - prev.bytes) / dt,
          new_flows: (now.new_flows - prev.new_flows) / dt,
        };
      } else if (dt <= 0) {
        // the same sample again (the node answered from its cache)
        now.rates = prev.rates;
      }
    }
    view.counters.set(key, now);
    return now.rates;
  }

  function pruneCounters(seen) {
    for (const key of view.counters.keys()) if (!seen.has(key)) view.counters.delete(key);
  }

  // ---- status and messages ----------------------------------------------

  function setStatus(kind, text) {
    const e = $('status');
    setData(e, 'kind', kind);
    setText(e, text);
  }

  let messageTimer = 0;

  function say(kind, text) {
    const e = $('message');
    clearTimeout(messageTimer);
    e.dataset.kind = kind;
    e.textContent = text;
    e.hidden = false;
    if (kind === 'ok') messageTimer = setTimeout(() => { e.hidden = true; }, MESSAGE_OK_MS);
  }

  // ---- header -----------------------------------------------------------

  function renderHeader(state) {
    const node = state.node || {};
    const cluster = state.cluster;
    setText($('node'), node.name || 'node ' + (node.id ?? '?'));
    setText($('node-meta'), 'node ' + (node.id ?? '?') + ' · v' + (node.version || '?'));

    const role = cluster ? (cluster.role || 'none') : 'unknown';
    setData($('role'), 'role', role);
    setText($('role'), cluster ? role : 'role unknown');
    $('standby').hidden = !(cluster && cluster.standby);

    const quorum = $('quorum');
    setData(quorum, 'quorate', cluster ? String(!!cluster.quorate) : 'unknown');
    setText(quorum, cluster ? (cluster.quorate ? 'quorate' : 'no quorum') : 'quorum unknown');

    for (const [id, up] of [['dataplane', node.dataplane_up], ['syncd', node.syncd_up]]) {
      setData($(id), 'up', String(!!up));
      setText($(id), id + (up ? ' up' : ' down'));
    }

    const user = state.user || {};
    const userEl = $('user');
    setData(userEl, 'role', user.role || 'unknown');
    if (view.user !== user.name + '/' + user.role) {
      view.user = user.name + '/' + user.role;
      userEl.replaceChildren(
        h('span', {class: 'user-name', text: user.name || '?'}), ' ',
        h('span', {class: 'user-role', text: user.role || '?'}));
    }
    view.csrf = typeof state.csrf === 'string' ? state.csrf : null;
    // HTTP Basic has no session to end: the browser keeps sending it.
    $('logout').hidden = !view.csrf;

    document.title = (node.name || 'maglb') + ' · ' + role + ' · maglb';
  }

  function renderErrors(errors) {
    const list = $('errors');
    const items = Array.isArray(errors) ? errors.map(String) : [];
    list.hidden = items.length === 0;
    syncChildren(list, items, 'error', (text) => text,
      () => h('li'), (li, text) => setText(li, text));
  }

  function setAvailable(card, available) {
    card.classList.toggle('unavailable', !available);
    card.querySelector('.unavailable-note').hidden = available;
    const body = card.querySelector('.card-body');
    if (body) body.hidden = !available;
  }

  // ---- cluster ----------------------------------------------------------

  function fact(dl, key, label, value, kind) {
    let dd = dl.querySelector('dd[data-fact="' + key + '"]');
    if (!dd) {
      dl.append(h('dt', {text: label}));
      dd = h('dd', {data: {fact: key}});
      dl.append(dd);
    }
    setText(dd, value);
    if (kind !== undefined) setData(dd, 'kind', kind);
  }

  function renderCluster(state) {
    const cluster = state.cluster;
    const card = $('cluster-card');
    setAvailable(card, !!cluster);
    renderClusterControls(cluster);
    if (!cluster) {
      setText($('cluster-mode'), '');
      return;
    }
    setText($('cluster-mode'), cluster.mode || '');
    const dl = $('cluster-summary');
    const now = state.node && state.node.time_ms;
    fact(dl, 'role', 'role', cluster.role || 'none');
    fact(dl, 'eligible', 'eligible', cluster.eligible ? 'yes' : 'no', String(!!cluster.eligible));
    fact(dl, 'standby', 'standby', cluster.standby ? 'yes' : 'no', String(!!cluster.standby));
    fact(dl, 'lease', 'lease', cluster.lease_ms ? cluster.lease_ms + ' ms' : 'none');
    fact(dl, 'role-changes', 'role changes', fmtCount(cluster.role_changes));
    fact(dl, 'last-change', 'last change', cluster.last_change_ms ?
      fmtClock(cluster.last_change_ms) + ' (' +
        fmtDuration((now || Date.now()) - cluster.last_change_ms) + ' ago)' : 'never');
    $('cluster-summary').querySelector('dd[data-fact="last-change"]')
      .setAttribute('title', cluster.last_change_ms ? fmtDateTime(cluster.last_change_ms) : '');

    const members = Array.isArray(cluster.members) ? cluster.members : [];
    const tbody = $('members').tBodies[0];
    if (members.length === 0) {
      emptyRow(tbody, 9, 'no members known');
      return;
    }
    const flags = ['known', 'eligible', 'dataplane', 'synced', 'quorate', 'standby'];
    syncChildren(tbody, members, 'node', (m) => m.id,
      () => cells(h('tr'), ['id', 'role', 'priority num'].concat(flags)),
      (tr, m) => {
        const self = state.node && m.id === state.node.id;
        tr.classList.toggle('self', !!self);
        setData(tr, 'role', m.role || 'none');
        setText(cell(tr, 'id'), 'node ' + m.id + (self ? ' (this node)' : ''));
        const role = cell(tr, 'role');
        setText(role, m.known ? (m.role || 'none') : 'unknown');
        setData(role, 'role', m.known ? (m.role || 'none') : 'unknown');
        setText(cell(tr, 'priority'), m.priority ?? DASH);
        for (const flag of flags) {
          const td = cell(tr, flag);
          setText(td, fmtBool(m[flag]));
          setData(td, 'value', String(!!m[flag]));
        }
      });
  }

  // Entering standby hands the VIPs to a peer: it takes a second click.
  function renderClusterControls(cluster) {
    const box = $('cluster-controls');
    if (!view.isAdmin || !cluster) {
      box.replaceChildren();
      return;
    }
    let button = $('standby-toggle');
    if (!button) {
      button = h('button', {id: 'standby-toggle', type: 'button', onclick: onStandbyClick});
      box.replaceChildren(button,
        h('span', {class: 'hint', text: 'standby withdraws this node from serving'}));
    }
    const on = !cluster.standby;
    setData(button, 'on', String(on));
    if (button.dataset.armed !== '1') {
      setText(button, on ? 'Enter standby' : 'Leave standby');
    }
  }

  let standbyTimer = 0;

  function onStandbyClick(event) {
    const button = event.currentTarget;
    const on = button.dataset.on === 'true';
    // the timer of an earlier arming must not disarm a later one
    clearTimeout(standbyTimer);
    if (on && button.dataset.armed !== '1') {
      button.dataset.armed = '1';
      button.textContent = 'Confirm: enter standby';
      standbyTimer = setTimeout(() => {
        delete button.dataset.armed;
        setText(button, button.dataset.on === 'true' ? 'Enter standby' : 'Leave standby');
      }, CONFIRM_MS);
      return;
    }
    delete button.dataset.armed;
    act(API.standby, {on}, 'standby ' + (on ? 'on' : 'off'), button);
  }

  // ---- sync -------------------------------------------------------------

  function renderSync(state) {
    const sync = state.sync;
    setAvailable($('sync-card'), !!sync);
    const summary = $('sync-summary');
    if (!sync) {
      setText(summary, '');
      return;
    }
    setText(summary, (sync.synced ? 'synced' : 'not synced') + ' · ' +
      fmtCount(sync.entries) + ' entries');
    setData(summary, 'synced', String(!!sync.synced));
    const groups = Array.isArray(sync.groups) ? sync.groups : [];
    const tbody = $('sync-groups').tBodies[0];
    if (groups.length === 0) {
      emptyRow(tbody, 10, 'no sync groups');
      return;
    }
    const numbers = ['members', 'entries_sent', 'entries_received', 'imported', 'rejected', 'dropped'];
    syncChildren(tbody, groups, 'group', (g) => g.name,
      () => cells(h('tr'), ['name', 'state'].concat(numbers.map((n) => n + ' num'),
        ['lag_p50_ms num', 'lag_p99_ms num'])),
      (tr, g) => {
        setData(tr, 'state', g.state || 'unknown');
        setText(cell(tr, 'name'), g.name);
        const st = cell(tr, 'state');
        setText(st, g.state || 'unknown');
        setData(st, 'state', g.state || 'unknown');
        for (const n of numbers) setText(cell(tr, n), fmtCount(g[n]));
        cell(tr, 'rejected').classList.toggle('bad', g.rejected > 0);
        cell(tr, 'dropped').classList.toggle('bad', g.dropped > 0);
        setText(cell(tr, 'lag_p50_ms'), fmtMs(g.lag_p50_ms));
        setText(cell(tr, 'lag_p99_ms'), fmtMs(g.lag_p99_ms));
      });
  }

  // ---- VIPs and backends ------------------------------------------------

  const BACKEND_COLUMNS = [
    ['address', 'Backend'], ['state', 'State'], ['health-agreed', 'Agreed'],
    ['health-local', 'Local'], ['down-on', 'Down on'], ['weight num', 'Weight'],
    ['share', 'Maglev share'], ['flows num', 'Flows'], ['new-flows num', 'New/s'],
    ['pps num', 'Packets/s'], ['bps num', 'Bytes/s'], ['bytes num', 'Bytes'],
  ];

  function createVip() {
    const head = h('div', {class: 'vip-head'}, [
      h('h3', {class: 'vip-name'}),
      h('span', {class: 'vip-endpoint'}),
      h('span', {class: 'vip-protocol badge'}),
      h('span', {class: 'vip-owned badge'}),
      h('span', {class: 'vip-stats'}),
    ]);
    const columns = BACKEND_COLUMNS.map(([cls, label]) =>
      h('th', {class: cls.includes('num') ? 'num' : null, text: label}));
    if (view.isAdmin) columns.push(h('th', {class: 'actions', text: 'Actions'}));
    const table = h('table', {class: 'grid backends'}, [
      h('thead', null, h('tr', null, columns)),
      h('tbody'),
    ]);
    return h('section', {class: 'vip'}, [head, table]);
  }

  function updateVip(section, vip, t, seen) {
    setData(section, 'owned', String(!!vip.owned));
    setText(section.querySelector('.vip-name'), vip.name);
    setText(section.querySelector('.vip-endpoint'), fmtEndpoint(vip.address, vip.port));
    setText(section.querySelector('.vip-protocol'), vip.protocol || '?');
    const owned = section.querySelector('.vip-owned');
    setText(owned, vip.owned ? 'owned here' : 'not owned');
    setData(owned, 'owned', String(!!vip.owned));
    const r = rates('vip\n' + vip.name, vip, t, seen);
    const up = vip.backends_up ?? 0;
    const stats = section.querySelector('.vip-stats');
    setData(stats, 'degraded', String(up < (vip.backends ?? 0)));
    setText(stats, up + '/' + (vip.backends ?? 0) + ' backends up · ' +
      fmtCount(vip.flows) + ' flows · ' +
      (r ? fmtCount(r.packets) + ' packets/s · ' + fmtBytes(r.bytes) + '/s · ' +
        fmtCount(r.new_flows) + ' new flows/s' : 'rates after the next poll'));

    const backends = Array.isArray(vip.backend_list) ? vip.backend_list : [];
    const tbody = section.querySelector('tbody');
    if (backends.length === 0) {
      emptyRow(tbody, BACKEND_COLUMNS.length + (view.isAdmin ? 1 : 0), 'no backends');
      return;
    }
    syncChildren(tbody, backends, 'backend', (b) => b.address,
      () => createBackendRow(),
      (tr, b) => updateBackendRow(tr, vip, b, rates('backend\n' + vip.name + '\n' + b.address, b, t, seen)));
  }

  function createBackendRow() {
    const tr = cells(h('tr', {class: 'backend'}), BACKEND_COLUMNS.map(([cls]) => cls));
    const bar = svg('svg', {class: 'share-bar', width: 60, height: 8, viewBox: '0 0 60 8', 'aria-hidden': 'true'});
    bar.append(svg('rect', {class: 'share-track', x: 0, y: 0, width: 60, height: 8, rx: 2}),
      svg('rect', {class: 'share-fill', x: 0, y: 0, width: 0, height: 8, rx: 2}));
    cell(tr, 'share').append(bar, h('span', {class: 'share-text'}));
    if (view.isAdmin) {
      const input = h('input', {
        class: 'weight-input', type: 'number', min: 0, max: WEIGHT_MAX, step: 1,
        inputmode: 'numeric', 'aria-label': 'new weight',
      });
      tr.append(h('td', {class: 'actions'}, [
        h('button', {class: 'drain', type: 'button'}),
        h('form', {class: 'weight-form', novalidate: true}, [
          input, h('button', {class: 'set-weight', type: 'submit', text: 'Set weight'}),
        ]),
      ]));
    }
    return tr;
  }

  function healthCell(td, value) {
    const v = value === 'up' || value === 'down' ? value : 'unknown';
    setText(td, v);
    setData(td, 'health', v);
  }

  function updateBackendRow(tr, vip, b, r) {
    const health = b.health || {};
    const state = b.state || 'unknown';
    setData(tr, 'state', state);
    setData(tr, 'healthAgreed', health.agreed || 'unknown');
    setData(tr, 'healthLocal', health.local || 'unknown');
    setData(tr, 'weight', b.weight ?? '');
    setText(cell(tr, 'address'), b.address);
    const st = cell(tr, 'state');
    setText(st, state);
    setData(st, 'state', state);
    healthCell(cell(tr, 'health-agreed'), health.agreed);
    healthCell(cell(tr, 'health-local'), health.local);
    const downOn = Array.isArray(health.down_on) ? health.down_on : [];
    setText(cell(tr, 'down-on'), downOn.length ? downOn.map((id) => 'node ' + id).join(', ') : DASH);
    const weight = cell(tr, 'weight');
    setText(weight, b.weight === b.config_weight || b.config_weight === undefined ?
      String(b.weight ?? DASH) : b.weight + ' (config ' + b.config_weight + ')');
    const share = typeof b.maglev_share === 'number' ? Math.min(1, Math.max(0, b.maglev_share)) : 0;
    setAttr(cell(tr, 'share').querySelector('.share-fill'), 'width', (share * 60).toFixed(1));
    setText(cell(tr, 'share').querySelector('.share-text'), (share * 100).toFixed(1) + '%');
    setText(cell(tr, 'flows'), fmtCount(b.flows));
    setText(cell(tr, 'new-flows'), r ? fmtCount(r.new_flows) : DASH);
    setText(cell(tr, 'pps'), r ? fmtCount(r.packets) : DASH);
    setText(cell(tr, 'bps'), r ? fmtBytes(r.bytes) + '/s' : DASH);
    setText(cell(tr, 'bytes'), fmtBytes(b.bytes));
    cell(tr, 'bytes').setAttribute('title', fmtCount(b.packets) + ' packets');

    if (view.isAdmin) {
      const drain = tr.querySelector('button.drain');
      const action = state === 'draining' ? 'undrain' : 'drain';
      setData(drain, 'action', action);
      setText(drain, action === 'drain' ? 'Drain' : 'Undrain');
      setAttr(tr.querySelector('.weight-input'), 'placeholder', String(b.weight ?? ''));
    }
  }

  function renderVips(state) {
    const vips = state.vips;
    setAvailable($('vips-card'), Array.isArray(vips));
    const box = $('vips');
    const seen = new Set();
    if (!Array.isArray(vips)) {
      setText($('vips-summary'), '');
      pruneCounters(seen);
      return;
    }
    // The tables' columns depend on the role: a change of role rebuilds them.
    if (view.admin !== view.isAdmin) {
      box.replaceChildren();
      view.admin = view.isAdmin;
    }
    const owned = vips.filter((v) => v.owned).length;
    setText($('vips-summary'), vips.length + ' VIPs · ' + owned + ' owned by this node');
    const t = (state.node && state.node.time_ms) || Date.now();
    if (vips.length === 0) {
      box.replaceChildren(h('p', {class: 'empty', text: 'no VIPs configured'}));
    } else {
      syncChildren(box, vips, 'vip', (v) => v.name, createVip, (section, v) => updateVip(section, v, t, seen));
    }
    pruneCounters(seen);
  }

  function vipActions(event) {
    const button = event.target.closest('button.drain');
    if (!button || !view.isAdmin) return;
    const vip = button.closest('.vip').dataset.vip;
    const backend = button.closest('tr').dataset.backend;
    const action = button.dataset.action;
    act(API.backend, {vip, backend, action}, action + ' ' + backend + ' in ' + vip, button);
  }

  function vipWeight(event) {
    const form = event.target.closest('form.weight-form');
    if (!form) return;
    event.preventDefault();
    if (!view.isAdmin) return;
    const input = form.querySelector('.weight-input');
    const vip = form.closest('.vip').dataset.vip;
    const backend = form.closest('tr').dataset.backend;
    const text = input.value.trim();
    const weight = Number(text);
    if (!/^\d+$/.test(text) || weight > WEIGHT_MAX) {
      input.setAttribute('aria-invalid', 'true');
      say('error', 'weight for ' + backend + ' in ' + vip + ' must be an integer from 0 to ' +
        WEIGHT_MAX);
      return;
    }
    input.removeAttribute('aria-invalid');
    act(API.backend, {vip, backend, action: 'weight', weight},
      'weight ' + weight + ' for ' + backend + ' in ' + vip, form.querySelector('button'))
      .then((ok) => { if (ok) input.value = ''; });
  }

  // ---- BFD --------------------------------------------------------------

  function renderBfd(state) {
    const bfd = state.bfd;
    setAvailable($('bfd-card'), !!bfd);
    const summary = $('bfd-summary');
    if (!bfd) {
      setText(summary, '');
      return;
    }
    setText(summary, bfd.serving ? 'serving' : 'not serving');
    setData(summary, 'serving', String(!!bfd.serving));
    const sessions = Array.isArray(bfd.sessions) ? bfd.sessions : [];
    const tbody = $('bfd').tBodies[0];
    if (sessions.length === 0) {
      emptyRow(tbody, 3, 'no BFD sessions');
      return;
    }
    syncChildren(tbody, sessions, 'peer', (s) => s.peer,
      () => cells(h('tr'), ['peer', 'state', 'changes num']),
      (tr, s) => {
        setData(tr, 'state', s.state || 'unknown');
        setText(cell(tr, 'peer'), s.peer);
        const st = cell(tr, 'state');
        setText(st, s.state || 'unknown');
        setData(st, 'state', String(s.state || 'unknown').toLowerCase());
        setText(cell(tr, 'changes'), fmtCount(s.state_changes));
      });
  }

  // ---- history: charts and events ---------------------------------------

  function cssVar(name, fallback) {
    const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return v || fallback;
  }

  // The smallest of 1, 2, 2.5, 5 times a power of ten at or above x.
  function niceCeil(x) {
    if (!(x > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(x)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= x) return m * p;
    return 10 * p;
  }

  function drawChart(canvas, history) {
    const points = history.points || [];
    const key = canvas.dataset.series;
    const unit = canvas.dataset.unit || '';
    const format = (v) => fmtCount(v) + unit;
    const ratio = window.devicePixelRatio || 1;
    const w = canvas.clientWidth;
    const ht = canvas.clientHeight;
    if (!w || !ht) return;
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(ht * ratio);
    const ctx = canvas.getContext('2d');
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, w, ht);

    const interval = history.interval_ms || 1000;
    const span = interval * (HISTORY_POINTS - 1);
    const t1 = points.length ? points[points.length - 1].t_ms : 0;
    const t0 = t1 - span;
    const values = points.map((p) => p[key]).filter((v) => typeof v === 'number' && Number.isFinite(v));
    const top = niceCeil(Math.max(0, ...values) * 1.05);
    const left = 46;
    const right = 6;
    const above = 6;
    const below = 16;
    const pw = w - left - right;
    const ph = ht - above - below;
    const x = (t) => left + ((t - t0) / span) * pw;
    const y = (v) => above + ph - (v / top) * ph;

    const font = cssVar('--chart-font', '10px sans-serif');
    const ink = cssVar('--chart-ink', '#666');
    ctx.font = font;
    ctx.lineWidth = 1;
    ctx.strokeStyle = cssVar('--chart-grid', '#e3e6ea');
    ctx.fillStyle = ink;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    for (const f of [0, 0.5, 1]) {
      const gy = Math.round(y(top * f)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(left, gy);
      ctx.lineTo(w - right, gy);
      ctx.stroke();
      ctx.fillText(format(top * f), left - 4, gy);
    }
    ctx.textBaseline = 'alphabetic';
    const minutes = span / 60000;
    for (const f of [0, 0.5, 1]) {
      const label = f === 1 ? 'now' : '-' + fmtCount(minutes * (1 - f)) + 'm';
      ctx.textAlign = f === 0 ? 'left' : f === 1 ? 'right' : 'center';
      ctx.fillText(label, left + f * pw, ht - 3);
    }

    // role changes, where the traffic moved
    ctx.strokeStyle = cssVar('--chart-mark', '#d08700');
    ctx.setLineDash([3, 3]);
    for (const e of history.events || []) {
      if (e.kind !== 'role' || e.t_ms < t0 || e.t_ms > t1) continue;
      const mx = Math.round(x(e.t_ms)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(mx, above);
      ctx.lineTo(mx, above + ph);
      ctx.stroke();
    }
    ctx.setLineDash([]);

    // the series, a gap where a value is missing
    const runs = [];
    let run = [];
    for (const p of points) {
      const v = p[key];
      if (p.t_ms >= t0 && typeof v === 'number' && Number.isFinite(v)) run.push([x(p.t_ms), y(v)]);
      else if (run.length) {
        runs.push(run);
        run = [];
      }
    }
    if (run.length) runs.push(run);
    ctx.lineJoin = 'round';
    for (const r of runs) {
      ctx.beginPath();
      ctx.moveTo(r[0][0], above + ph);
      for (const [px, py] of r) ctx.lineTo(px, py);
      ctx.lineTo(r[r.length - 1][0], above + ph);
      ctx.closePath();
      ctx.fillStyle = cssVar('--chart-fill', 'rgba(37, 99, 235, 0.12)');
      ctx.fill();
      ctx.beginPath();
      r.forEach(([px, py], i) => (i ? ctx.lineTo(px, py) : ctx.moveTo(px, py)));
      ctx.strokeStyle = cssVar('--chart-line', '#2563eb');
      ctx.lineWidth = 1.5;
      ctx.stroke();
      ctx.lineWidth = 1;
    }
    canvas.dataset.points = String(values.length);
    const last = points.length ? points[points.length - 1][key] : null;
    const now = $(canvas.id + '-now');
    if (now) setText(now, typeof last === 'number' ? format(last) : DASH);
    canvas.setAttribute('aria-label', (now ? now.parentNode.firstChild.textContent.trim() : key) +
      ', last ' + fmtCount(minutes) + ' minutes, now ' + (typeof last === 'number' ? format(last) : 'unknown'));
  }

  function drawCharts() {
    if (!view.history) return;
    for (const canvas of document.querySelectorAll('canvas[data-series]')) drawChart(canvas, view.history);
  }

  function renderEvents(history) {
    const events = Array.isArray(history.events) ? history.events : [];
    const last = events[events.length - 1];
    const key = events.length + '\n' + (last ? last.t_ms + '\n' + last.text : '');
    if (key === view.eventsKey) return;
    view.eventsKey = key;
    const list = $('events');
    setText($('events-summary'), events.length ? events.length + ', newest first' : '');
    if (events.length === 0) {
      list.replaceChildren(h('li', {class: 'empty', text: 'no events'}));
      return;
    }
    list.replaceChildren(...events.slice().reverse().map((e) => h('li', {
      class: 'event', data: {kind: String(e.kind || 'other')},
    }, [
      h('time', {text: fmtClock(e.t_ms), title: fmtDateTime(e.t_ms),
        datetime: new Date(e.t_ms).toISOString()}),
      h('span', {class: 'kind', text: String(e.kind || 'other')}),
      h('span', {class: 'text', text: String(e.text ?? '')}),
    ])));
  }

  function renderHistory(history) {
    view.history = history;
    const points = history.points || [];
    const interval = history.interval_ms || 1000;
    setText($('history-span'), points.length ?
      'last ' + fmtDuration(interval * (HISTORY_POINTS - 1)) + ', every ' + fmtDuration(interval) : '');
    drawCharts();
    renderEvents(history);
  }

  // ---- actions ----------------------------------------------------------

  // POSTs an admin action; says how it went and reloads the state at once.
  // Resolves to whether the node took it.
  async function act(path, body, what, control) {
    if (control) control.disabled = true;
    let ok = false;
    try {
      await request('POST', path, body, view.csrf);
      say('ok', what + ': done');
      ok = true;
    } catch (e) {
      if (e.status === 401) {
        goLogin();
        return false;
      }
      say('error', what + ' failed: ' + e.message);
    } finally {
      if (control) control.disabled = false;
    }
    refreshState();
    refreshHistory();
    return ok;
  }

  async function logout() {
    try {
      await request('POST', API.logout, undefined, view.csrf);
    } catch (e) {
      // the login page is where this ends either way
    }
    goLogin();
  }

  // ---- polling ----------------------------------------------------------

  // One request in flight per resource; a refresh asked for meanwhile
  // runs as soon as that one ends.
  function poller(fetchOnce, everyMs) {
    let timer = 0;
    let busy = false;
    let again = false;
    const run = () => {
      if (busy) {
        again = true;
        return;
      }
      clearTimeout(timer);
      busy = true;
      fetchOnce().finally(() => {
        busy = false;
        timer = setTimeout(run, again ? 0 : everyMs);
        again = false;
      });
    };
    return run;
  }

  function renderState(state) {
    view.isAdmin = !!(state.user && state.user.role === 'admin');
    renderHeader(state);
    renderErrors(state.errors);
    renderCluster(state);
    renderSync(state);
    renderVips(state);
    renderBfd(state);
  }

  async function fetchState() {
    let state;
    try {
      state = await request('GET', API.state);
    } catch (e) {
      if (e.status === 401) {
        goLogin();
        return;
      }
      document.body.classList.add('stale');
      setStatus('lost', 'connection lost: ' + e.message +
        (view.lastOk ? ' (last update ' + fmtClock(view.lastOk) + ')' : ''));
      return;
    }
    try {
      renderState(state);
    } catch (e) {
      // a bug of this page, not of the connection: say so, and let the
      // browser's console have it too
      setStatus('lost', 'display error: ' + e.message);
      throw e;
    }
    view.lastOk = Date.now();
    document.body.classList.remove('stale');
    setStatus('ok', 'updated ' + fmtClock(view.lastOk));
    document.body.dataset.ready = '1';
  }

  async function fetchHistory() {
    try {
      renderHistory(await request('GET', API.history));
    } catch (e) {
      if (e.status === 401) goLogin();
      // the state poll reports a lost connection
    }
  }

  const refreshState = poller(fetchState, STATE_EVERY_MS);
  const refreshHistory = poller(fetchHistory, HISTORY_EVERY_MS);

  function startConsole() {
    $('logout').addEventListener('click', logout);
    $('vips').addEventListener('click', vipActions);
    $('vips').addEventListener('submit', vipWeight);
    let pending = false;
    window.addEventListener('resize', () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        drawCharts();
      });
    });
    refreshState();
    refreshHistory();
  }

  // ---- login page -------------------------------------------------------

  function startLogin() {
    const params = new URLSearchParams(window.location.search);
    const message = $('login-message');
    let text = null;
    if (params.has('throttled')) text = 'Too many failed logins: wait a minute, then try again.';
    else if (params.has('failed')) text = 'Wrong user name or password.';
    if (text) {
      message.textContent = text;
      message.dataset.kind = 'error';
      message.hidden = false;
    }
    $('login-user').focus();
  }

  function start() {
    if ($('login-form')) startLogin();
    else if ($('vips')) startConsole();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
