// The readable report of `seckill bench` (and the demo): one run, or the kinds side by side.
import type { BenchRun, QueueFigures } from './bench.js';
import { int, ms, seconds, share } from './format.js';
import type { MachineInfo } from './machine.js';

/** Labels in the first column; `figures: 'right'` right-aligns the other columns (counts), 'left' suits prose. */
function table(rows: string[][], figures: 'left' | 'right', indent = '  '): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const pad = (cell: string, c: number) => (c === 0 || figures === 'left' ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!));
  return rows.map((r) => indent + r.map(pad).join('   ').trimEnd());
}

export function setupLine(run: BenchRun): string {
  const s = run.setup;
  if (run.queue) {
    return (
      `${int(s.buyers)} buyers join the pre-queue once, ${s.connections} connections, drawn at ${run.queue.beginAt} ` +
      `(${run.queue.prequeueS.toFixed(1)} s after the first join); ${int(s.stock)} units, limit ${s.perUserLimit} per buyer`
    );
  }
  const until = [s.requests !== null ? `${int(s.requests)} requests` : null, s.seconds !== null ? `${s.seconds} s` : null].filter(Boolean).join(' or ');
  return (
    `${int(s.buyers)} buyers (${share(s.repeatShare)} repeat, ${share(s.sameKeyShare)} of repeats with the same Idempotency-Key), ` +
    `${s.connections} connections, until ${until}; ${int(s.stock)} units, limit ${s.perUserLimit} per buyer`
  );
}

export function machineLine(m: MachineInfo): string {
  return `load generator: ${m.cpus} CPUs (${m.cpuModel}), ${m.memoryGiB} GiB, node ${m.node}`;
}

export function cpuLine(run: BenchRun): string {
  const c = run.load.cpu;
  const busy = c.machineBusyCores === null ? '' : ` · machine busy ${c.machineBusyCores.toFixed(2)} cores`;
  return `bench process ${c.clientUsPerRequest.toFixed(1)} µs CPU/request${busy} · load average ${c.loadAverage1m.toFixed(2)}`;
}

const latencyLine = (l: BenchRun['load']['latency']) =>
  `p50 ${ms(l.p50Ms)} · p90 ${ms(l.p90Ms)} · p99 ${ms(l.p99Ms)} · p99.9 ${ms(l.p999Ms)} · max ${ms(l.maxMs)} ms`;

const outcomeList = (outcomes: Record<string, number>) => Object.entries(outcomes).map(([k, n]) => `${k} ${int(n)}`).join(' · ');

export function verdictLines(run: BenchRun): string[] {
  const v = run.verdict;
  const lines = [
    `Verdict: ${v.ok ? 'PASS' : 'FAIL'} · oversold ${int(v.oversold)} · lost ${int(v.lost)} · duplicated ${int(v.duplicated)} · ` +
      `sold ${int(run.audit.sold)} of ${int(run.audit.initialStock)} (unsold ${int(v.unsold)})`,
  ];
  for (const c of v.checks) lines.push(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.ok ? '' : `: ${c.detail}`}`);
  return lines;
}

function drainLag(run: BenchRun): string {
  if (run.sale.storedBeforeAnswer) return `none: ${run.kind} claims store the order before they answer`;
  return run.sale.drainLagS === null
    ? 'orders still in flight at the drain timeout'
    : `${seconds(run.sale.drainLagS)} from the last order until every order was stored`;
}

/** Both stores of a voucher in one line. */
function stores(a: BenchRun['audit']): string {
  return `DB stock ${int(a.dbStock)} · Redis stock ${a.redisStock === null ? '-' : int(a.redisStock)} · orders: ${orderStatuses(a.orders)}`;
}

function orderStatuses(orders: Record<string, number>): string {
  return Object.entries(orders).filter(([, n]) => n > 0).map(([s, n]) => `${s} ${int(n)}`).join(' · ') || 'none';
}

const afterStart = (msAfter: number) => `${int(msAfter)} ms after beginAt`;

/** A queued drop's draw, as the bench saw it (text and HTML reports). */
export function drawRows(run: BenchRun, q: QueueFigures): string[][] {
  const s = q.standings;
  return [
    ['entrants', `${int(q.entrants)} in the pre-queue${q.appended ? `, ${int(q.appended)} joined after the start (a longer --draw-in keeps them in it)` : ''}`],
    ['ranked', `${afterStart(q.sortedAfterMs)} (drawnAt)`],
    ['first places admitted', q.admittedAfterMs === null ? 'none due' : `${int(q.drawAdmitted)}, seen ${afterStart(q.admittedAfterMs)}`],
    ['published', `seed public, seen ${afterStart(q.publishedAfterMs)}`],
    ['stored', q.storedAfterMs === null ? 'orders still in flight at the drain timeout' : `every admitted order, seen ${afterStart(q.storedAfterMs)}`],
    ['standings read', `${int(s.sent)} in ${s.seconds.toFixed(2)} s (${int(s.throughput)}/s): ${outcomeList(s.outcomes)}`],
    ['standing latency', latencyLine(s.latency)],
    ['admitted', `${int(run.client.orders)} buyers told their order, ${int(q.admitted)} places admitted`],
  ];
}

/** The load's figures and its answers by outcome; `what` names the requests (requests, joins). */
function loadLines(run: BenchRun, title: string, what: 'requests' | 'joins'): string[] {
  const l = run.load;
  return [
    title,
    ...table([
      [what, `${int(l.sent)} in ${l.seconds.toFixed(2)} s`],
      ['throughput', `${int(l.throughput)} ${what === 'joins' ? 'joins' : 'answers'}/s`],
      ['latency', latencyLine(l.latency)],
      ['CPU', cpuLine(run)],
    ], 'left'),
    '',
    'Answers',
    ...table(Object.entries(l.outcomes).map(([k, n]) => [k, int(n)]), 'right'),
  ];
}

function queueText(run: BenchRun, q: QueueFigures): string {
  return [
    `seckill bench --queue · queue voucher ${run.voucherId} at ${run.url}`,
    setupLine(run),
    '',
    ...loadLines(run, 'Joins', 'joins'),
    '',
    'Draw',
    ...table([...drawRows(run, q), ['stores', stores(run.audit)]], 'left'),
    '',
    ...verdictLines(run),
  ].join('\n');
}

export function runText(run: BenchRun): string {
  if (run.queue) return queueText(run, run.queue);
  const lines = [
    `seckill bench · ${run.kind} voucher ${run.voucherId} at ${run.url}`,
    setupLine(run),
    '',
    ...loadLines(run, 'Load', 'requests'),
    '',
    'Sale',
    ...table([
      ['orders handed out', `${int(run.client.orders)} (of ${int(run.sale.availableAtStart)} units available at the start)`],
      ['same order again', `${int(run.client.replays)} (retries with the first Idempotency-Key)`],
      ['drain lag', drainLag(run)],
      ['stores', stores(run.audit)],
    ], 'left'),
  ];
  if (run.payments) {
    const p = run.payments;
    const expiry = p.waitedForExpiry
      ? `the rest expired ${seconds(p.expiredAfterS)} after the last payment`
      : `the rest expire after their ${run.setup.paymentTimeoutSeconds} s window (not waited for)`;
    lines.push(
      '',
      'Payments',
      ...table([
        ['paid', `${int(p.paid)} of ${int(p.attempted)} tried: ${outcomeList(p.outcomes)}`],
        ['expiry', expiry],
        ...(p.late ? [['late payment', `order ${p.late.orderId}: ${p.late.keptAsRefundDue ? 'kept as refund_due, the order still expired' : 'NOT kept as refund_due'}`]] : []),
        ['stores after', stores(p.audit)],
      ], 'left'),
    );
  }
  lines.push('', ...verdictLines(run));
  return lines.join('\n');
}

/** The kinds side by side: one row per figure, one column per run (text and HTML reports). */
export function compareRows(runs: BenchRun[]): string[][] {
  const col = (f: (r: BenchRun) => string) => runs.map(f);
  const outcomeKeys = [...new Set(runs.flatMap((r) => Object.keys(r.load.outcomes)))];
  return [
    ['', ...col((r) => r.kind)],
    ['voucher', ...col((r) => r.voucherId)],
    ['requests', ...col((r) => int(r.load.sent))],
    ['seconds', ...col((r) => r.load.seconds.toFixed(2))],
    ['answers/s', ...col((r) => int(r.load.throughput))],
    ['p50 ms', ...col((r) => ms(r.load.latency.p50Ms))],
    ['p90 ms', ...col((r) => ms(r.load.latency.p90Ms))],
    ['p99 ms', ...col((r) => ms(r.load.latency.p99Ms))],
    ['p99.9 ms', ...col((r) => ms(r.load.latency.p999Ms))],
    ['max ms', ...col((r) => ms(r.load.latency.maxMs))],
    ...outcomeKeys.map((k) => [k, ...col((r) => int(r.load.outcomes[k] ?? 0))]),
    ['orders handed out', ...col((r) => int(r.client.orders))],
    ['sold (database)', ...col((r) => int(r.audit.sold))],
    ['drain lag', ...col((r) => (r.sale.storedBeforeAnswer ? 'none (sync)' : seconds(r.sale.drainLagS)))],
    ['bench µs CPU/request', ...col((r) => r.load.cpu.clientUsPerRequest.toFixed(1))],
    ['machine busy cores', ...col((r) => r.load.cpu.machineBusyCores?.toFixed(2) ?? '-')],
    ['oversold/lost/dup.', ...col((r) => `${r.verdict.oversold}/${r.verdict.lost}/${r.verdict.duplicated}`)],
    ['verdict', ...col((r) => (r.verdict.ok ? 'PASS' : 'FAIL'))],
  ];
}

export function compareText(runs: BenchRun[]): string {
  const lines = [`seckill bench --compare at ${runs[0]?.url ?? ''}`, runs[0] ? setupLine(runs[0]) : '', '', ...table(compareRows(runs), 'right', '')];
  for (const run of runs.filter((r) => !r.verdict.ok)) lines.push('', `${run.kind}:`, ...verdictLines(run));
  return lines.join('\n');
}
