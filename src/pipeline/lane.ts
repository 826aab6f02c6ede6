// One reader of the order pipeline: it reads the shards it is given with its own blocking
// connection and one multi-stream XREADGROUP. A round, top-down: read a batch (one that is not full
// waits for the process's small-batch turn and fills up meanwhile: small-batch-gate.ts), store it
// in the database (retrying while the database is down), settle it in Redis (acknowledge,
// compensate what failed), and now and then take over stale entries and tidy the streams. Nothing
// is acknowledged before it is stored.
import { context } from '@opentelemetry/api';
import { isTransientDbError, isUniqueViolation } from '../infra/db/errors.js';
import { isCluster, type RedisClient } from '../infra/redis/client.js';
import { closeConnection, dedicatedConnection, dropConnection } from '../infra/redis/connections.js';
import { isMalformed, type MalformedEntry, type OrderEntry, parseEntry, type RawEntry } from '../infra/redis/records.js';
import { Backoff } from '../retry-backoff.js';
import type { PipelineDeps } from './pipeline-deps.js';
import { CONSUMER_GROUP, ensureConsumerGroups, forgetDeadConsumers, trimAcknowledged } from './maintenance.js';
import { claimStale, keepClaimed } from './pending-claims.js';
import { deadLetter, settleBatch } from './settle-batch.js';
import { FailureReason, type Settlement } from './settlement.js';
import { storeOrders } from './store-orders.js';
import { startBatchSpans } from './batch-spans.js';
import type { SmallBatchGate } from './small-batch-gate.js';

const FIRST_STORE_RETRY_MS = 100;
const MAX_STORE_RETRY_MS = 5_000;
const READ_RETRY_MS = 500;

type Entry = OrderEntry | MalformedEntry;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Redis answered that the consumer group (or its stream) does not exist: it lost its data. */
const isMissingGroup = (err: unknown) => /NOGROUP/.test((err as Error).message ?? '');

export class Lane {
  private readonly deps: PipelineDeps;
  private readonly shards: number[];
  private readonly gate: SmallBatchGate;
  private readonly conn: RedisClient;
  private readonly streams: string[];
  private clientId: number | null = null;
  private reading = false;
  private lastMaintenance = -Infinity; // due at the first read
  private running: Promise<void> | null = null;
  private closing = false;
  /** Redis time (ms, from the stream id) of the oldest entry of the batch in hand; null between batches. */
  private oldestInHand: number | null = null;
  /** That entry's age when it was read; 0 after a read that found nothing. */
  private lagAtReadMs = 0;

  constructor(deps: PipelineDeps, shards: number[], gate: SmallBatchGate) {
    this.deps = deps;
    this.shards = shards;
    this.gate = gate;
    this.conn = dedicatedConnection(deps.redis, `seckill-lane-${deps.options.consumer}`);
    this.streams = shards.map((s) => deps.keys.orders(s));
  }

  async start(): Promise<void> {
    const conn = this.conn;
    if (!isCluster(conn)) {
      this.clientId = Number(await conn.client('ID'));
      // A reconnect (Redis restarted, a failover) gives the reader another id.
      conn.on('ready', () => void conn.client('ID').then((id) => (this.clientId = Number(id)), () => (this.clientId = null)));
    }
    this.running = this.loop();
  }

  /** Age of the oldest entry of the batch in hand (growing while it is stuck), else as of the last read. */
  lagMs(now: number): number {
    return Math.max(0, this.oldestInHand === null ? this.lagAtReadMs : now - this.oldestInHand);
  }

  /** Stops after the batch in hand is stored and acknowledged. */
  async close(): Promise<void> {
    this.closing = true;
    // Break a blocking read at once instead of waiting for its timeout. A cluster client has no
    // one id to unblock, and Redis unreachable leaves the read queued for a reconnect: there the
    // reader is dropped (a read cut short delivers nothing, or leaves its entries pending for a
    // live consumer to take over).
    if (this.clientId !== null) await this.deps.redis.client('UNBLOCK', this.clientId).catch(() => {});
    if (this.reading && (this.clientId === null || this.conn.status !== 'ready')) dropConnection(this.conn);
    await this.running;
    await closeConnection(this.conn);
  }

  private async loop(): Promise<void> {
    while (!this.closing) {
      try {
        const batch = await this.readBatch(this.deps.options.batchSize, this.deps.options.blockMs);
        if (batch) await this.handleInTurn(batch).finally(() => (this.oldestInHand = null));
        await this.maintainWhenDue();
      } catch (err) {
        if (this.closing) break;
        if (await this.recover(err)) continue;
        await sleep(READ_RETRY_MS);
      }
    }
  }

  /** A full batch now; one that is not, in the small-batch turn, filled up with what came meanwhile. */
  private async handleInTurn(batch: Entry[]): Promise<void> {
    const { batchSize } = this.deps.options;
    if (batch.length >= batchSize) return this.handle(batch);
    return this.gate.run(async () => {
      const more = this.closing ? null : await this.readBatch(batchSize - batch.length, null);
      await this.handle(more ? batch.concat(more) : batch);
    });
  }

  /** Up to `count` new entries (per stream) of the lane's shards, waiting up to blockMs (null: not at all); null when none came. */
  private async readBatch(count: number, blockMs: number | null): Promise<Entry[] | null> {
    const { options } = this.deps;
    const streams = this.streams;
    this.reading = true;
    const ids = streams.map(() => '>');
    const read = blockMs === null
      ? this.conn.xreadgroup('GROUP', CONSUMER_GROUP, options.consumer, 'COUNT', count, 'STREAMS', ...streams, ...ids)
      : this.conn.xreadgroup('GROUP', CONSUMER_GROUP, options.consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', ...streams, ...ids);
    const reply = (await read.finally(() => (this.reading = false))) as [string, RawEntry[]][] | null;
    if (!reply) {
      if (blockMs !== null) this.lagAtReadMs = 0;
      return null;
    }
    const entries = reply.flatMap(([stream, raw]) => {
      const shard = this.shards[streams.indexOf(stream)]!;
      return raw.map((r) => parseEntry(shard, r, 1));
    });
    // Stream ids start with Redis' clock at the XADD: the lag costs no extra read.
    this.oldestInHand = Math.min(this.oldestInHand ?? Infinity, ...reply.flatMap(([, raw]) => (raw[0] ? [Number(raw[0][0].split('-')[0])] : [])));
    this.lagAtReadMs = Date.now() - this.oldestInHand;
    return entries;
  }

  /** Malformed entries go to the dead letters, poison is stored as failed, the rest in batches. */
  private async handle(entries: Entry[]): Promise<void> {
    const { options } = this.deps;
    const malformed = entries.filter(isMalformed);
    const orders = entries.filter((e): e is OrderEntry => !isMalformed(e));
    await Promise.all(malformed.map((e) => deadLetter(this.deps, e)));
    const poison = orders.filter((e) => e.deliveries > options.maxDeliveries);
    const normal = orders.filter((e) => e.deliveries <= options.maxDeliveries);
    if (poison.length) {
      const reason = `${FailureReason.POISON}: not stored after ${options.maxDeliveries} deliveries`;
      await this.storeAndSettle(poison, reason);
    }
    // XREADGROUP's COUNT is per stream: cut what a multi-stream read returned to the batch size.
    const size = options.batchSize;
    for (let i = 0; i < normal.length; i += size) await this.storeAndSettle(normal.slice(i, i + size));
  }

  private async storeAndSettle(entries: OrderEntry[], failAll?: string): Promise<void> {
    const spans = startBatchSpans(entries);
    try {
      const decided = await (spans ? context.with(spans.context, () => this.store(entries, failAll, spans.traceParents)) : this.store(entries, failAll));
      // A Redis error here leaves the entries pending: they come back, are found stored, and settle then.
      if (decided) await settleBatch(this.deps, entries, decided);
      spans?.end(decided);
    } catch (err) {
      spans?.end(null, err);
      throw err;
    }
  }

  /**
   * Stores, retrying transient errors with back-off for as long as the process runs. A
   * non-transient error is isolated by storing the entries one by one; an entry that fails alone
   * stays pending, comes back later with one more delivery, and ends as poison.
   */
  private async store(entries: OrderEntry[], failAll?: string, traceParents?: Map<string, string>): Promise<Map<string, Settlement> | null> {
    const { db, eventOutbox, events, log } = this.deps;
    const backoff = new Backoff(FIRST_STORE_RETRY_MS, MAX_STORE_RETRY_MS);
    // A first delivery is normally not stored yet, so the lookup is skipped; a duplicate key
    // error (the same order entered twice, or a racing consumer) turns it back on.
    let checkStored = entries.some((e) => e.deliveries > 1);
    for (;;) {
      try {
        return await storeOrders(db, entries, { failAll, checkStored, eventOutbox, traceParents });
      } catch (err) {
        if (isUniqueViolation(err) && !checkStored) {
          checkStored = true;
          continue;
        }
        if (!isTransientDbError(err)) {
          if (entries.length === 1) {
            const { message, code } = err as { message?: string; code?: string };
            log.error({ error: message, code, orderId: entries[0]!.orderId, deliveries: entries[0]!.deliveries }, 'order could not be stored; left pending');
            return null;
          }
          log.warn({ error: (err as Error).message, size: entries.length }, 'batch failed; storing its orders one by one');
          for (const e of entries) await this.storeAndSettle([e], failAll);
          return null;
        }
        events?.retried?.(err);
        if (this.closing) {
          log.warn({ size: entries.length }, 'shutting down with a batch not stored; it stays pending for another consumer');
          return null;
        }
        const waitMs = backoff.next();
        log.warn({ err: (err as Error).message, backoffMs: waitMs }, 'database unavailable; retrying batch');
        await sleep(waitMs);
        await keepClaimed(this.deps, entries);
      }
    }
  }

  /** Every claimIdleMs / 2 (5 s at most): takes over stale entries, trims, forgets dead consumers. */
  private async maintainWhenDue(): Promise<void> {
    const { redis, keys, options } = this.deps;
    if (performance.now() - this.lastMaintenance < Math.min(options.claimIdleMs / 2, 5_000)) return;
    this.lastMaintenance = performance.now(); // monotonic: a clock set back would delay maintenance
    for (const shard of this.shards) {
      if (this.closing) return;
      await this.handle(await claimStale(this.deps, shard));
      await trimAcknowledged(redis, keys.orders(shard), options.restoreWindowMs);
      await forgetDeadConsumers(redis, keys.orders(shard), options.consumer);
    }
  }

  /** Logs a failed round; true when it was a lost consumer group, now recreated: read again at once. */
  private async recover(err: unknown): Promise<boolean> {
    const { redis, keys, log } = this.deps;
    if (!isMissingGroup(err)) {
      log.warn({ err }, 'order pipeline lane error; retrying');
      return false;
    }
    log.error({ shards: this.shards }, 'consumer group missing (Redis lost its data?); recreating it');
    return ensureConsumerGroups(redis, keys, this.shards).then(
      () => true,
      (e: unknown) => (log.warn({ err: e }, 'could not recreate the consumer group; retrying'), false),
    );
  }
}
