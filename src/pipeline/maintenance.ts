// Housekeeping of the shard streams and their consumer group, run by every consumer now and then.
import type { RedisClient } from '../infra/redis/client.js';
import { allShards, type KeySpace } from '../infra/redis/keys.js';

export const CONSUMER_GROUP = 'order-writers';
const DEAD_CONSUMER_IDLE_MS = 3_600_000;

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

function toRecord(flat: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = flat[i + 1];
  return out;
}

/** Orders two stream ids ("ms-seq"): negative when a comes first. */
export function compareStreamIds(a: string, b: string): number {
  const [am = 0n, as = 0n] = a.split('-').map(BigInt);
  const [bm = 0n, bs = 0n] = b.split('-').map(BigInt);
  return am !== bm ? (am < bm ? -1 : 1) : as === bs ? 0 : as < bs ? -1 : 1;
}

/**
 * Bounded memory without losing anything: trims only entries below the oldest one that is still
 * pending (delivered, not acknowledged) or not yet delivered, and below those added in the last
 * `keepMs` by Redis's clock (acknowledged orders kept to be stored again should the database lose
 * them: consistency/lost-orders.ts). Returns the id trimmed below.
 */
export async function trimAcknowledged(redis: RedisClient, stream: string, keepMs = 0): Promise<string> {
  const [count, lowest] = (await redis.xpending(stream, CONSUMER_GROUP)) as [number, string | null, string | null, unknown];
  let minId: string;
  if (count > 0 && lowest) {
    minId = lowest;
  } else {
    const groups = ((await redis.xinfo('GROUPS', stream)) as unknown[][]).map(toRecord);
    const last = String(groups.find((g) => g.name === CONSUMER_GROUP)?.['last-delivered-id'] ?? '0-0');
    const [ms = '0', seq = '0'] = last.split('-');
    minId = `${ms}-${BigInt(seq) + 1n}`;
  }
  if (keepMs > 0) {
    const [seconds] = await redis.time();
    const kept = `${Number(seconds) * 1000 - keepMs}-0`;
    if (compareStreamIds(kept, minId) < 0) minId = kept;
  }
  // "~" lets Redis drop whole internal nodes only: cheaper, and never more than asked.
  await redis.xtrim(stream, 'MINID', '~', minId);
  return minId;
}

/** Forgets consumers (old process names) that hold nothing and have been idle for an hour. */
export async function forgetDeadConsumers(redis: RedisClient, stream: string, self: string): Promise<void> {
  const consumers = ((await redis.xinfo('CONSUMERS', stream, CONSUMER_GROUP)) as unknown[][]).map(toRecord);
  for (const c of consumers) {
    if (c.name !== self && Number(c.pending) === 0 && Number(c.idle) > DEAD_CONSUMER_IDLE_MS) {
      await redis.xgroup('DELCONSUMER', stream, CONSUMER_GROUP, String(c.name));
    }
  }
}

/** Whether the stream exists with the consumer group on it (false after Redis lost its data). */
export async function hasConsumerGroup(redis: RedisClient, stream: string): Promise<boolean> {
  try {
    const groups = ((await redis.xinfo('GROUPS', stream)) as unknown[][]).map(toRecord);
    return groups.some((g) => g.name === CONSUMER_GROUP);
  } catch (err) {
    if (/no such key/i.test((err as Error).message)) return false;
    throw err;
  }
}

/**
 * Admitted orders of a shard stream not stored yet: delivered and not acknowledged (`pending`)
 * plus not delivered yet (`lag`, Redis 7), from XINFO GROUPS. 0 for a stream that does not exist.
 */
export async function streamBacklog(redis: RedisClient, stream: string): Promise<number> {
  const groups = ((await redis.xinfo('GROUPS', stream).catch(() => [])) as unknown[][]).map(toRecord);
  const group = groups.find((g) => g.name === CONSUMER_GROUP);
  return group ? Number(group.pending ?? 0) + Number(group.lag ?? 0) : 0;
}
