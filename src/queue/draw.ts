// The draw of a queue voucher, at beginAt, by one runner (runner.ts holds the voucher's lock):
//  1. a little before beginAt, read the entrants so far (a bounded range at a time) and the
//     database's copy of the pre-queue (prequeue-copy.ts), put back into Redis the copied ones it
//     lost, and rank them all (draw-order.ts), which is most of the work, off the critical path;
//  2. copy the joins meanwhile, as the runner did, until Redis time reaches beginAt; close the
//     pre-queue (frozen: later joins are arrivals, placed after the drawn ones), rank the
//     entrants who joined since and merge;
//  3. admit the first places (as many as there are units) through the admit script, as claims
//     (same checks, payment timeout, per-user limit and durability), each with the
//     Idempotency-Key "queue": a draw run again after a crash admits nobody twice; then copy the
//     entrants not copied yet, while the next steps run;
//  4. write every place, the waiting ones into the voucher's waitlist scored by place, and mark
//     the queue placed (place-4.lua places the arrivals with it), then open: units left or
//     coming back go to the next places (restock-8.lua);
//  5. store the entrant list (it replaces the pre-queue's copy), then publish the seed.
// Every step can run again: a draw that failed anywhere is run again by the next tick.
import { setTimeout as sleep } from 'node:timers/promises';
import type { VoucherVerifier } from '../vouchers/verifier.js';
import type { IdGenerator } from '../ids/worker-lease.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { type AdmitClaim, AdmitCode, type AdmissionScripts, MAX_ADMIT_BATCH } from '../infra/redis/scripts/admission.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import type { VoucherRedisState } from '../vouchers/redis-state.js';
import { mergeRanked, type Ranked, rankAll } from './draw-order.js';
import { createPrequeueCopy, joinedOf } from './prequeue-copy.js';
import { type Queue, type QueueVoucher, queueEvent, windowOf } from './queue.js';
import type { Joined, QueueRepository } from './repository.js';

/** Members read, or places written, per command. */
const CHUNK = 5_000;
/** The Idempotency-Key of a place's admission (records are per buyer and voucher already). */
export const QUEUE_ADMISSION_KEY = 'queue';
/** Events per published message at the draw. */
const EVENTS_PER_MESSAGE = 1_000;
/** Longest wait for Redis time to reach beginAt (the process clock ahead of Redis's). */
const CLOCK_WAIT_MS = 10_000;
/** How often the pre-queue is copied while the draw waits for beginAt (as the runner's looks). */
const COPY_EVERY_MS = 1_000;

export interface DrawReport {
  voucherId: string;
  entrants: number;
  /** Entrants Redis had lost that the draw put back from the database's copy (drawn with the others). */
  restored: number;
  /** Places admitted by the draw (the first ones), and after it in the same run (arrivals). */
  admitted: number;
  promoted: number;
  /** From beginAt (Redis time) to the entrants sorted, to the first places admitted, and to the draw published (ms). */
  sortedAfterMs: number;
  admittedAfterMs: number;
  publishedAfterMs: number;
}

export interface DrawDeps {
  redis: RedisClient;
  keys: KeySpace;
  scripts: Scripts;
  /** The admit call that keeps ADMIT_DURABILITY's promise (claims/durability.ts). */
  admitMany: AdmissionScripts['admitMany'];
  repository: QueueRepository;
  redisState: VoucherRedisState;
  verifier: Pick<VoucherVerifier, 'verify'>;
  queue: Queue;
  pubsub: OrderPubSub;
  ids: () => Promise<IdGenerator>;
}

export type Draw = (voucher: QueueVoucher) => Promise<DrawReport | null>;

/** The Redis pre-queue as read: user id -> join time (µs), and the last join time read. */
interface Entrants {
  joined: Map<string, string>;
  lastScore: string | null;
}

export function createDraw(deps: DrawDeps): Draw {
  const { redis, keys, scripts, admitMany, repository, redisState, verifier, queue, pubsub, ids } = deps;
  const prequeue = createPrequeueCopy({ redis, keys, repository });

  async function redisNow(): Promise<number> {
    const [s, us] = await redis.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  async function untilRedisTime(ms: number) {
    const deadline = performance.now() + CLOCK_WAIT_MS;
    for (let now = await redisNow(); now < ms; now = await redisNow()) {
      if (performance.now() > deadline) throw new Error(`Redis time is ${ms - now} ms before beginAt`);
      await sleep(Math.min(5, ms - now));
    }
  }

  /** Entrants by join time from index `from` on, with the last join time read. */
  async function entrantsFrom(v: QueueVoucher, from = 0): Promise<Entrants> {
    const joined = new Map<string, string>();
    let lastScore: string | null = null;
    for (let at = from; ; at += CHUNK) {
      const part = await redis.zrange(keys.queueEntrants(v.id), String(at), String(at + CHUNK - 1), 'WITHSCORES');
      for (let i = 0; i < part.length; i += 2) joined.set(part[i]!, part[i + 1]!);
      if (part.length) lastScore = part[part.length - 1]!;
      if (part.length < 2 * CHUNK) return { joined, lastScore };
    }
  }

  /**
   * Puts the copied entrants Redis lacks (it forgot them after they were copied) back into its
   * pre-queue and into `read`; returns their ids. Restoring them, rather than drawing the union
   * of both stores, keeps Redis the one list that everything after reads: the rest of this draw,
   * a draw run again (which finds the copy replaced by the entrant list), the places and each
   * buyer's standing.
   */
  async function restoreLost(v: QueueVoucher, read: Entrants, stored: Map<string, string>): Promise<string[]> {
    const lost: Joined[] = [];
    for (const entrant of stored) if (!read.joined.has(entrant[0])) lost.push(entrant);
    for (const [userId, joinedUs] of lost) read.joined.set(userId, joinedUs);
    await prequeue.restore(v, lost);
    return lost.map(([userId]) => userId);
  }

  /**
   * The drawn order: the entrants ranked before the start (`early`) and those who joined since,
   * read after the freeze, with every entrant read. Join times only say which were read: a count
   * that does not add up (a clock set back gave a late join an earlier time, or Redis lost
   * entrants meanwhile) means all are read, the lost ones put back, and all ranked again.
   */
  async function finalOrder(v: QueueVoucher, seed: string, early: Entrants, earlyRanked: Ranked[], stored: Map<string, string>) {
    const key = keys.queueEntrants(v.id);
    const since = early.lastScore === null ? [...(await entrantsFrom(v)).joined] : joinedOf(await redis.zrangebyscore(key, early.lastScore, '+inf', 'WITHSCORES'));
    const fresh = since.filter(([u]) => !early.joined.has(u));
    const total = await redis.zcard(key);
    if (early.joined.size + fresh.length !== total) {
      const all = await entrantsFrom(v);
      const restored = (await restoreLost(v, all, stored)).length;
      return { ranked: rankAll(seed, [...all.joined.keys()]), entrants: all.joined, restored };
    }
    for (const [u, joinedUs] of fresh) early.joined.set(u, joinedUs);
    return { ranked: mergeRanked(earlyRanked, rankAll(seed, fresh.map(([u]) => u))), entrants: early.joined, restored: 0 };
  }

  /**
   * The pre-queue is open until the freeze: while the draw waits for it, the joins since the last
   * copy are copied as the runner did (the voucher's lock is the draw's now), the last one well
   * before beginAt, and added to `stored`, which stays everything copied. Returns how many
   * entrants it put back.
   */
  async function copyUntil(v: QueueVoucher, beginMs: number, stored: Map<string, string>): Promise<number> {
    const margin = COPY_EVERY_MS / 2;
    let restored = 0;
    for (let left = beginMs - (await redisNow()); left > margin; left = beginMs - (await redisNow())) {
      const sync = await prequeue.sync(v, beginMs - margin);
      restored += sync.restored;
      for (const [userId, joinedUs] of sync.copied) stored.set(userId, joinedUs);
      await sleep(Math.min(COPY_EVERY_MS, left - margin));
    }
    return restored;
  }

  async function stockOf(v: QueueVoucher): Promise<number> {
    if ((await redisState.available(v)) === null) await redisState.rewarm(v);
    return (await redisState.available(v)) ?? 0;
  }

  /** Every place, and the waiting ones (after `admitting`) into the waitlist, in bounded commands sent together. */
  async function writePlaces(v: QueueVoucher, order: string[], admitting: number) {
    const expireAt = windowOf(v).expireAtSeconds;
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < order.length; i += CHUNK) {
      const part = order.slice(i, i + CHUNK);
      writes.push(redis.hset(keys.queuePlaces(v.id), Object.fromEntries(part.map((u, j) => [u, i + j + 1]))));
      const waiting = part.flatMap((u, j) => (i + j >= admitting ? [i + j + 1, u] : []));
      if (waiting.length) writes.push(redis.zadd(keys.waitlist(v.id), ...waiting));
    }
    await Promise.all(writes);
    await Promise.all([redis.expireat(keys.queuePlaces(v.id), expireAt), redis.expireat(keys.waitlist(v.id), expireAt)]);
  }

  /** One batch of first places through the admit script; the admitted ones with their orders. */
  async function admitBatch(v: QueueVoucher, users: string[], firstPlace: number): Promise<{ userId: string; orderId: string }[]> {
    const generator = await ids();
    const claims: AdmitClaim[] = users.map((u) => ({ userId: BigInt(u), orderId: generator.next(), quantity: 1, idempotencyKey: QUEUE_ADMISSION_KEY }));
    let results = await admitMany(v.id, claims, { enrol: false });
    if (results.some((r) => r.code === AdmitCode.MISSING)) {
      await redisState.rewarm(v);
      results = await admitMany(v.id, claims, { enrol: false });
    }
    if (results.some((r) => r.code === AdmitCode.UNVERIFIED)) {
      if (!(await verifier.verify(v))) throw new Error(`voucher ${v.id} could not be verified for its draw`);
      results = await admitMany(v.id, claims, { enrol: false });
    }
    const admitted: { userId: string; orderId: string }[] = [];
    const unitless: (string | number)[] = [];
    results.forEach((r, i) => {
      if (r.code === AdmitCode.ADMITTED || r.code === AdmitCode.REPLAYED) admitted.push({ userId: users[i]!, orderId: r.orderId });
      // No unit for it after all (a repair took one): it waits first in line.
      else if (r.code === AdmitCode.SEGMENT_SHORT || r.code === AdmitCode.SOLD_OUT) unitless.push(firstPlace + i, users[i]!);
      else if (r.code === AdmitCode.MISSING || r.code === AdmitCode.UNVERIFIED) throw new Error(`voucher ${v.id}: state not ready for its draw`);
      // Otherwise the place cannot be admitted at all (ended, over the limit): it closes.
    });
    const writes: Promise<unknown>[] = [];
    if (admitted.length) {
      writes.push(redis.hset(keys.queueAdmitted(v.id), Object.fromEntries(admitted.map((a) => [a.userId, a.orderId]))));
      // A draw run again: a place admitted now may have been put back in line by the first run.
      writes.push(redis.zrem(keys.waitlist(v.id), ...admitted.map((a) => a.userId)));
    }
    if (unitless.length) writes.push(redis.zadd(keys.waitlist(v.id), ...unitless));
    await Promise.all(writes);
    return admitted;
  }

  async function admitFirst(v: QueueVoucher, first: string[]) {
    const batches: Promise<{ userId: string; orderId: string }[]>[] = [];
    for (let i = 0; i < first.length; i += MAX_ADMIT_BATCH) batches.push(admitBatch(v, first.slice(i, i + MAX_ADMIT_BATCH), i + 1));
    const admitted = (await Promise.all(batches)).flat();
    await redis.expireat(keys.queueAdmitted(v.id), windowOf(v).expireAtSeconds);
    return admitted;
  }

  /** Every entrant's new state, to those listening (the first places admitted, the rest waiting). */
  async function announce(v: QueueVoucher, order: string[], admitting: number, admitted: Map<string, string>) {
    for (let i = 0; i < order.length && pubsub.wanted(); i += EVENTS_PER_MESSAGE) {
      const events = order.slice(i, i + EVENTS_PER_MESSAGE).map((userId, j) => {
        const place = i + j + 1;
        const orderId = admitted.get(userId) ?? null;
        return queueEvent(v.id, userId, {
          state: orderId ? 'admitted' : 'waiting',
          position: place,
          ahead: orderId ? 0 : Math.max(0, place - 1 - admitting),
          etaSeconds: null,
          orderId,
        });
      });
      await pubsub.publish(events);
    }
  }

  return async function draw(v) {
    const row = await repository.draw(v.id);
    if (!row || row.drawnAt) return null;
    const beginMs = v.beginAt.getTime();
    // The copy is read while the Redis entrants are read and ranked.
    const storedRead = prequeue.stored(v.id);
    storedRead.catch(() => undefined); // awaited below
    const early = await entrantsFrom(v);
    const ranked = rankAll(row.seed, [...early.joined.keys()]);
    const stored = await storedRead;
    const lost = await restoreLost(v, early, stored);
    const earlyRanked = lost.length ? mergeRanked(ranked, rankAll(row.seed, lost)) : ranked;
    let restored = lost.length + (await copyUntil(v, beginMs, stored));
    await untilRedisTime(beginMs);
    const queueKey = keys.queue(v.id);
    await redis.hset(queueKey, 'frozen', 1);
    await redis.expireat(queueKey, windowOf(v).expireAtSeconds);
    const [placed, placedAdmitting, open, placedAt] = await redis.hmget(queueKey, 'placed', 'admitting', 'open', 'drawnAt');

    const final = await finalOrder(v, row.seed, early, earlyRanked, stored);
    restored += final.restored;
    const order = final.ranked.map((r) => r.userId);
    const sortedAfterMs = (await redisNow()) - beginMs;
    const admitting = placed === '1' ? Number(placedAdmitting) : Math.min(order.length, await stockOf(v));
    // The first places first: the buyers waiting for them are placed right after.
    let admitted: { userId: string; orderId: string }[] = [];
    if (open !== '1') admitted = await admitFirst(v, order.slice(0, admitting));
    const admittedAfterMs = (await redisNow()) - beginMs;
    // The entrants not copied yet (the last second's joins), while the places are written: a draw
    // run again after Redis lost its data meanwhile draws them too.
    const copying = prequeue.copy(v.id, [...final.entrants].filter(([u]) => !stored.has(u)));
    copying.catch(() => undefined); // awaited before the entrant list is stored; a draw that fails first runs again
    let drawnAt = Number(placedAt ?? 0);
    if (placed !== '1') {
      drawnAt = beginMs + sortedAfterMs;
      await writePlaces(v, order, admitting);
      await scripts.place(v.id, order.length, admitting, drawnAt, windowOf(v).expireAtSeconds);
    }
    if (open !== '1') await redis.hset(queueKey, 'open', 1, 'openedAt', await redisNow(), 'drawAdmitted', admitted.length);
    const promoted = await queue.promote(v);

    await copying;
    await repository.saveEntrants(v.id, order);
    await repository.publish(v.id, { drawnAt: new Date(drawnAt), entrants: order.length, admitted: admitting });
    await redis.hset(queueKey, 'seed', row.seed);
    const publishedAfterMs = (await redisNow()) - beginMs;
    // Only by the run that admitted them: a run again after a crash does not know every order.
    if (open !== '1') await announce(v, order, admitting, new Map(admitted.map((a) => [a.userId, a.orderId])));
    return { voucherId: v.id.toString(), entrants: order.length, restored, admitted: admitted.length, promoted: promoted.length, sortedAfterMs, admittedAfterMs, publishedAfterMs };
  };
}
