// `seckill bench --queue`: a queued drop against a running deployment, told as a story: take (or
// create) a queue voucher → every buyer joins its pre-queue once (the claims' driver, latencies and
// progress line) → watch the draw at beginAt → every buyer reads their standing, which names the
// order of each admitted one → ask the deployment to audit both stores (with I7: admitted in queue
// order) → re-check the draw from what was published → judge, as a claim run is judged.
import { setTimeout as sleep } from 'node:timers/promises';
import { readPublishedDraw, verifyDraw } from '../queue/verify.js';
import { type BenchOptions, type BenchRun, loadOf, type QueueFigures, sell, setupOf } from './bench.js';
import { Deployment, type VoucherView } from './deployment.js';
import { watchDraw } from './draw-watch.js';
import { type Baseline, judge } from './verdict.js';

export interface QueueBenchOptions extends Omit<BenchOptions, 'kind' | 'repeatShare' | 'sameKeyShare' | 'requests' | 'seconds' | 'payShare'> {
  /** Seconds from the voucher's creation to its draw (default: drawInFor the buyers); not with voucherId. */
  drawInSeconds?: number;
}

/**
 * The default pre-queue: joins at under half the rate measured on a busy 2-core box (20,000
 * joins at 2,250/s against one API process, load average 16, the first seconds slower), and
 * never under the draw's own lead (it ranks the entrants 2 s before beginAt, after a look that
 * comes once a second).
 */
const ASSUMED_JOINS_PER_S = 1_000;
const MIN_DRAW_IN_S = 4;

const drawInFor = (buyers: number): number => Math.max(MIN_DRAW_IN_S, Math.ceil(buyers / ASSUMED_JOINS_PER_S) + 2);

const JOIN = { path: 'queue', method: 'POST', label: 'queue join' } as const;
const STANDING = { path: 'queue/me', method: 'GET', label: 'queue/me' } as const;

async function queueVoucherFor(deployment: Deployment, o: QueueBenchOptions): Promise<VoucherView> {
  if (!o.voucherId) {
    const drawIn = o.drawInSeconds ?? drawInFor(o.credentials.buyers.length);
    return deployment.createVoucher({ kind: 'seckill', stock: o.stock, paymentTimeoutSeconds: o.paymentTimeoutSeconds, queuedUntil: new Date(Date.now() + drawIn * 1000) });
  }
  const voucher = await deployment.voucher(o.voucherId);
  if (!voucher.queue) throw new Error(`voucher ${voucher.id} is not a queue voucher: bench it without --queue`);
  if (Date.parse(voucher.beginAt) <= Date.now() || (await deployment.queueSummary(voucher.id)).drawnAt !== null) {
    throw new Error(`the pre-queue of voucher ${voucher.id} closed at its start (${voucher.beginAt}): --queue needs a queue voucher before its start`);
  }
  const opensInMs = Date.parse(voucher.queue.opensAt) - Date.now();
  if (opensInMs > 0) {
    o.progress?.write(`the pre-queue of voucher ${voucher.id} opens in ${(opensInMs / 1000).toFixed(1)} s (${voucher.queue.opensAt}); waiting…\n`);
    await sleep(opensInMs);
  }
  return voucher;
}

export async function runQueueBench(o: QueueBenchOptions): Promise<BenchRun> {
  const deployment = new Deployment(o.url, o.credentials.admin);
  try {
    const voucher = await queueVoucherFor(deployment, o);
    const stats = await deployment.stats(voucher.id);
    const baseline: Baseline = { available: voucher.available, stats };
    const beginAtMs = Date.parse(voucher.beginAt);
    // Every buyer once, in a shuffled order: a second join only answers the same place.
    const once: BenchOptions = { ...o, kind: 'seckill', repeatShare: 0, sameKeyShare: 0, payShare: 0 };
    // Watched from its start even when the joins outlast the pre-queue.
    const drawn = watchDraw(deployment, {
      voucherId: voucher.id,
      beginAtMs,
      units: voucher.available,
      storedBefore: Object.values(stats.orders).reduce((a, b) => a + b, 0),
      timeoutMs: o.drainTimeoutMs,
    });
    drawn.catch(() => undefined); // awaited after the joins; not an unhandled rejection meanwhile
    const joinsFrom = Date.now();
    const joins = await sell(deployment, voucher, once, JOIN);
    if (Date.now() < beginAtMs) o.progress?.write(`waiting ${((beginAtMs - Date.now()) / 1000).toFixed(1)} s for the draw at ${voucher.beginAt}…\n`);
    const times = await drawn;
    // Read to the end even after Ctrl-C: the verdict needs every admitted buyer's order.
    const standings = await sell(deployment, voucher, { ...once, signal: undefined }, STANDING);
    const summary = await deployment.queueSummary(voucher.id);
    const audit = await deployment.audit(voucher.id, standings.recorder.orderIds);
    const draw = verifyDraw(await readPublishedDraw((route) => deployment.publicGet(route), voucher.id));

    const client = standings.recorder.counts(voucher.perUserLimit);
    // From the first places seen admitted (or the draw seen published) until all were stored.
    const drainLagMs = times.storedAfterMs === null ? null : Math.max(0, times.storedAfterMs - (times.admittedAfterMs ?? times.publishedAfterMs));
    return {
      kind: voucher.kind,
      voucherId: voucher.id,
      url: o.url,
      setup: setupOf(once, voucher, joins.requests),
      load: loadOf(joins),
      client,
      sale: { availableAtStart: baseline.available, storedBeforeAnswer: false, drainLagS: drainLagMs === null ? null : drainLagMs / 1000 },
      audit,
      payments: null,
      queue: {
        beginAt: voucher.beginAt,
        prequeueS: (beginAtMs - joinsFrom) / 1000,
        entrants: summary.entrants,
        appended: summary.appended,
        drawAdmitted: summary.drawAdmitted,
        admitted: summary.admitted,
        sortedAfterMs: times.sortedAfterMs,
        admittedAfterMs: times.admittedAfterMs,
        publishedAfterMs: times.publishedAfterMs,
        storedAfterMs: times.storedAfterMs,
        standings: loadOf(standings),
        draw,
      },
      verdict: judge({ baseline, perUserLimit: voucher.perUserLimit, client, drainLagMs, audit, queue: { draw, placesAdmitted: summary.admitted } }),
      charts: { timeline: joins.recorder.timeline.points(joins.window.endedAt), stock: joins.monitor.samples, distribution: joins.recorder.latency.distribution() },
    };
  } finally {
    deployment.close();
  }
}
