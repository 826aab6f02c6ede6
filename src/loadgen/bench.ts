// The bench engine behind `seckill bench` and `seckill demo`: one run is a sale against a running
// deployment, told as a story: take (or create) a voucher → drive the buyers → wait until every
// order is stored → ask the deployment to audit both stores → optionally pay some orders and let
// the rest expire → judge. `compare` runs the same buyers against each kind of voucher; a queued
// drop (queue-drop.ts) drives its buyers through the same `sell`.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Credentials } from './credentials.js';
import { Deployment, type VoucherAudit, type VoucherKind, type VoucherView } from './deployment.js';
import { driveLoad, type LoadWindow } from './driver.js';
import { type LatencySummary } from './histogram.js';
import { type CpuWindow, measureCpu } from './machine.js';
import { type MonitorSample, VoucherMonitor } from './monitor.js';
import { buyersPay, type PaymentReport, payAndLetExpire } from './payments.js';
import { stripePayments } from './stripe-payments.js';
import { RequestPlan } from './plan.js';
import type { DrawVerdict } from '../queue/verify.js';
import { ProgressLine } from './progress.js';
import { SaleRecorder, type ClientCounts } from './recorder.js';
import type { TimelinePoint } from './timeline.js';
import { type Baseline, judge, type Verdict } from './verdict.js';

export const KINDS: VoucherKind[] = ['seckill', 'limited', 'common'];

export interface BenchOptions {
  /** Base URL of the deployment (http://host:port, optionally with a path prefix). */
  url: string;
  credentials: Credentials;
  /** Use this voucher instead of creating one (the bench should be its only buyer). */
  voucherId?: string;
  /** The voucher the bench creates. */
  kind: VoucherKind;
  stock: number;
  paymentTimeoutSeconds: number;
  /** Share of buyers (0..1) who repeat their request, and of repeats that reuse their first key. */
  repeatShare: number;
  sameKeyShare: number;
  seed: number;
  connections: number;
  /** Stop after this many requests and/or seconds; neither: every buyer once and every repeater once more. */
  requests?: number;
  seconds?: number;
  requestTimeoutMs: number;
  /** Share of the orders (0..1) paid after the sale; the others are left to expire. */
  payShare: number;
  /** Price of the voucher the bench creates, in minor units (default 0: a free claim). */
  price?: number;
  /**
   * Set: the shop pays, through the Stripe webhook signed with this secret (the deployment's
   * STRIPE_WEBHOOK_SECRET), and one payment arrives after its order expired. Unset: the buyers pay.
   */
  stripeSecret?: string;
  drainTimeoutMs: number;
  /** Where the live progress line goes (null: none). */
  progress: NodeJS.WriteStream | null;
  /** Aborting stops the load early; the run still drains, audits and judges. */
  signal?: AbortSignal;
}

/** A queued drop's own figures (queue-drop.ts). */
export interface QueueFigures {
  beginAt: string;
  /** Seconds from the first join sent until beginAt. */
  prequeueS: number;
  /** Buyers in the pre-queue, and joined after the start (placed after the drawn ones). */
  entrants: number;
  appended: number;
  /** Places the draw admitted, and all admitted when the standings were read. */
  drawAdmitted: number;
  admitted: number;
  /** From beginAt: entrants ranked (drawnAt), first places seen admitted, seed seen, every admitted order stored. */
  sortedAfterMs: number;
  admittedAfterMs: number | null;
  publishedAfterMs: number;
  storedAfterMs: number | null;
  /** Every buyer's read of their standing after the draw. */
  standings: BenchRun['load'];
  /** The draw re-checked from the public routes (`seckill draw verify`). */
  draw: DrawVerdict;
}

export interface BenchRun {
  kind: VoucherKind;
  voucherId: string;
  url: string;
  setup: {
    buyers: number;
    connections: number;
    requests: number | null;
    seconds: number | null;
    repeatShare: number;
    sameKeyShare: number;
    seed: number;
    stock: number;
    perUserLimit: number;
    paymentTimeoutSeconds: number;
    payShare: number;
  };
  load: {
    sent: number;
    seconds: number;
    /** Answers per second over the load window. */
    throughput: number;
    latency: LatencySummary;
    /** Answers by status and code, plus requests with no answer. */
    outcomes: Record<string, number>;
    cpu: CpuWindow;
  };
  client: ClientCounts;
  sale: {
    availableAtStart: number;
    /** limited and common claims store the order before they answer: no drain to measure. */
    storedBeforeAnswer: boolean;
    /** Seconds from the last order handed out until all were stored; null: not drained in time. */
    drainLagS: number | null;
  };
  audit: VoucherAudit;
  payments: (PaymentReport & { audit: VoucherAudit }) | null;
  /** A queued drop's draw (load: the joins; client: the buyers' standings after the draw). */
  queue: QueueFigures | null;
  verdict: Verdict;
  charts: {
    timeline: TimelinePoint[];
    stock: MonitorSample[];
    distribution: { percentile: number; ms: number }[];
  };
}

async function voucherFor(deployment: Deployment, o: BenchOptions): Promise<VoucherView> {
  if (!o.voucherId) return deployment.createVoucher({ kind: o.kind, stock: o.stock, paymentTimeoutSeconds: o.paymentTimeoutSeconds, price: o.price });
  const voucher = await deployment.voucher(o.voucherId);
  // Its claims would all be refused (QUEUE_REQUIRED): buyers join its queue instead.
  if (voucher.queue) throw new Error(`voucher ${voucher.id} is a queue voucher: bench it with --queue`);
  return voucher;
}

/** The voucher route every buyer calls, once or more (the plan), and its name on the progress line. */
export interface BuyerRoute {
  /** Under /api/vouchers/:id/. */
  path: 'orders' | 'queue' | 'queue/me';
  method: 'POST' | 'GET';
  label: string;
}

export interface Sale {
  recorder: SaleRecorder;
  monitor: VoucherMonitor;
  window: LoadWindow;
  cpu: CpuWindow;
  /** The request bound actually used (the default when neither --requests nor --duration). */
  requests: number | undefined;
  drainLagMs: number | null;
}

/** The load, with the live progress line, then the wait until every admitted order is stored. */
export async function sell(
  deployment: Deployment,
  voucher: VoucherView,
  o: BenchOptions,
  route: BuyerRoute = { path: 'orders', method: 'POST', label: voucher.kind },
): Promise<Sale> {
  const plan = new RequestPlan({
    buyers: o.credentials.buyers.length,
    repeatShare: o.repeatShare,
    sameKeyShare: o.sameKeyShare,
    seed: o.seed,
    keyTag: randomBytes(6).toString('base64url'),
  });
  const requests = o.requests ?? (o.seconds === undefined ? plan.onePass : undefined);
  const recorder = new SaleRecorder(performance.now());
  const monitor = new VoucherMonitor(deployment, voucher.id, recorder.startedAt, () => recorder.lastOrderAt);
  const progress =
    o.progress &&
    new ProgressLine(o.progress, route.label, { requests, seconds: o.seconds }, () => ({
      answered: recorder.latency.count,
      orders: recorder.orderIds.length,
      available: monitor.latest?.available,
      inFlight: monitor.latest?.inFlight,
      failing: monitor.failing?.message,
    }));
  const cpu = measureCpu();
  monitor.start();
  progress?.start();
  const window = await driveLoad(
    {
      origin: new URL(o.url).origin,
      path: deployment.path(`/api/vouchers/${voucher.id}/${route.path}`),
      method: route.method,
      connections: o.connections,
      requests,
      seconds: o.seconds,
      timeoutMs: o.requestTimeoutMs,
      signal: o.signal,
    },
    plan,
    o.credentials,
    recorder,
  );
  const cpuWindow = cpu(window.sent);
  progress?.stop();
  await monitor.stop();
  return { recorder, monitor, window, cpu: cpuWindow, requests, drainLagMs: await monitor.drainLag(o.drainTimeoutMs) };
}

/** Buyers pay a share of the orders, the rest expire; then both stores are audited again. */
async function payAndAudit(deployment: Deployment, voucher: VoucherView, recorder: SaleRecorder, o: BenchOptions): Promise<NonNullable<BenchRun['payments']>> {
  o.progress?.write(
    `${o.stripeSecret ? 'the shop confirms through the Stripe webhook' : 'buyers pay'} ${Math.round(o.payShare * 100)}% of ${recorder.orderIds.length} orders, then waiting for the others to expire (payment window ${voucher.paymentTimeoutSeconds} s)…\n`,
  );
  const report = await payAndLetExpire(deployment, voucher.id, voucher.paymentTimeoutSeconds, {
    orderIds: recorder.orderIds,
    share: o.payShare,
    payer: o.stripeSecret
      ? stripePayments(deployment, o.stripeSecret)
      : buyersPay(deployment, (orderId) => o.credentials.buyers[recorder.buyerOf.get(orderId)!]!),
  });
  return { ...report, audit: await deployment.audit(voucher.id, recorder.orderIds) };
}

export function setupOf(o: BenchOptions, voucher: VoucherView, requests: number | undefined): BenchRun['setup'] {
  return {
    buyers: o.credentials.buyers.length,
    connections: o.connections,
    requests: requests ?? null,
    seconds: o.seconds ?? null,
    repeatShare: o.repeatShare,
    sameKeyShare: o.sameKeyShare,
    seed: o.seed,
    stock: voucher.stock,
    perUserLimit: voucher.perUserLimit,
    paymentTimeoutSeconds: voucher.paymentTimeoutSeconds,
    payShare: o.payShare,
  };
}

/** The load's figures: answers, their rate, latencies and outcomes, the CPU spent. */
export function loadOf({ recorder, window, cpu }: Sale): BenchRun['load'] {
  const seconds = (window.endedAt - window.startedAt) / 1000;
  return {
    sent: window.sent,
    seconds,
    throughput: recorder.latency.count / seconds,
    latency: recorder.latency.summary(),
    outcomes: Object.fromEntries([...recorder.outcomes].sort((a, b) => b[1] - a[1])),
    cpu,
  };
}

export async function runBench(o: BenchOptions): Promise<BenchRun> {
  const deployment = new Deployment(o.url, o.credentials.admin);
  try {
    const voucher = await voucherFor(deployment, o);
    const baseline: Baseline = { available: voucher.available, stats: await deployment.stats(voucher.id) };
    const sale = await sell(deployment, voucher, o);
    const { recorder, monitor, window, requests, drainLagMs } = sale;
    const audit = await deployment.audit(voucher.id, recorder.orderIds);
    const payments = o.payShare > 0 ? await payAndAudit(deployment, voucher, recorder, o) : null;

    const client = recorder.counts(voucher.perUserLimit);
    return {
      kind: voucher.kind,
      voucherId: voucher.id,
      url: o.url,
      setup: setupOf(o, voucher, requests),
      load: loadOf(sale),
      client,
      sale: {
        availableAtStart: baseline.available,
        storedBeforeAnswer: voucher.kind !== 'seckill',
        drainLagS: drainLagMs === null ? null : drainLagMs / 1000,
      },
      audit,
      payments,
      queue: null,
      verdict: judge({ baseline, perUserLimit: voucher.perUserLimit, client, drainLagMs, audit, payments: payments ? { report: payments, audit: payments.audit } : undefined }),
      charts: { timeline: recorder.timeline.points(window.endedAt), stock: monitor.samples, distribution: recorder.latency.distribution() },
    };
  } finally {
    deployment.close();
  }
}

/** The same buyers and load against a fresh voucher of each kind, one after the other. */
export async function runCompare(o: Omit<BenchOptions, 'kind' | 'voucherId'>): Promise<BenchRun[]> {
  const runs: BenchRun[] = [];
  for (const kind of KINDS) {
    if (o.signal?.aborted) break;
    runs.push(await runBench({ ...o, kind }));
  }
  return runs;
}
