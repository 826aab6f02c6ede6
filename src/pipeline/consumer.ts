// The order pipeline: consumer-group readers of the shard streams that store admitted orders in
// MariaDB in batches, then acknowledge them. Nothing is acknowledged before it is stored, so a
// process that dies holding entries loses nothing: live consumers claim them (XAUTOCLAIM) once
// they have been idle long enough.
//
// Each process runs `lanes` loops; lane i reads the shards s with s mod lanes = i, with its own
// blocking connection and one multi-stream XREADGROUP. On a Redis Cluster every shard is its own
// slot and a read may name one stream only: there each shard gets a lane of its own.
import type { Logger } from 'pino';
import type { Db } from '../infra/db/database.js';
import { closeConnection, dedicatedConnection, dropConnection } from '../infra/redis/connections.js';
import { isCluster, type RedisClient } from '../infra/redis/client.js';
import { allShards, type KeySpace } from '../infra/redis/keys.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import { DEAD_LETTER_MAX_LEN, type SettleInput } from '../infra/redis/scripts/settle.js';
import type { OrderEvent, OrderPubSub } from '../orders/order-pubsub.js';
import type { EventOutbox } from '../orders/event-outbox.js';
import { isTransientDbError, isUniqueViolation } from '../infra/db/errors.js';
import { isMalformed, type MalformedEntry, type OrderEntry, parseEntry, type RawEntry } from '../infra/redis/records.js';
import { CONSUMER_GROUP, forgetDeadConsumers, trimAcknowledged } from './maintenance.js';
import { FailureReason, type Settlement, settleInput } from './settlement.js';
import { storeOrders } from './store-orders.js';

const MAX_BACKOFF_MS = 5_000;

export interface PipelineOptions {
  consumer: string;
  lanes: number;
  batchSize: number;
  blockMs: number;
  /** Entries pending this long on any consumer are taken over. */
  claimIdleMs: number;
  /** Deliveries after which an entry that still cannot be stored is failed. */
  maxDeliveries: number;
}

export interface PipelineEvents {
  stored?(count: number): void;
  /** Subscribers of order events (stored or failed), asked first whether anyone listens. */
  announce?: Pick<OrderPubSub, 'wanted' | 'publish'>;
  failed?(reason: string): void;
  retried?(error: unknown): void;
}

export interface PipelineDeps {
  /** Shared connection for settling, claiming and trimming; each lane derives its blocking reader from it. */
  redis: RedisClient;
  db: Db;
  keys: KeySpace;
  scripts: Scripts;
  log: Logger;
  options: PipelineOptions;
  events?: PipelineEvents;
  /** The order-event outbox each batch writes to (events on). */
  eventOutbox?: EventOutbox;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Creates the group on every shard stream (or on `shards`) where it is missing; idempotent. */
export async function ensureConsumerGroups(redis: RedisClient, keys: KeySpace, shards = allShards(keys)): Promise<void> {
  await Promise.all(
    shards.map((s) =>
      // From 0: entries admitted after Redis lost the group (and its stream) are read too.
      redis.xgroup('CREATE', keys.orders(s), CONSUMER_GROUP, '0', 'MKSTREAM').catch((err: Error) => {
        if (!err.message.includes('BUSYGROUP')) throw err;
      }),
    ),
  );
}

/** Redis answered that the consumer group (or its stream) does not exist: it lost its data. */
const isMissingGroup = (err: unknown) => /NOGROUP/.test((err as Error).message ?? '');

class Lane {
  private readonly conn: RedisClient;
  private clientId: number | null = null;
  private reading = false;
  private lastMaintenance = 0;
  private running: Promise<void> | null = null;
  private closing = false;
  /** Redis time (ms, from the stream id) of the oldest entry of the batch in hand; null between batches. */
  private oldestInHand: number | null = null;
  /** That entry's age when it was read; 0 after a read that found nothing. */
  private lagAtReadMs = 0;

  constructor(
    private readonly deps: PipelineDeps,
    private readonly shards: number[],
  ) {
    this.conn = dedicatedConnection(deps.redis, `seckill-lane-${deps.options.consumer}`);
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
    const { keys, options, log } = this.deps;
    const streams = this.shards.map((s) => keys.orders(s));
    while (!this.closing) {
      try {
        this.reading = true;
        const reply = (await this.conn.xreadgroup(
          'GROUP', CONSUMER_GROUP, options.consumer,
          'COUNT', options.batchSize,
          'BLOCK', options.blockMs,
          'STREAMS', ...streams, ...streams.map(() => '>'),
        ).finally(() => (this.reading = false))) as [string, RawEntry[]][] | null;
        if (reply) {
          const entries = reply.flatMap(([stream, raw]) => {
            const shard = this.shards[streams.indexOf(stream)]!;
            return raw.map((r) => parseEntry(shard, r, 1));
          });
          // Stream ids start with Redis' clock at the XADD: the lag costs no extra read.
          this.oldestInHand = Math.min(...reply.flatMap(([, raw]) => (raw[0] ? [Number(raw[0][0].split('-')[0])] : [])));
          this.lagAtReadMs = Date.now() - this.oldestInHand;
          await this.handle(entries).finally(() => (this.oldestInHand = null));
        } else {
          this.lagAtReadMs = 0;
        }
        if (Date.now() - this.lastMaintenance >= Math.min(options.claimIdleMs / 2, 5_000)) {
          this.lastMaintenance = Date.now();
          await this.maintain();
        }
      } catch (err) {
        if (this.closing) break;
        if (isMissingGroup(err)) {
          log.error({ shards: this.shards }, 'consumer group missing (Redis lost its data?); recreating it');
          const recreated = await ensureConsumerGroups(this.deps.redis, keys, this.shards).then(
            () => true,
            (e: unknown) => (log.warn({ err: e }, 'could not recreate the consumer group; retrying'), false),
          );
          if (recreated) continue;
        } else {
          log.warn({ err }, 'order pipeline lane error; retrying');
        }
        await sleep(500);
      }
    }
  }

  private async handle(entries: (OrderEntry | MalformedEntry)[]): Promise<void> {
    const malformed = entries.filter(isMalformed);
    const orders = entries.filter((e): e is OrderEntry => !isMalformed(e));
    await Promise.all(malformed.map((e) => this.deadLetter(e)));
    const poison = orders.filter((e) => e.deliveries > this.deps.options.maxDeliveries);
    const normal = orders.filter((e) => e.deliveries <= this.deps.options.maxDeliveries);
    if (poison.length) {
      const reason = `${FailureReason.POISON}: not stored after ${this.deps.options.maxDeliveries} deliveries`;
      await this.storeAndSettle(poison, reason);
    }
    // XREADGROUP's COUNT is per stream: cut what a multi-stream read returned to the batch size.
    const size = this.deps.options.batchSize;
    for (let i = 0; i < normal.length; i += size) await this.storeAndSettle(normal.slice(i, i + size));
  }

  private async storeAndSettle(entries: OrderEntry[], failAll?: string): Promise<void> {
    const decided = await this.store(entries, failAll);
    // A Redis error here leaves the entries pending: they come back, are found stored, and settle then.
    if (decided) await this.settle(entries, decided);
  }

  /**
   * Stores, retrying transient errors with back-off for as long as the process runs. A
   * non-transient error is isolated by storing the entries one by one; an entry that fails alone
   * stays pending, comes back later with one more delivery, and ends as poison.
   */
  private async store(entries: OrderEntry[], failAll?: string): Promise<Map<string, Settlement> | null> {
    let backoff = 100;
    // A first delivery is normally not stored yet, so the lookup is skipped; a duplicate key
    // error (the same order entered twice, or a racing consumer) turns it back on.
    let checkStored = entries.some((e) => e.deliveries > 1);
    for (;;) {
      try {
        return await storeOrders(this.deps.db, entries, { failAll, checkStored, eventOutbox: this.deps.eventOutbox });
      } catch (err) {
        if (isUniqueViolation(err) && !checkStored) {
          checkStored = true;
          continue;
        }
        if (!isTransientDbError(err)) {
          if (entries.length === 1) {
            const { message, code } = err as { message?: string; code?: string };
            this.deps.log.error({ error: message, code, orderId: entries[0]!.orderId, deliveries: entries[0]!.deliveries }, 'order could not be stored; left pending');
            return null;
          }
          this.deps.log.warn({ error: (err as Error).message, size: entries.length }, 'batch failed; storing its orders one by one');
          for (const e of entries) await this.storeAndSettle([e], failAll);
          return null;
        }
        this.deps.events?.retried?.(err);
        if (this.closing) {
          this.deps.log.warn({ size: entries.length }, 'shutting down with a batch not stored; it stays pending for another consumer');
          return null;
        }
        this.deps.log.warn({ err: (err as Error).message, backoffMs: backoff }, 'database unavailable; retrying batch');
        await sleep(backoff);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
        await this.keepClaimed(entries);
      }
    }
  }

  /** One settle script call per shard for the whole batch. */
  private async settle(entries: OrderEntry[], decided: Map<string, Settlement>): Promise<void> {
    const { scripts, events, log } = this.deps;
    const byShard = new Map<number, SettleInput[]>();
    for (const e of entries) {
      const outcome = decided.get(e.orderId);
      if (!outcome) continue; // not decided: stays pending
      const input = settleInput(e, outcome);
      const list = byShard.get(e.shard);
      if (list) list.push(input);
      else byShard.set(e.shard, [input]);
    }
    let stored = 0;
    const announce = events?.announce?.wanted() ? events.announce : undefined;
    const announced: Omit<OrderEvent, 'at'>[] = [];
    for (const [shard, inputs] of byShard) {
      const settled = await scripts.settle(CONSUMER_GROUP, shard, inputs);
      inputs.forEach((input, i) => {
        if (!settled[i]) return; // settled before (redelivery): counted then
        if (announce) {
          const status = input.failureReason ? 'failed' : 'pending_payment';
          const { orderId, userId, quantity } = input;
          announced.push({ type: input.failureReason ? 'failed' : 'stored', status, orderId, voucherId: input.voucherId.toString(), userId, quantity });
        }
        if (!input.failureReason) stored += 1;
        else {
          events?.failed?.(input.failureReason.split(':')[0]!);
          log.warn({ orderId: input.orderId, reason: input.failureReason }, 'order failed; Redis compensated');
        }
      });
    }
    if (stored) events?.stored?.(stored);
    if (announce && announced.length) void announce.publish(announced);
  }

  private async deadLetter(e: MalformedEntry): Promise<void> {
    const { redis, keys, log } = this.deps;
    log.error({ streamId: e.streamId, reason: e.reason }, 'malformed stream entry moved to dead letters');
    const acked = await redis.xack(keys.orders(e.shard), CONSUMER_GROUP, e.streamId);
    if (acked === 1) {
      await redis.xadd(keys.deadLetters(e.shard), 'MAXLEN', '~', DEAD_LETTER_MAX_LEN, '*', 'entry', e.streamId, 'reason', e.reason);
    }
  }

  /** Resets the idle time of entries we are still working on, so nobody takes them over. */
  private async keepClaimed(entries: OrderEntry[]): Promise<void> {
    const { redis, keys, options } = this.deps;
    for (const shard of new Set(entries.map((e) => e.shard))) {
      const ids = entries.filter((e) => e.shard === shard).map((e) => e.streamId);
      await redis.call('XCLAIM', keys.orders(shard), CONSUMER_GROUP, options.consumer, 0, ...ids, 'JUSTID').catch(() => {});
    }
  }

  private async maintain(): Promise<void> {
    for (const shard of this.shards) {
      if (this.closing) return;
      await this.reclaim(shard);
      await trimAcknowledged(this.deps.redis, this.deps.keys.orders(shard));
      await forgetDeadConsumers(this.deps.redis, this.deps.keys.orders(shard), this.deps.options.consumer);
    }
  }

  /** Takes over entries another consumer (probably dead) has held too long. */
  private async reclaim(shard: number): Promise<void> {
    const { redis, keys, options, log } = this.deps;
    const stream = keys.orders(shard);
    const [, claimed, deleted] = (await redis.xautoclaim(stream, CONSUMER_GROUP, options.consumer, options.claimIdleMs, '0-0', 'COUNT', options.batchSize)) as [
      string,
      RawEntry[],
      string[],
    ];
    if (deleted?.length) log.error({ shard, ids: deleted }, 'pending entries vanished from the stream (trimmed or deleted by hand)');
    if (!claimed.length) return;
    // XAUTOCLAIM does not say how often an entry was delivered; XPENDING does.
    const pending = (await redis.xpending(stream, CONSUMER_GROUP, claimed[0]![0], claimed[claimed.length - 1]![0], claimed.length, options.consumer)) as [
      string,
      string,
      number,
      number,
    ][];
    const deliveries = new Map(pending.map(([id, , , count]) => [id, count]));
    log.info({ shard, count: claimed.length }, 'took over entries idle on another consumer');
    await this.handle(claimed.map((raw) => parseEntry(shard, raw, deliveries.get(raw[0]) ?? 1)));
  }
}

export class OrderPipeline {
  private constructor(private readonly lanes: Lane[]) {}

  static async start(deps: PipelineDeps): Promise<OrderPipeline> {
    await ensureConsumerGroups(deps.redis, deps.keys);
    const count = isCluster(deps.redis) ? deps.keys.shards : Math.min(deps.options.lanes, deps.keys.shards);
    const lanes = Array.from({ length: count }, (_, i) => {
      const shards = allShards(deps.keys).filter((s) => s % count === i);
      return new Lane(deps, shards);
    });
    await Promise.all(lanes.map((l) => l.start()));
    deps.log.info({ consumer: deps.options.consumer, lanes: count }, 'order pipeline started');
    return new OrderPipeline(lanes);
  }

  private closed: Promise<void> | null = null;

  /** The pipeline lag (seckill_pipeline_lag_seconds): the worst lane's, in seconds. */
  lagSeconds(): number {
    const now = Date.now();
    return Math.max(0, ...this.lanes.map((l) => l.lagMs(now))) / 1000;
  }

  /** Idempotent: finishes the batches in hand, acknowledges what was stored, stops reading. */
  close(): Promise<void> {
    this.closed ??= Promise.all(this.lanes.map((l) => l.close())).then(() => undefined);
    return this.closed;
  }
}
