// The three ways of storing orders that the benchmark compares, plus the backlog they drain.
// Every scenario starts from empty orders/user_quantities tables (TRUNCATE), so none of them pays
// for the rows of another. The SQL is the same on MariaDB/MySQL and PostgreSQL but for the
// fragments of dialectOf(db).
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import amqp from 'amqplib';
import type { Container } from '../../src/container.js';
import type { Db } from '../../src/infra/db/database.js';
import { dialectOf } from '../../src/infra/db/dialect.js';
import { outboxBacklog } from '../../src/orders/event-outbox.js';
import { AdmitCode } from '../../src/infra/redis/scripts/admission.js';
import { OrderPipeline } from '../../src/pipeline/consumer.js';
import { CONSUMER_GROUP, ensureConsumerGroups } from '../../src/pipeline/maintenance.js';
import { isMalformed, parseEntry, type RawEntry } from '../../src/infra/redis/records.js';
import { type Breakdown, createBreakdown, type CpuSample, cpuMeter, type ProfileSummary, startProfile } from './probes.js';

const PAYMENT_TIMEOUT_S = 900;
/** Admissions in flight while pre-filling (ioredis auto-pipelining batches them). */
const FILL_CONCURRENCY = 5_000;
const POLL_MS = 20;
/** Give up when the backlog has not shrunk for this long. */
const STALL_MS = 60_000;

export interface Measured {
  orders: number;
  seconds: number;
  ordersPerSecond: number;
  cpu: CpuSample;
}

function measured(orders: number, ms: number, cpu: CpuSample): Measured {
  return { orders, seconds: Math.round(ms) / 1000, ordersPerSecond: Math.round((orders * 1000) / ms), cpu };
}

export async function resetTables(c: Container): Promise<void> {
  for (const table of ['orders', 'user_quantities', 'vouchers', 'order_events', 'voucher_order_counts']) await sql`truncate table ${sql.table(table)}`.execute(c.db);
}

/** The row the pipeline inserts for an accepted order (store-orders.ts), for `db`. */
function orderRow(db: Db, id: bigint, voucherId: bigint, userId: bigint, quantity: number, createdAt: Date) {
  return {
    id: id.toString(),
    voucher_id: voucherId.toString(),
    user_id: userId.toString(),
    quantity,
    status: 'pending_payment' as const,
    created_at: createdAt,
    failure_reason: null,
    expires_at: dialectOf(db).nowPlusSeconds(PAYMENT_TIMEOUT_S),
  };
}

// ---------------------------------------------------------------------------------------------
// Backlog

export interface Sale {
  vouchers: bigint[];
  /** Admissions per voucher. */
  counts: number[];
  /** DB and Redis stock of each voucher before the drain (admissions + slack). */
  initialStock: number[];
}

/**
 * Creates `voucherCount` seckill vouchers, voucher k on shard (k mod shards), and admits `total`
 * distinct users through the real admit script: the stream entries and in-flight records are
 * exactly those of a sale.
 */
export async function prefill(c: Container, idBase: bigint, voucherCount: number, total: number): Promise<Sale & { admitsPerSecond: number }> {
  const slack = 1_000;
  const vouchers = Array.from({ length: voucherCount }, (_, k) => idBase * BigInt(c.keys.shards) + BigInt(k));
  const counts = vouchers.map((_, k) => Math.floor(total / voucherCount) + (k < total % voucherCount ? 1 : 0));
  const initialStock = counts.map((n) => n + slack);
  const begin = new Date(Date.now() - 60_000);
  const end = new Date(Date.now() + 3_600_000);
  for (const [k, id] of vouchers.entries()) {
    const stock = initialStock[k]!;
    await c.db
      .insertInto('vouchers')
      .values({
        id: id.toString(), title: `bench drain ${k}`, kind: 'seckill', initial_stock: stock, stock,
        begin_at: begin, end_at: end, per_user_limit: 1, payment_timeout_seconds: PAYMENT_TIMEOUT_S,
        waitlist: false, claim_token: false,
      })
      .execute();
    await c.scripts.warm({
      voucherId: id, stock, beginMs: begin.getTime(), endMs: end.getTime(), perUserLimit: 1, inflight: 0,
      expireAtSeconds: Math.ceil(end.getTime() / 1000) + 3600, waitlistCap: 0,
    });
  }
  await ensureConsumerGroups(c.redis, c.keys);

  // Users are numbered across the sale, round-robin over the vouchers, like interleaved claims.
  const started = performance.now();
  for (let from = 0; from < total; from += FILL_CONCURRENCY) {
    const batch = Array.from({ length: Math.min(FILL_CONCURRENCY, total - from) }, (_, i) => from + i);
    const codes = await Promise.all(
      batch.map(async (i) => {
        const r = await c.scripts.admit({
          voucherId: vouchers[i % voucherCount]!,
          userId: 1_000_000n + BigInt(i),
          orderId: idBase * 1_000_000_000n + BigInt(i),
          quantity: 1,
        });
        return r.code;
      }),
    );
    const bad = codes.find((code) => code !== AdmitCode.ADMITTED);
    if (bad !== undefined) throw new Error(`pre-fill: admit returned code ${bad}`);
  }
  const ms = performance.now() - started;
  return { vouchers, counts, initialStock, admitsPerSecond: Math.round((total * 1000) / ms) };
}

async function inflightLeft(c: Container): Promise<number> {
  const lens = await Promise.all(Array.from({ length: c.keys.shards }, (_, s) => c.redis.hlen(c.keys.inflight(s))));
  return lens.reduce((a, b) => a + b, 0);
}

// ---------------------------------------------------------------------------------------------
// Our pipeline

/** Worker processes (--workers N) are started and connected before the clock starts. */
const WORKER_SCRIPT = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** Starts worker processes on the container's configuration; resolves once all are connected. */
async function spawnWorkers(c: Container, count: number): Promise<ChildProcess[]> {
  const cfg = c.config;
  const children = Array.from({ length: count }, (_, i) =>
    spawn(process.execPath, ['--import', 'tsx', WORKER_SCRIPT], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: {
        ...process.env,
        REDIS_URL: cfg.redisUrl,
        DATABASE_URL: cfg.databaseUrl,
        REDIS_PREFIX: cfg.redisPrefix,
        SHARDS: String(cfg.shards),
        PIPELINE_LANES: String(cfg.pipelineLanes),
        PIPELINE_BATCH: String(cfg.pipelineBatch),
        CONSUMER_NAME: `bench-drain-${process.pid}-w${i}`,
        LOG_LEVEL: 'warn',
      },
    }),
  );
  await Promise.all(
    children.map(
      (w) =>
        new Promise<void>((resolve, reject) => {
          w.once('message', () => resolve());
          w.once('exit', (code) => reject(new Error(`drain worker exited with ${code} before it was ready`)));
        }),
    ),
  );
  return children;
}

async function stopWorkers(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map((w) => {
      if (w.exitCode !== null) return Promise.resolve();
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.send('stop');
      return exited;
    }),
  );
}


export interface PipelineResult extends Measured {
  breakdown?: Record<string, { ms: number; count: number }>;
  /** Lane time: busy lanes × wall time, the denominator of the breakdown. */
  laneMs?: number;
  profile?: ProfileSummary;
  /** Batches retried after a transient database error (deadlocks); null with worker processes. */
  retries: number | null;
}

export interface DrainOptions {
  /** 0: the pipeline runs in this process; N: in N worker processes (worker.ts). */
  workers: number;
  breakdown: boolean;
  /** Run the payment timer (expiry sweeps, release relay) in this process while draining. */
  timer?: boolean;
  /** Write a CPU profile of the drain window here. */
  profileFile?: string;
}

/**
 * Starts the pipeline on the pre-filled backlog and times it until no in-flight record is left
 * (every order stored, acknowledged and settled). With `breakdown`, the
 * pipeline is started on an instrumented database handle of our own instead of through the
 * container (same options otherwise).
 */
export async function drainWithPipeline(c: Container, sale: Sale, opts: DrainOptions): Promise<PipelineResult> {
  const total = sale.counts.reduce((a, b) => a + b, 0);
  let probe: Breakdown | null = null;
  let pipeline: { close(): Promise<void> };
  const children = opts.workers > 0 ? await spawnWorkers(c, opts.workers) : [];
  const stopProfile = opts.profileFile ? await startProfile() : null;
  const retries = async () => (await c.metrics.retries.get()).values[0]?.value ?? 0;
  const retriesBefore = await retries();
  const cpu = cpuMeter(c.db, children.map((w) => w.pid!));
  const started = performance.now();
  if (children.length) {
    for (const w of children) w.send('go');
    pipeline = { close: () => stopWorkers(children) };
  } else if (opts.breakdown) {
    probe = createBreakdown(c.config.databaseUrl, c.scripts);
    pipeline = await OrderPipeline.start({
      redis: c.redis,
      db: probe.db,
      keys: c.keys,
      scripts: probe.scripts,
      log: c.log,
      options: {
        consumer: `bench-drain-${process.pid}`,
        lanes: c.config.pipelineLanes,
        batchSize: c.config.pipelineBatch,
        blockMs: c.config.pipelineBlockMs,
        claimIdleMs: c.config.claimIdleMs,
        maxDeliveries: c.config.maxDeliveries,
        restoreWindowMs: c.config.restoreWindowSeconds * 1000,
      },
      events: { retried: () => c.metrics.retries.inc() },
    });
  } else {
    pipeline = await c.startPipeline();
  }
  if (opts.timer) c.startExpiry(); // stopped by c.close()
  try {
    let left = await inflightLeft(c);
    let lastProgress = performance.now();
    while (left > 0) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      const now = await inflightLeft(c);
      if (now < left) lastProgress = performance.now();
      else if (performance.now() - lastProgress > STALL_MS) throw new Error(`pipeline stalled with ${now} in-flight orders`);
      left = now;
    }
    const ms = performance.now() - started;
    const result: PipelineResult = { ...measured(total, ms, cpu()), retries: children.length ? null : (await retries()) - retriesBefore };
    if (stopProfile) result.profile = await stopProfile(opts.profileFile!);
    if (probe && opts.breakdown) {
      // Lane i reads shards s with s mod lanes = i (consumer.ts): count the lanes that had work.
      const lanes = Math.min(c.config.pipelineLanes, c.keys.shards);
      const busy = new Set(sale.vouchers.map((v) => c.keys.shardOf(v) % lanes)).size;
      result.breakdown = probe.report();
      result.laneMs = Math.round(ms * busy);
    }
    return result;
  } finally {
    // Stop reading before the benchmark deletes the streams.
    await pipeline.close();
    await probe?.destroy();
  }
}

export interface Verification {
  ok: boolean;
  problems: string[];
}

/** Orders stored = admitted, all accepted, DB stock = initial − N, nothing in flight or pending. */
export async function verifySale(c: Container, sale: Sale): Promise<Verification> {
  const problems: string[] = [];
  const ids = sale.vouchers.map(String);
  const total = sale.counts.reduce((a, b) => a + b, 0);
  const byStatus = await c.db
    .selectFrom('orders')
    .select(['status', (eb) => eb.fn.countAll<string>().as('n')])
    .where('voucher_id', 'in', ids)
    .groupBy('status')
    .execute();
  const stored = byStatus.reduce((n, r) => n + Number(r.n), 0);
  const accepted = Number(byStatus.find((r) => r.status === 'pending_payment')?.n ?? 0);
  if (stored !== total) problems.push(`orders stored ${stored} != admitted ${total}`);
  if (accepted !== total) problems.push(`accepted orders ${accepted} != ${total} (${JSON.stringify(byStatus)})`);
  const rows = await c.db.selectFrom('vouchers').select(['id', 'stock']).where('id', 'in', ids).execute();
  for (const [k, id] of ids.entries()) {
    const db = rows.find((r) => r.id === id)?.stock;
    const want = sale.initialStock[k]! - sale.counts[k]!;
    if (db !== want) problems.push(`voucher ${id}: DB stock ${db} != initial - admitted = ${want}`);
    const redisStock = Number(await c.redis.hget(c.keys.voucher(sale.vouchers[k]!), 'stock'));
    if (redisStock !== want) problems.push(`voucher ${id}: Redis stock ${redisStock} != ${want}`);
  }
  const left = await inflightLeft(c);
  if (left !== 0) problems.push(`${left} in-flight records left`);
  for (let s = 0; s < c.keys.shards; s++) {
    const [pending] = (await c.redis.xpending(c.keys.orders(s), CONSUMER_GROUP)) as [number];
    if (pending !== 0) problems.push(`shard ${s}: ${pending} entries pending`);
  }
  return { ok: problems.length === 0, problems };
}

// ---------------------------------------------------------------------------------------------
// (a) The seeds' design: one transaction per order.

/**
 * One consumer reads the stream COUNT entries at a time and, for each entry, runs one
 * transaction (conditional stock update + order insert), commits, then XACKs it.
 */
export async function drainOnePerTransaction(c: Container, sale: Sale, count: number): Promise<Measured & Verification> {
  const total = sale.counts[0]!;
  const voucherId = sale.vouchers[0]!;
  const shard = c.keys.shardOf(voucherId);
  const stream = c.keys.orders(shard);
  const cpu = cpuMeter(c.db);
  const started = performance.now();
  let done = 0;
  while (done < total) {
    const reply = (await c.redis.xreadgroup('GROUP', CONSUMER_GROUP, 'seed', 'COUNT', count, 'STREAMS', stream, '>')) as
      | [string, RawEntry[]][]
      | null;
    if (!reply) throw new Error(`one-per-transaction consumer: stream empty after ${done} of ${total}`);
    for (const raw of reply[0]![1]) {
      const e = parseEntry(shard, raw, 1);
      if (isMalformed(e)) throw new Error(e.reason);
      await c.db.transaction().execute(async (trx) => {
        const updated = await trx
          .updateTable('vouchers')
          .set({ stock: sql`stock - ${e.quantity}` })
          .where('id', '=', e.voucherId.toString())
          .where('stock', '>=', e.quantity)
          .executeTakeFirst();
        if (updated.numUpdatedRows !== 1n) throw new Error(`sold out in the database at order ${e.orderId}`);
        await trx.insertInto('orders').values(orderRow(trx, BigInt(e.orderId), e.voucherId, BigInt(e.userId), e.quantity, e.createdAt)).execute();
      });
      await c.redis.xack(stream, CONSUMER_GROUP, e.streamId);
      done += 1;
    }
  }
  const result = measured(total, performance.now() - started, cpu());

  const problems: string[] = [];
  const stored = await c.db.selectFrom('orders').select((eb) => eb.fn.countAll<string>().as('n')).where('voucher_id', '=', voucherId.toString()).executeTakeFirstOrThrow();
  if (Number(stored.n) !== total) problems.push(`orders stored ${stored.n} != ${total}`);
  const v = await c.db.selectFrom('vouchers').select('stock').where('id', '=', voucherId.toString()).executeTakeFirstOrThrow();
  if (v.stock !== sale.initialStock[0]! - total) problems.push(`DB stock ${v.stock} != ${sale.initialStock[0]! - total}`);
  return { ...result, ok: problems.length === 0, problems };
}

// ---------------------------------------------------------------------------------------------
// (b) Raw batched INSERTs: the same rows, `batch` per transaction, nothing else.

export async function rawInserts(c: Container, total: number, batch: number, connections: number): Promise<Measured> {
  const createdAt = new Date();
  const rows = Array.from({ length: total }, (_, i) => orderRow(c.db, 9_000_000_000n + BigInt(i), 42n, 1_000_000n + BigInt(i), 1, createdAt));
  const cpu = cpuMeter(c.db);
  const started = performance.now();
  let next = 0;
  // Each worker takes the next chunk: `connections` transactions in flight at a time.
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < total) {
        const chunk = rows.slice(next, next + batch);
        next += batch;
        await c.db.transaction().execute((trx) => trx.insertInto('orders').values(chunk).execute());
      }
    }),
  );
  return measured(total, performance.now() - started, cpu());
}

// ---------------------------------------------------------------------------------------------
// events: the outbox on, with a durable queue bound, so that persistent messages are written to
// the broker's disk as with a real consumer.

/** The case's own exchange and durable queue; queued() counts what the broker holds; remove() deletes both. */
export async function benchExchange(url: string, name: string): Promise<{ exchange: string; queued(): Promise<number>; remove(): Promise<void> }> {
  const connection = await amqp.connect(url);
  const channel = await connection.createChannel();
  await channel.assertExchange(name, 'topic', { durable: true });
  await channel.assertQueue(name, { durable: true });
  await channel.bindQueue(name, name, 'order.*');
  return {
    exchange: name,
    queued: async () => (await channel.checkQueue(name)).messageCount,
    async remove() {
      await channel.deleteQueue(name).catch(() => undefined);
      await channel.deleteExchange(name).catch(() => undefined);
      await connection.close().catch(() => undefined);
    },
  };
}

/**
 * Seconds from the end of the drain until the outbox is empty, and whether the broker's queue holds
 * one event per order then (the broker confirmed each before its row was deleted; the relay's
 * published counter is only bumped after its transaction committed, so it may lag the empty outbox).
 */
export async function relayCatchUp(c: Container, sale: Sale, queued: () => Promise<number>): Promise<{ ok: boolean; seconds: number; problem?: string }> {
  const started = performance.now();
  const total = sale.counts.reduce((a, b) => a + b, 0);
  for (;;) {
    const { backlog } = await outboxBacklog(c.db);
    const seconds = Math.round(performance.now() - started) / 1000;
    if (backlog === 0) {
      const inQueue = await queued();
      return inQueue === total ? { ok: true, seconds } : { ok: false, seconds, problem: `events in the queue ${inQueue} != orders ${total}` };
    }
    if (seconds > 60) return { ok: false, seconds, problem: `${backlog} events still in the outbox after 60 s` };
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
