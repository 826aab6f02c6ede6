// The operator console: sign in with an admin token, list and create vouchers, and watch one
// voucher live over ONE server-sent-events stream (GET /api/vouchers/:id/live), as a table and
// as time-series charts.
import { createApi } from './lib/api.js';
import { createCharts } from './lib/charts.js';
import { byId, h, replace } from './lib/dom.js';
import { isId } from './lib/ids.js';
import { signInMessage, tokenStore, wireSignIn } from './lib/session.js';
import { openEvents } from './lib/sse.js';
import { phaseOf } from './lib/time.js';

const HINT = 'Mint an admin token with `seckill token --user 1 --admin` and paste it here.';
const session = tokenStore('seckill.console.token');
const api = createApi(session.get, (err) => signOut(signInMessage(err, HINT)));
/** @type {(() => void) | null} */
let stopLive = null;
/** The voucher on screen, the only one the actions may name. @type {string | null} */
let openId = null;
/** The open voucher's charts. @type {ReturnType<typeof createCharts> | null} */
let charts = null;
// What the charts draw, for the browser tests (test/web/console-charts.test.ts).
Object.assign(window, { consoleCharts: { series: () => charts?.shown().series ?? null, markers: () => charts?.shown().markers ?? null } });

function signOut(/** @type {string} */ message = '') {
  session.clear();
  stopLive?.();
  stopLive = null;
  openId = null;
  byId('app').hidden = true;
  byId('sign-out').hidden = true;
  byId('sign-in').hidden = false;
  byId('sign-in-message').textContent = message;
}

async function signIn(/** @type {string} */ token) {
  session.set(token);
  try {
    await loadVouchers();
  } catch (err) {
    // A 401 signed us out already (with its message); a 403 is a user's token.
    if (/** @type {any} */ (err).status !== 401) signOut(signInMessage(/** @type {any} */ (err), HINT));
    return;
  }
  byId('sign-in').hidden = true;
  byId('app').hidden = false;
  byId('sign-out').hidden = false;
  const linked = new URLSearchParams(location.hash.slice(1)).get('voucher');
  if (linked === null) return;
  if (isId(linked)) openVoucher(linked);
  else byId('link-message').textContent = `This link names no voucher ("${linked.slice(0, 40)}" is not a voucher id): ignored.`;
}

async function loadVouchers() {
  const { vouchers } = await api.get('/api/vouchers?limit=50');
  byId('vouchers-message').textContent = vouchers.length ? '' : 'No vouchers yet: create one below.';
  replace(
    byId('voucher-rows'),
    ...vouchers.map((/** @type {any} */ v) =>
      h('tr', { 'data-id': v.id },
        h('td', null, h('a', { href: `#voucher=${v.id}`, onclick: (/** @type {Event} */ e) => (e.preventDefault(), openVoucher(v.id)) }, v.id)),
        h('td', null, v.title), h('td', null, v.kind), h('td', null, v.stock), h('td', null, v.available), h('td', null, phaseOf(v).phase)),
    ),
  );
}

/** datetime-local value of a time. @param {Date} d */
const localInput = (d) => new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);

function resetCreateTimes() {
  const form = /** @type {HTMLFormElement} */ (byId('create-form'));
  /** @type {HTMLInputElement} */ (form.elements.namedItem('beginAt')).value = localInput(new Date());
  /** @type {HTMLInputElement} */ (form.elements.namedItem('endAt')).value = localInput(new Date(Date.now() + 3600_000));
}

async function createVoucher(/** @type {SubmitEvent} */ event) {
  event.preventDefault();
  const form = /** @type {HTMLFormElement} */ (event.target);
  const data = new FormData(form);
  const number = (/** @type {string} */ name) => (data.get(name) === '' ? undefined : Number(data.get(name)));
  const time = (/** @type {string} */ name) => {
    const t = new Date(String(data.get(name)));
    return Number.isNaN(t.getTime()) ? String(data.get(name)) : t.toISOString();
  };
  const body = {
    title: data.get('title'),
    kind: data.get('kind'),
    stock: number('stock'),
    perUserLimit: number('perUserLimit'),
    paymentTimeoutSeconds: number('paymentTimeoutSeconds'),
    beginAt: time('beginAt'),
    endAt: time('endAt'),
    ...(data.get('waitlist') ? { waitlist: true } : {}),
  };
  const message = byId('create-message');
  message.textContent = '';
  try {
    const voucher = await api.post('/api/vouchers', body);
    message.textContent = '';
    await loadVouchers();
    openVoucher(voucher.id);
  } catch (err) {
    // The API's own validation message (e.g. "body: /stock must be >= 1"), next to the form.
    message.textContent = `Not created: ${/** @type {any} */ (err).message}`;
  }
}

async function openVoucher(/** @type {string} */ id) {
  if (!isId(id)) return;
  stopLive?.();
  openId = id;
  byId('link-message').textContent = '';
  history.replaceState(null, '', `#voucher=${id}`);
  const panel = byId('voucher');
  panel.hidden = false;
  let voucher;
  try {
    voucher = await api.get(`/api/vouchers/${id}`);
  } catch (err) {
    byId('voucher-title').textContent = `Voucher ${id}`;
    byId('live-status').textContent = `Cannot open it: ${/** @type {any} */ (err).message}`;
    return;
  }
  byId('voucher-title').textContent = `${voucher.title} (${voucher.id})`;
  replace(
    byId('voucher-meta'),
    `${voucher.kind}, ${voucher.stock} units, ${new Date(voucher.beginAt).toLocaleString()} – ${new Date(voucher.endAt).toLocaleString()} · `,
    h('a', { href: `/store/${voucher.id}`, target: '_blank' }, 'buyer page'),
  );
  byId('audit-verdict').textContent = '';
  byId('action-result').textContent = '';
  byId('live-status').textContent = 'connecting…';
  const shown = createCharts(byId('charts'), voucher);
  charts = shown;
  /** A queue voucher's queue (the public GET /queue), read with each snapshot. @type {any} */
  let queue = null;
  const stopEvents = openEvents(`/api/vouchers/${id}/live`, session.get() ?? '', {
    async onEvent(type, data) {
      if (type === 'snapshot') {
        if (voucher.queue) queue = await api.get(`/api/vouchers/${id}/queue`).catch(() => queue);
        byId('live-status').textContent = `live · ${new Date(data.at).toLocaleTimeString()}`;
        shown.update(data);
        renderLive(data, voucher.queue ? queueLine(voucher, queue) : null);
        if (data.audit) renderVerdict(data.audit);
      } else if (type === 'error') {
        byId('live-status').textContent = `the last snapshot failed: ${data.message}`;
      }
    },
    onError(err, final) {
      if (final && err.status === 401) return signOut(signInMessage(err, HINT));
      byId('live-status').textContent = final ? `live view stopped: ${err.message}` : `reconnecting… (${err.message})`;
    },
  });
  stopLive = () => {
    stopEvents();
    shown.destroy();
    charts = null;
  };
}

/** A queue voucher's queue in one line: its size, the draw, and how far admissions got. @param {any} voucher @param {any} q */
function queueLine(voucher, q) {
  if (!q) return '…';
  const size = `${q.entrants} in the pre-queue${q.appended ? `, ${q.appended} joined since the start` : ''}`;
  const draw = q.seed ? `drawn ${new Date(q.drawnAt).toLocaleTimeString()}` : `draw at ${new Date(voucher.beginAt).toLocaleString()} (opened ${new Date(voucher.queue.opensAt).toLocaleString()})`;
  const progress = `${q.admitted} admitted (${q.drawAdmitted} by the draw)${q.closed ? ` · closed, ${q.closed} still waiting` : ''}`;
  return `${size} · ${draw} · ${progress}`;
}

/** @param {any} s @param {string | null} [queue] */
function renderLive(s, queue = null) {
  const { stats } = s;
  const row = (/** @type {string} */ name, /** @type {any} */ value, /** @type {string} */ key) => h('tr', { 'data-stat': key }, h('th', null, name), h('td', null, value ?? '—'));
  const outcomes = Object.entries(/** @type {Record<string, number>} */ (s.claimsPerSecond)).filter(([, n]) => n > 0);
  replace(
    byId('live'),
    h('table', { class: 'stats' },
      h('tbody', null,
        row('Redis stock', stats.redisStock, 'redisStock'),
        row('DB stock', stats.dbStock, 'dbStock'),
        row('Initial stock', stats.initialStock, 'initialStock'),
        row('In flight', stats.inFlight, 'inFlight'),
        row('Orders', Object.entries(stats.orders).map(([k, n]) => `${k} ${n}`).join(' · '), 'orders'),
        ...(queue === null ? [row('Waitlist', stats.waitlist, 'waitlist')] : [row('Queue', queue, 'queue'), row('Waiting places', stats.waitlist, 'waitlist')]),
        row('Dead letters', stats.deadLetters, 'deadLetters'),
        row('Refunds due', stats.refundDue, 'refundDue'),
        row('Admissions/s (this voucher)', s.admissionsPerSecond, 'admissionsPerSecond'),
        row('Claims/s (all vouchers)', outcomes.length ? outcomes.map(([k, n]) => `${k} ${n}`).join(' · ') : '0', 'claimsPerSecond'),
        row('Claim latency p50 / p99', latency(s.claimLatencyMs), 'claimLatency'),
        row('Pipeline lag', s.pipelineLagSeconds === null ? 'no pipeline in this process' : `${s.pipelineLagSeconds.toFixed(2)} s`, 'pipelineLag'),
        row('Last reconciliation', reconciliation(s.lastReconciliation), 'lastReconciliation'),
      ),
    ),
  );
}

/** "≤ 2 ms / ≤ 10 ms": the upper bounds of the histogram buckets that hold them. @param {{p50: number | null, p99: number | null}} l */
function latency(l) {
  if (!l || l.p50 === null) return 'no claims this second';
  const ms = (/** @type {number | null} */ v) => (v === null ? '> 1 s' : `≤ ${v} ms`);
  return `${ms(l.p50)} / ${ms(l.p99)}`;
}

/** @param {{at: string, verified: boolean, repaired: number, drift: string[]} | null} r */
function reconciliation(r) {
  if (!r) return 'none yet';
  const head = `${new Date(r.at).toLocaleTimeString()}: ${r.drift.length ? `${r.drift.length} drift(s), ${r.repaired} repaired` : 'no drift'}${r.verified ? '' : ' (not verified: the stores kept changing)'}`;
  return r.drift.length ? h('div', null, head, h('ul', null, ...r.drift.slice(0, 5).map((d) => h('li', null, d)))) : head;
}

/** @param {{ok: boolean, failed: {name: string, problem: string}[], at: string}} verdict */
function renderVerdict(verdict) {
  const el = byId('audit-verdict');
  el.className = verdict.ok ? 'ok' : 'error';
  el.textContent = verdict.ok
    ? `Audit OK (${new Date(verdict.at).toLocaleTimeString()})`
    : `Audit FAILED (${new Date(verdict.at).toLocaleTimeString()}): ${verdict.failed.map((f) => `${f.name}: ${f.problem}`).join('; ')}`;
}

async function runAction(/** @type {'audit' | 'reconcile'} */ action) {
  const id = openId;
  if (!id) return;
  const out = byId('action-result');
  out.textContent = `${action} running…`;
  try {
    const result = await api.post(`/api/vouchers/${id}/${action}`);
    if (action === 'audit') {
      renderVerdict({ ok: result.ok, at: new Date().toISOString(), failed: result.checks.filter((/** @type {any} */ c) => !c.ok).map((/** @type {any} */ c) => ({ name: c.name, problem: c.problems[0] ?? '' })) });
      out.textContent = '';
    } else {
      out.textContent = `Reconcile: ${result.verified ? 'verified' : 'not verified (Redis kept changing)'}, ${result.drift.length} drift, ${result.repaired} repaired` +
        result.drift.map((/** @type {any} */ d) => `\n- ${d.kind}: ${d.detail}${d.repaired ? ' (repaired)' : ''}`).join('');
    }
  } catch (err) {
    out.textContent = `${action} failed: ${/** @type {any} */ (err).message}`;
  }
}

wireSignIn(signIn, () => signOut());
byId('create-form').addEventListener('submit', (e) => void createVoucher(/** @type {SubmitEvent} */ (e)));
byId('run-audit').addEventListener('click', () => void runAction('audit'));
byId('run-reconcile').addEventListener('click', () => void runAction('reconcile'));
resetCreateTimes();
const saved = session.get();
if (saved) void signIn(saved);
else signOut();
