// In-flight orders: admitted in Redis, not yet stored in the database. The admit script writes
// one record per order into its shard's hash and one entry into its shard's stream; the order
// pipeline removes the record and acknowledges the entry once stored. Everything here reads in
// steps of REDIS_STEP elements, one command each: the hash and the stream grow with a sale's
// backlog, and one command that read them whole would hold Redis for every claim meanwhile.
import type { RedisClient } from '../infra/redis/client.js';
import { allShards, type KeySpace } from '../infra/redis/keys.js';
import { type InflightOrder, inflightOfEntry, isMalformed, type OrderEntry, parseEntry, parseInflight, type RawEntry } from '../infra/redis/records.js';
import { cursorWalk, pairsOf, REDIS_STEP } from '../infra/redis/walk.js';

export interface InflightReader {
  /** Looks the order up on every shard (the id does not say which one). */
  find(orderId: bigint): Promise<InflightOrder | null>;
  /** Every in-flight order of one voucher, scanned from its shard (or its segments' shards). */
  ofVoucher(voucherId: bigint, shards?: number[]): Promise<InflightOrder[]>;
  /** The voucher's entries the shard's stream received after `afterId`, up to `upToId`. */
  admittedBetween(voucherId: bigint, shard: number, afterId: string, upToId: string): Promise<OrderEntry[]>;
  /**
   * The voucher's entries of the shard's stream that `group` has not acknowledged yet (delivered
   * and pending, or not delivered), looking at `limit` entries of each kind at most.
   */
  unacknowledged(voucherId: bigint, shard: number, group: string, limit: number): Promise<InflightOrder[]>;
}

const nextAfter = (id: string) => `(${id}`;

/**
 * Up to `limit` stream items (entries, pending entries) from `start`, read REDIS_STEP at a time:
 * each step goes on after the last id the one before returned.
 */
async function inIdSteps<T extends [string, ...unknown[]]>(read: (start: string, count: number) => Promise<T[]>, start: string, limit: number): Promise<T[]> {
  const out: T[] = [];
  while (out.length < limit) {
    const step = await read(start, Math.min(REDIS_STEP, limit - out.length));
    out.push(...step);
    if (step.length < REDIS_STEP) break;
    start = nextAfter(step[step.length - 1]![0]);
  }
  return out;
}

export function createInflightReader(redis: RedisClient, keys: KeySpace): InflightReader {
  /** The voucher's well-formed entries among `raw`. */
  const entriesOf = (voucherId: bigint, shard: number, raw: RawEntry[]) =>
    raw.map((r) => parseEntry(shard, r, 1)).filter((e): e is OrderEntry => !isMalformed(e) && e.voucherId === voucherId);

  /** Stream entries from `start` (inclusive, or "(id" exclusive) up to `end`, at most `limit`. */
  const range = (stream: string, start: string, end: string, limit: number) =>
    inIdSteps((from, count) => redis.xrange(stream, from, end, 'COUNT', count) as Promise<RawEntry[]>, start, limit);

  /** Ids of the group's pending entries (delivered, not acknowledged), at most `limit`. */
  async function pendingIds(stream: string, group: string, limit: number): Promise<string[]> {
    const read = (from: string, count: number) => redis.xpending(stream, group, from, '+', count).catch(() => []) as Promise<[string, ...unknown[]][]>;
    return (await inIdSteps(read, '-', limit)).map(([id]) => id);
  }

  async function lastDelivered(stream: string, group: string): Promise<string> {
    const groups = (await redis.xinfo('GROUPS', stream).catch(() => [])) as unknown[][];
    for (const info of groups) {
      const fields = new Map<unknown, unknown>();
      for (let i = 0; i + 1 < info.length; i += 2) fields.set(info[i], info[i + 1]);
      if (fields.get('name') === group) return String(fields.get('last-delivered-id'));
    }
    return '0-0';
  }

  return {
    async find(orderId) {
      const id = orderId.toString();
      const shards = allShards(keys);
      // Auto-pipelining sends these together: one round trip per Redis node.
      const records = await Promise.all(shards.map((s) => redis.hget(keys.inflight(s), id)));
      const shard = records.findIndex((r) => r !== null);
      return shard >= 0 ? parseInflight(id, records[shard]!, shard) : null;
    },

    async ofVoucher(voucherId, shards = [keys.shardOf(voucherId)]) {
      const want = `${voucherId}|`;
      // HSCAN may return an element twice (while the hash is resized): keyed by order id.
      const found = new Map<string, InflightOrder>();
      for (const shard of shards) {
        for await (const { elements } of cursorWalk((cursor, count) => redis.hscan(keys.inflight(shard), cursor, 'COUNT', count))) {
          for (const [orderId, record] of pairsOf(elements)) if (record.startsWith(want)) found.set(orderId, parseInflight(orderId, record, shard));
        }
      }
      return [...found.values()];
    },

    async admittedBetween(voucherId, shard, afterId, upToId) {
      if (afterId === upToId) return [];
      return entriesOf(voucherId, shard, await range(keys.orders(shard), nextAfter(afterId), upToId, Infinity));
    },

    async unacknowledged(voucherId, shard, group, limit) {
      const stream = keys.orders(shard);
      const delivered = await Promise.all((await pendingIds(stream, group, limit)).map((id) => range(stream, id, id, 1)));
      const undelivered = await range(stream, nextAfter(await lastDelivered(stream, group)), '+', limit);
      return entriesOf(voucherId, shard, [...delivered.flat(), ...undelivered]).map(inflightOfEntry);
    },
  };
}
