// A queue voucher's pre-queue lives in Redis: a join is one Lua call (queue-7.lua) and writes
// nothing to the database. So that a Redis that forgets it before the draw (a restart without
// persistence, a failover to an empty replica, a flush) does not forget the buyers it answered,
// the queue runner copies the joins to the database about once a second while the pre-queue is
// open, in bounded steps, and gives the copy back to Redis when it finds Redis lost it; the draw
// (draw.ts) goes on copying while it waits for the start, draws everyone copied (it compares the
// whole copy with Redis) and copies the rest once more when it freezes the pre-queue.
//
// The copy's cursor is a field of the queue hash (`copied`: every entrant with a lower join time
// is copied). It lives and dies with the pre-queue (same slot), so a cursor that is missing while
// the database holds entrants means Redis lost them: they are put back (ZADD NX, with their join
// times), and the copy starts over from the first join. A join that a clock set back scored below
// the cursor is left to the draw's last copy, which copies whatever the copy lacks.
//
// What is still lost: the joins answered after the last copy before Redis forgot them (about a
// second's, in ADMIT_DURABILITY=memory). Their buyers read NOT_IN_QUEUE and can join again.
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { pairsOf } from '../infra/redis/walk.js';
import { type QueueVoucher, windowOf } from './queue.js';
import type { Joined, QueueRepository } from './repository.js';

/** Entrants (or their places) read from or written to Redis, or read from the database, per command. */
export const ENTRANTS_STEP = 5_000;
/** How often an open pre-queue is copied (by the runner's looks, then by the draw while it waits). */
export const COPY_EVERY_MS = 1_000;
/** The queue hash's field holding the copy's cursor (a join time, µs). */
const CURSOR = 'copied';

export interface PrequeueCopyDeps {
  redis: RedisClient;
  keys: KeySpace;
  repository: Pick<QueueRepository, 'copyPrequeue' | 'copiedEntrants'>;
}

export interface PrequeueCopy {
  /**
   * Copies the joins since the last copy, a step at a time until caught up or `stopAt` (ms), having
   * first given back the copied entrants when Redis lost the cursor. Returns how many entrants it
   * put back (Redis had lost them), and the entrants it copied.
   */
  sync(v: QueueVoucher, stopAt: number): Promise<{ restored: number; copied: Joined[] }>;
  /** Every copied entrant: user id -> join time (µs). */
  stored(voucherId: bigint): Promise<Map<string, string>>;
  /** Puts entrants back into the Redis pre-queue with their join times; how many it lacked. */
  restore(v: QueueVoucher, entrants: readonly Joined[]): Promise<number>;
  /** Copies entrants to the database (those copied before are kept as they are). */
  copy(voucherId: bigint, entrants: readonly Joined[]): Promise<void>;
}

/** A WITHSCORES reply as entrants. */
export const joinedOf = (reply: string[]): Joined[] => [...pairsOf(reply)];

export function createPrequeueCopy({ redis, keys, repository }: PrequeueCopyDeps): PrequeueCopy {
  async function stored(voucherId: bigint): Promise<Map<string, string>> {
    const all = new Map<string, string>();
    for (let after: string | null = null; ; ) {
      const page = await repository.copiedEntrants(voucherId, after, ENTRANTS_STEP);
      for (const [userId, joinedUs] of page) all.set(userId, joinedUs);
      if (page.length < ENTRANTS_STEP) return all;
      after = page[page.length - 1]![0];
    }
  }

  async function restore(v: QueueVoucher, entrants: readonly Joined[]): Promise<number> {
    if (entrants.length === 0) return 0;
    const key = keys.queueEntrants(v.id);
    let added = 0;
    for (let i = 0; i < entrants.length; i += ENTRANTS_STEP) {
      // NX: a buyer who joined again since keeps the join time Redis gave them then.
      added += await redis.zadd(key, 'NX', ...entrants.slice(i, i + ENTRANTS_STEP).flatMap(([userId, joinedUs]) => [joinedUs, userId]));
    }
    await redis.expireat(key, windowOf(v).expireAtSeconds);
    return added;
  }

  /** Redis time in µs, as the join times are written (decimal). */
  async function nowUs(): Promise<string> {
    const [s, us] = await redis.time();
    return `${s}${String(us).padStart(6, '0')}`;
  }

  return {
    stored,
    restore,
    copy: (voucherId, entrants) => repository.copyPrequeue(voucherId, entrants),

    async sync(v, stopAt) {
      const queueKey = keys.queue(v.id);
      const kept = await redis.hget(queueKey, CURSOR);
      // No cursor: never copied, or lost with the pre-queue. What the database has goes back, and
      // everything else Redis holds is copied.
      const copiedBefore = kept === null ? await stored(v.id) : null;
      const restored = copiedBefore ? await restore(v, [...copiedBefore]) : 0;
      let cursor = kept ?? '-inf';
      const copied: Joined[] = [];
      for (;;) {
        // Read before the range: a join from then on has a later time (scripts run one at a time,
        // each scored by its own TIME), so every entrant below it is in this range or copied before.
        const now = await nowUs();
        const reply = await redis.zrangebyscore(keys.queueEntrants(v.id), cursor, '+inf', 'WITHSCORES', 'LIMIT', 0, ENTRANTS_STEP);
        const part = joinedOf(reply).filter(([userId]) => !copiedBefore?.has(userId));
        if (part.length) await repository.copyPrequeue(v.id, part);
        copied.push(...part);
        const full = reply.length === 2 * ENTRANTS_STEP;
        // A full step goes on from its last join time (the entrants at that time come again: kept as they are).
        const next = full ? reply[reply.length - 1]! : now;
        await redis.hset(queueKey, CURSOR, next);
        if (cursor === '-inf') await redis.expireat(queueKey, windowOf(v).expireAtSeconds);
        cursor = next;
        if (!full || Date.now() >= stopAt) return { restored, copied };
      }
    },
  };
}
