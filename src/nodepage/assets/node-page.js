// The node page's script: draws the snapshot the kubelet sends over /node/api/stream, applies its
// deltas, and ticks ages and back-off countdowns once a second. Everything is built with
// createElement/textContent (no HTML from data), and nothing is inline, so CSP 'self' holds.
'use strict';

const state = {
  node: undefined,
  pods: new Map(),
  order: [],
  events: [],
  pulls: { available: false, inFlight: [], recent: [] },
  selected: undefined,
};
const API = 'api';
const MAX_EVENTS = 200;
const RETRY_MS = 2000;
const TOKEN_KEY = 'tskubelet-node-page-token';

// The page's token comes in the address's fragment (never sent to a server) from
// `tskubelet node-page-url`; it is kept for this origin only and taken out of the address bar.
// On the kubelet API (10250) there is none: the browser's own credentials answer there.
function takeToken() {
  const m = /(?:^#|&)token=([A-Za-z0-9_-]+)/.exec(location.hash);
  if (m) {
    localStorage.setItem(TOKEN_KEY, m[1]);
    history.replaceState(null, '', location.pathname + location.search);
  }
  return localStorage.getItem(TOKEN_KEY) || undefined;
}
const token = takeToken();

function apiFetch(url, init = {}) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  return fetch(url, { cache: 'no-store', ...init, headers });
}

function $(id) {
  return document.getElementById(id);
}

function el(tag, opts, ...children) {
  const e = document.createElement(tag);
  if (opts) {
    if (opts.cls) e.className = opts.cls;
    if (opts.text !== undefined) e.textContent = String(opts.text);
    if (opts.data) for (const [k, v] of Object.entries(opts.data)) e.dataset[k] = v;
    if (opts.title) e.title = opts.title;
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

// k8s.io/apimachinery's HumanDuration, as kubectl prints AGE.
function human(ms) {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  if (days < 365 * 2) return `${days}d`;
  return `${Math.floor(days / 365)}y`;
}

function ago(ms) {
  return ms === undefined ? '' : human(Date.now() - ms);
}

function bytes(n) {
  if (n === undefined || n === null) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

function statusClass(s) {
  if (s === 'Running' || s === 'Completed' || s === 'Succeeded') return `status-${s}`;
  if (/BackOff|Err|Error|Failed|OOMKilled|ExitCode|Signal|Invalid/.test(s)) return 'status-bad';
  return 'status-wait';
}

// ---- the node ---------------------------------------------------------------------------------

function drawNode() {
  const n = state.node;
  if (!n) return;
  $('node-name').textContent = n.name;
  document.title = `${n.name} · tskubelet`;
  const facts = $('node-facts');
  facts.replaceChildren(
    el('span', { text: `kubelet ${n.kubeletVersion}` }),
    el('span', { text: n.runtime }),
    n.os ? el('span', { text: n.os }) : null,
    n.kernel ? el('span', { text: `kernel ${n.kernel}` }) : null,
    el('span', { text: `up ${ago(n.startedAtMs)}`, data: { tick: 'uptime' } }),
  );
  const health = $('node-health');
  const badge = (text, cls, title) => el('span', { cls: `badge ${cls}`, text, title });
  health.replaceChildren(
    badge(
      n.pleg.healthy ? 'PLEG healthy' : 'PLEG unhealthy',
      n.pleg.healthy ? 'ok' : 'bad',
      n.pleg.message || '',
    ),
    badge(n.pressure.memory ? 'MemoryPressure' : 'memory ok', n.pressure.memory ? 'bad' : 'ok'),
    badge(n.pressure.disk ? 'DiskPressure' : 'disk ok', n.pressure.disk ? 'bad' : 'ok'),
    badge(n.pressure.pid ? 'PIDPressure' : 'pids ok', n.pressure.pid ? 'bad' : 'ok'),
  );
  const u = n.usage || {};
  const memCap = parseQuantity(n.capacity.memory);
  const cpuCap = parseQuantity(n.capacity.cpu);
  const rows = [
    [
      'cpu',
      n.capacity.cpu,
      n.allocatable.cpu,
      u.cpuNanoCores !== undefined ? `${(u.cpuNanoCores / 1e6).toFixed(0)}m` : '',
      u.cpuNanoCores !== undefined && cpuCap ? u.cpuNanoCores / 1e9 / cpuCap : undefined,
    ],
    [
      'memory',
      n.capacity.memory,
      inUnitOf(n.allocatable.memory, n.capacity.memory),
      bytes(u.memoryWorkingSetBytes),
      u.memoryWorkingSetBytes !== undefined && memCap ? u.memoryWorkingSetBytes / memCap : undefined,
    ],
    [
      'ephemeral-storage',
      n.capacity['ephemeral-storage'],
      inUnitOf(n.allocatable['ephemeral-storage'], n.capacity['ephemeral-storage']),
      u.fsUsedBytes !== undefined ? `${bytes(u.fsUsedBytes)} of ${bytes(u.fsCapacityBytes)}` : '',
      u.fsUsedBytes !== undefined && u.fsCapacityBytes ? u.fsUsedBytes / u.fsCapacityBytes : undefined,
    ],
    ['images', '', '', bytes(u.imageFsUsedBytes), undefined],
    ['pods', n.capacity.pods, n.allocatable.pods, String(state.order.length), undefined],
  ];
  $('resources').tBodies[0].replaceChildren(
    ...rows.map(([name, cap, alloc, used, frac]) => {
      const usedCell = el('td', { text: used || '' });
      if (frac !== undefined) {
        const bar = el('span', { cls: 'bar' }, el('i'));
        bar.firstChild.style.width = `${Math.min(100, Math.max(0, frac * 100)).toFixed(0)}%`;
        usedCell.append(bar);
      }
      return el(
        'tr',
        null,
        el('td', { text: name }),
        el('td', { text: cap || '' }),
        el('td', { text: alloc || '' }),
        usedCell,
      );
    }),
  );
}

// Enough of resource.Quantity for capacity: plain numbers, milli, binary and decimal suffixes.
function parseQuantity(q) {
  if (!q) return undefined;
  const m = /^([0-9.]+)([a-zA-Z]*)$/.exec(q);
  if (!m) return undefined;
  const mult = {
    '': 1,
    m: 1e-3,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    Ki: 1024,
    Mi: 1024 ** 2,
    Gi: 1024 ** 3,
    Ti: 1024 ** 4,
  }[m[2]];
  return mult === undefined ? undefined : Number(m[1]) * mult;
}

// The Node object, as upstream's, carries capacity from cAdvisor in Ki and allocatable ephemeral
// storage as a plain byte count (capacity less the reservations): shown in capacity's unit, rounded
// down, so the two compare at a glance.
function inUnitOf(q, ref) {
  const suffix = /^[0-9.]+([a-zA-Z]*)$/.exec(ref || '')?.[1];
  const value = parseQuantity(q);
  const unit = suffix === undefined ? undefined : parseQuantity(`1${suffix}`);
  if (value === undefined || unit === undefined || /^[0-9.]+([a-zA-Z]*)$/.exec(q)[1] === suffix) return q;
  return `${Math.floor(value / unit)}${suffix}`;
}

// ---- pods -------------------------------------------------------------------------------------

function containerChip(c) {
  const done =
    c.state === 'Terminated' &&
    c.kind === 'init' &&
    c.lastTermination === undefined &&
    c.reason === 'Completed';
  const label = `${c.kind === 'app' ? '' : `${c.kind}:`}${c.name}`;
  const title = [c.state, c.reason, c.message].filter(Boolean).join(' · ');
  return el('span', { cls: 'ctr', title }, el('span', { cls: `dot ${done ? 'done' : c.state}` }), label);
}

function backoffText(p) {
  if (p.backoffUntilMs === undefined) return '';
  const left = p.backoffUntilMs - Date.now();
  return left > 0 ? `${Math.ceil(left / 1000)}s` : '';
}

function restartsText(p) {
  if (!p.restarts || p.lastRestartMs === undefined) return String(p.restarts);
  return `${p.restarts} (${ago(p.lastRestartMs)} ago)`;
}

function podRow(p) {
  const key = `${p.namespace}/${p.name}`;
  const row = el(
    'tr',
    { data: { pod: key, uid: p.uid } },
    el('td', { text: p.namespace }),
    el('td', { cls: 'name', text: p.name }),
    el('td', { cls: 'ready', text: p.ready }),
    el('td', { cls: `status ${statusClass(p.status)}`, text: p.status, data: { phase: p.phase } }),
    el('td', { cls: 'restarts', text: restartsText(p) }),
    el('td', { cls: 'backoff', text: backoffText(p) }),
    el('td', { cls: 'ip', text: p.ip || '' }),
    el('td', { cls: 'age', text: ago(p.createdMs) }),
    el('td', { cls: 'source', text: p.source }),
    el('td', { cls: 'containers' }, ...p.containers.map(containerChip)),
  );
  if (state.selected === key) row.classList.add('selected');
  row.addEventListener('click', () => selectPod(p.namespace, p.name));
  return row;
}

function drawPods() {
  const body = $('pod-table').tBodies[0];
  const rows = new Map([...body.rows].map((r) => [r.dataset.uid, r]));
  const wanted = state.order.map((uid) => state.pods.get(uid)).filter(Boolean);
  const fresh = wanted.map((p) => {
    const old = rows.get(p.uid);
    return old && old.podView === p ? old : Object.assign(podRow(p), { podView: p });
  });
  body.replaceChildren(...fresh);
  $('pod-count').textContent = `(${wanted.length})`;
}

// ---- events and pulls -------------------------------------------------------------------------

function objectName(e) {
  const o = e.involvedObject || {};
  return `${(o.kind || '').toLowerCase()}/${o.name || ''}`;
}

function eventRow(e) {
  const last = Date.parse(e.lastTimestamp || e.firstTimestamp || '');
  const seen =
    e.count > 1 ? `${ago(last)} (x${e.count} over ${ago(Date.parse(e.firstTimestamp))})` : ago(last);
  return el(
    'tr',
    { data: { event: e.metadata.name } },
    el('td', { cls: 'age', text: seen }),
    el('td', { cls: `type-${e.type}`, text: e.type }),
    el('td', { text: e.reason }),
    el('td', { text: objectName(e) }),
    el('td', { cls: 'message', text: e.message }),
  );
}

function drawEvents() {
  $('event-table').tBodies[0].replaceChildren(...state.events.map(eventRow));
  $('event-count').textContent = `(${state.events.length})`;
}

function drawPulls() {
  const p = state.pulls;
  const body = $('pulls-body');
  if (!p.available) {
    body.replaceChildren(el('p', { cls: 'muted', text: 'Pull progress is not reported by this kubelet.' }));
    return;
  }
  const inFlight = p.inFlight.map((x) => {
    const frac = x.bytesTotal > 0 ? x.bytesDone / x.bytesTotal : 0;
    const bar = el('span', { cls: 'bar' }, el('i'));
    bar.firstChild.style.width = `${(frac * 100).toFixed(0)}%`;
    return el(
      'tr',
      null,
      el('td', { text: x.image }),
      el('td', { text: `${bytes(x.bytesDone)} / ${x.bytesTotal ? bytes(x.bytesTotal) : '?'}` }, bar),
      el('td', { text: `${ago(x.startedAt)}` }),
    );
  });
  const recent = p.recent.map((x) =>
    el(
      'tr',
      null,
      el('td', { text: x.image }),
      el('td', { text: bytes(x.bytes) }),
      el('td', { text: `${(x.durationMs / 1000).toFixed(1)}s, ${ago(x.at)} ago` }),
    ),
  );
  body.replaceChildren(
    el('h3', { text: 'In progress' }),
    inFlight.length
      ? el('table', null, el('tbody', null, ...inFlight))
      : el('p', { cls: 'muted', text: 'none' }),
    el('h3', { text: 'Recent' }),
    recent.length ? el('table', null, el('tbody', null, ...recent)) : el('p', { cls: 'muted', text: 'none' }),
  );
}

// ---- one pod ------------------------------------------------------------------------------------

async function fetchText(url) {
  const r = await apiFetch(url);
  const text = await r.text();
  return r.ok ? text : `(${r.status}) ${text}`;
}

function containerCard(c) {
  const dl = el('dl');
  const add = (k, v) => {
    if (v === undefined || v === '') return;
    dl.append(el('dt', { text: k }), el('dd', { text: v }));
  };
  add('image', c.image);
  add(
    'state',
    [c.state, c.reason].filter(Boolean).join(': ') + (c.sinceMs ? ` (${ago(c.sinceMs)} ago)` : ''),
  );
  add('message', c.message);
  add('ready', String(c.ready));
  add('restarts', String(c.restartCount));
  if (c.backoffUntilMs)
    add('back-off', `${Math.max(0, Math.ceil((c.backoffUntilMs - Date.now()) / 1000))}s left`);
  if (c.lastTermination) {
    const t = c.lastTermination;
    add(
      'last termination',
      `exit ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}${t.finishedAtMs ? `, ${ago(t.finishedAtMs)} ago` : ''}`,
    );
  }
  for (const p of c.probes)
    add(
      `${p.kind} probe`,
      `${p.lastResult || 'not run yet'}${p.failures ? `, ${p.failures} failures in a row` : ''}`,
    );
  return el(
    'div',
    { cls: 'container-card', data: { container: c.name } },
    el('strong', { text: `${c.kind === 'app' ? '' : `${c.kind} `}${c.name}` }),
    dl,
  );
}

let detailSerial = 0;
async function drawDetail() {
  const key = state.selected;
  const section = $('detail');
  if (!key) {
    section.hidden = true;
    return;
  }
  const serial = ++detailSerial;
  const [namespace, name] = key.split('/');
  const view = [...state.pods.values()].find((p) => p.namespace === namespace && p.name === name);
  section.hidden = false;
  $('detail-name').textContent = key;
  $('detail-containers').replaceChildren(...(view ? view.containers.map(containerCard) : []));
  const base = `${API}/pods/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
  const r = await apiFetch(base);
  if (serial !== detailSerial) return;
  if (!r.ok) {
    $('detail-spec').textContent = await r.text();
    return;
  }
  const { pod, events } = await r.json();
  if (serial !== detailSerial) return;
  $('detail-spec').textContent = JSON.stringify({ metadata: pod.metadata, spec: pod.spec }, null, 2);
  $('detail-events').tBodies[0].replaceChildren(...events.map(eventRow));
  const names = [...(pod.spec.initContainers || []), ...pod.spec.containers].map((c) => c.name);
  const logs = await Promise.all(
    names.map((c) =>
      fetchText(
        `${API}/logs/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/${encodeURIComponent(c)}?tailLines=50`,
      ),
    ),
  );
  if (serial !== detailSerial) return;
  $('detail-logs').replaceChildren(
    ...names.map((c, i) =>
      el(
        'div',
        { data: { log: c } },
        el('strong', { text: c }),
        el('pre', { cls: 'log', text: logs[i] || '(empty)' }),
      ),
    ),
  );
}

function selectPod(namespace, name) {
  state.selected = `${namespace}/${name}`;
  for (const r of $('pod-table').tBodies[0].rows)
    r.classList.toggle('selected', r.dataset.pod === state.selected);
  void drawDetail();
}

// ---- the feed -----------------------------------------------------------------------------------

function applySnapshot(s) {
  state.node = s.node;
  state.pods = new Map(s.pods.map((p) => [p.uid, p]));
  state.order = s.pods.map((p) => p.uid);
  state.events = s.events;
  state.pulls = s.pulls;
  drawAll();
}

function applyDelta(d) {
  if (d.node) state.node = d.node;
  for (const p of d.pods || []) state.pods.set(p.uid, p);
  for (const uid of d.removed || []) state.pods.delete(uid);
  if (d.order) state.order = d.order;
  if (d.events) {
    const names = new Set(d.events.map((e) => e.metadata.name));
    state.events = [...d.events, ...state.events.filter((e) => !names.has(e.metadata.name))].slice(
      0,
      MAX_EVENTS,
    );
    drawEvents();
  }
  if (d.pulls) {
    state.pulls = d.pulls;
    drawPulls();
  }
  if (d.node || d.order) drawNode();
  if (d.pods || d.removed || d.order) drawPods();
  if (state.selected && (d.pods || []).some((p) => `${p.namespace}/${p.name}` === state.selected))
    void drawDetail();
}

function drawAll() {
  drawNode();
  drawPods();
  drawEvents();
  drawPulls();
}

// Ages and countdowns move with the clock, not with the feed.
function tick() {
  for (const r of $('pod-table').tBodies[0].rows) {
    const p = r.podView;
    if (!p) continue;
    r.querySelector('.age').textContent = ago(p.createdMs);
    r.querySelector('.backoff').textContent = backoffText(p);
    r.querySelector('.restarts').textContent = restartsText(p);
  }
  const up = document.querySelector('[data-tick="uptime"]');
  if (up && state.node) up.textContent = `up ${ago(state.node.startedAtMs)}`;
}

function badge(text, cls) {
  const conn = $('conn');
  conn.textContent = text;
  conn.className = `badge ${cls}`;
}

// Server-sent events read through fetch (EventSource cannot send the token): blocks split by a
// blank line, each with its `event:` and `data:` lines.
async function readFeed(signal) {
  const r = await apiFetch(`${API}/stream`, { signal });
  if (r.status === 401) {
    localStorage.removeItem(TOKEN_KEY);
    badge('locked: as root, open the address `tskubelet node-page-url` prints', 'warn');
    return false;
  }
  if (!r.ok || !r.body) throw new Error(`HTTP ${r.status}`);
  badge('live', 'ok');
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return true;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (event === 'snapshot') applySnapshot(JSON.parse(data));
      else if (event === 'delta') applyDelta(JSON.parse(data));
    }
  }
}

async function connect() {
  for (;;) {
    try {
      if (!(await readFeed())) return;
    } catch {
      // The kubelet restarted or the connection dropped: try again shortly.
    }
    badge('reconnecting', 'warn');
    await new Promise((r) => setTimeout(r, RETRY_MS));
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('detail-close').addEventListener('click', () => {
    state.selected = undefined;
    for (const r of $('pod-table').tBodies[0].rows) r.classList.remove('selected');
    void drawDetail();
  });
  void connect();
  setInterval(tick, 1000);
});
