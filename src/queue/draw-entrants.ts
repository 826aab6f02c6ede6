// The entrants a queue voucher's draw ranks (steps 1 and 2 of draw.ts): read from the Redis
// pre-queue a bounded range at a time, compared with the database's copy (prequeue-copy.ts) so
// that the ones Redis lost are put back and drawn too, copied on while the draw waits for beginAt,
// and ranked by the seed (draw-order.ts): most of them before the start, the rest after the freeze.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { pairsOf } from '../infra/redis/walk.js';
import { mergeRanked, type Ranked, rankAll } from './draw-order.js';
import { COPY_EVERY_MS, ENTRANTS_STEP, joinedOf, type PrequeueCopy } from './prequeue-copy.js';
import type { QueueVoucher } from './queue.js';
import type { Joined } from './repository.js';

/** Longest wait for Redis time to reach beginAt (the process clock ahead of Redis's). */
const CLOCK_WAIT_MS = 10_000;

export interface DrawEntrantsDeps {
  redis: RedisClient;
  keys: KeySpace;
  prequeue: PrequeueCopy;
}

/** The Redis pre-queue as read: user id -> join time (µs), and the last join time read. */
interface Entrants {
  joined: Map<string, string>;
  lastScore: string | null;
}

/** What the draw read and ranked before the start. */
export interface EarlyRanking {
  entrants: Entrants;
  ranked: Ranked[];
  /** Every copied entrant: the database's copy, then what the draw copies while it waits. */
  stored: Map<string, string>;
  /** Entrants Redis had lost that were put back from the copy. */
  restored: number;
}

/** The draw's ranking, with every entrant (user id -> join time) and how many were put back meanwhile. */
export interface FinalRanking {
  ranked: Ranked[];
  joined: Map<string, string>;
  restored: number;
}

/** Redis time (ms): the draw's clock, the one join times are taken from. */
export async function redisNow(redis: RedisClient): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/**
 * Step 1: the entrants so far and the database's copy of the pre-queue, the copied ones Redis
 * lost put back, all ranked.
 */
export async function rankEarly(deps: DrawEntrantsDeps, v: QueueVoucher, seed: string): Promise<EarlyRanking> {
  // The copy is read while the Redis entrants are read and ranked.
  const storedRead = deps.prequeue.stored(v.id);
  storedRead.catch(() => undefined); // awaited below
  const entrants = await entrantsFrom(deps, v);
  const ranked = rankAll(seed, [...entrants.joined.keys()]);
  const stored = await storedRead;
  const lost = await restoreLost(deps, v, entrants, stored);
  return { entrants, ranked: lost.length ? mergeRanked(ranked, rankAll(seed, lost)) : ranked, stored, restored: lost.length };
}

/**
 * Step 2's wait: copies the joins until shortly before beginAt, then waits for Redis time to
 * reach it. Returns how many entrants the copying put back.
 */
export async function waitForBegin(deps: DrawEntrantsDeps, v: QueueVoucher, beginMs: number, stored: Map<string, string>): Promise<number> {
  const restored = await copyUntil(deps, v, beginMs, stored);
  await untilRedisTime(deps.redis, beginMs);
  return restored;
}

/**
 * The draw's ranking: the entrants ranked before the start and those who joined since, read after
 * the freeze, with every entrant read. Join times only say which were read: a count that does not
 * add up (a clock set back gave a late join an earlier time, or Redis lost entrants meanwhile)
 * means all are read, the lost ones put back, and all ranked again.
 */
export async function finalRanking(deps: DrawEntrantsDeps, v: QueueVoucher, seed: string, early: EarlyRanking): Promise<FinalRanking> {
  const { redis, keys } = deps;
  const key = keys.queueEntrants(v.id);
  const read = early.entrants;
  const since = read.lastScore === null ? [...(await entrantsFrom(deps, v)).joined] : joinedOf(await redis.zrangebyscore(key, read.lastScore, '+inf', 'WITHSCORES'));
  const fresh = since.filter(([u]) => !read.joined.has(u));
  const total = await redis.zcard(key);
  if (read.joined.size + fresh.length !== total) {
    const all = await entrantsFrom(deps, v);
    const restored = (await restoreLost(deps, v, all, early.stored)).length;
    return { ranked: rankAll(seed, [...all.joined.keys()]), joined: all.joined, restored };
  }
  for (const [u, joinedUs] of fresh) read.joined.set(u, joinedUs);
  return { ranked: mergeRanked(early.ranked, rankAll(seed, fresh.map(([u]) => u))), joined: read.joined, restored: 0 };
}

/** Entrants by join time from index `from` on, with the last join time read. */
async function entrantsFrom({ redis, keys }: DrawEntrantsDeps, v: QueueVoucher, from = 0): Promise<Entrants> {
  const joined = new Map<string, string>();
  let lastScore: string | null = null;
  for (let at = from; ; at += ENTRANTS_STEP) {
    const part = await redis.zrange(keys.queueEntrants(v.id), String(at), String(at + ENTRANTS_STEP - 1), 'WITHSCORES');
    for (const [userId, joinedUs] of pairsOf(part)) joined.set(userId, joinedUs);
    if (part.length) lastScore = part[part.length - 1]!;
    if (part.length < 2 * ENTRANTS_STEP) return { joined, lastScore };
  }
}

/**
 * Puts the copied entrants Redis lacks (it forgot them after they were copied) back into its
 * pre-queue and into `read`; returns their ids. Restoring them, rather than drawing the union
 * of both stores, keeps Redis the one list that everything after reads: the rest of this draw,
 * a draw run again (which finds the copy replaced by the entrant list), the places and each
 * buyer's standing.
 */
async function restoreLost({ prequeue }: DrawEntrantsDeps, v: QueueVoucher, read: Entrants, stored: Map<string, string>): Promise<string[]> {
  const lost: Joined[] = [];
  for (const entrant of stored) if (!read.joined.has(entrant[0])) lost.push(entrant);
  for (const [userId, joinedUs] of lost) read.joined.set(userId, joinedUs);
  await prequeue.restore(v, lost);
  return lost.map(([userId]) => userId);
}

/**
 * The pre-queue is open until the freeze: while the draw waits for it, the joins since the last
 * copy are copied as the runner did (the voucher's lock is the draw's now), the last one well
 * before beginAt, and added to `stored`, which stays everything copied. Returns how many
 * entrants it put back.
 */
async function copyUntil({ redis, prequeue }: DrawEntrantsDeps, v: QueueVoucher, beginMs: number, stored: Map<string, string>): Promise<number> {
  const margin = COPY_EVERY_MS / 2;
  let restored = 0;
  for (let left = beginMs - (await redisNow(redis)); left > margin; left = beginMs - (await redisNow(redis))) {
    const sync = await prequeue.sync(v, beginMs - margin);
    restored += sync.restored;
    for (const [userId, joinedUs] of sync.copied) stored.set(userId, joinedUs);
    await sleep(Math.min(COPY_EVERY_MS, left - margin));
  }
  return restored;
}

async function untilRedisTime(redis: RedisClient, ms: number) {
  const deadline = performance.now() + CLOCK_WAIT_MS;
  for (let now = await redisNow(redis); now < ms; now = await redisNow(redis)) {
    if (performance.now() > deadline) throw new Error(`Redis time is ${ms - now} ms before beginAt`);
    await sleep(Math.min(5, ms - now));
  }
}
