// The draw of a queue voucher, at beginAt, by one runner (runner.ts holds the voucher's lock):
//  1. a little before beginAt, read the entrants so far (a bounded range at a time) and the
//     database's copy of the pre-queue (prequeue-copy.ts), put back into Redis the copied ones it
//     lost, and rank them all (draw-order.ts), which is most of the work, off the critical path;
//  2. copy the joins meanwhile, as the runner did, until Redis time reaches beginAt; close the
//     pre-queue (frozen: later joins are arrivals, placed after the drawn ones), rank the
//     entrants who joined since and merge (steps 1 and 2: draw-entrants.ts);
//  3. admit the first places (as many as there are units) through the admit script, as claims
//     (same checks, payment timeout, per-user limit and durability), each with the
//     Idempotency-Key "queue": a draw run again after a crash admits nobody twice; then copy the
//     entrants not copied yet, while the next steps run;
//  4. write every place, the waiting ones into the voucher's waitlist scored by place, and mark
//     the queue placed (place-4.lua places the arrivals with it: draw-places.ts), then open:
//     units left or coming back go to the next places (restock-8.lua);
//  5. store the entrant list (it replaces the pre-queue's copy), then publish the seed.
// Every step can run again: a draw that failed anywhere is run again by the next tick.
import type { VoucherVerifier } from '../vouchers/verifier.js';
import type { IdGenerator } from '../ids/worker-lease.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { type AdmitClaim, AdmitCode, type AdmissionScripts, MAX_ADMIT_BATCH } from '../infra/redis/scripts/admission.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import type { VoucherRedisState } from '../vouchers/redis-state.js';
import { finalRanking, rankEarly, redisNow, waitForBegin } from './draw-entrants.js';
import { announceDrawn, placeAll } from './draw-places.js';
import { createPrequeueCopy, type PrequeueCopy } from './prequeue-copy.js';
import { type Queue, type QueueVoucher, windowOf } from './queue.js';
import type { QueueRepository } from './repository.js';

/** The Idempotency-Key of a place's admission (records are per buyer and voucher already). */
export const QUEUE_ADMISSION_KEY = 'queue';

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

type DrawContext = DrawDeps & { prequeue: PrequeueCopy };

/** What a run of the draw before this one left in the queue hash (nothing, on the first run). */
interface EarlierRun {
  /** Every place written, the first `admitting` of them admitted, at `drawnAt` (ms). */
  placed: boolean;
  admitting: number;
  drawnAt: number;
  /** The first places admitted and the queue opened. */
  open: boolean;
}

/** An admitted place and its order. */
interface Admitted {
  userId: string;
  orderId: string;
}

export function createDraw(deps: DrawDeps): Draw {
  const context: DrawContext = { ...deps, prequeue: createPrequeueCopy(deps) };
  return (v) => draw(context, v);
}

/** Steps 1 to 5 above; null when the voucher has no draw or its draw is published. */
async function draw(c: DrawContext, v: QueueVoucher): Promise<DrawReport | null> {
  const row = await c.repository.draw(v.id);
  if (!row || row.drawnAt) return null;
  const beginMs = v.beginAt.getTime();
  const sinceBegin = async () => (await redisNow(c.redis)) - beginMs;
  const early = await rankEarly(c, v, row.seed);
  let restored = early.restored + (await waitForBegin(c, v, beginMs, early.stored));
  const earlier = await freeze(c, v);

  const final = await finalRanking(c, v, row.seed, early);
  restored += final.restored;
  const byPlace = final.ranked.map((r) => r.userId);
  const sortedAfterMs = await sinceBegin();
  const admitting = earlier.placed ? earlier.admitting : Math.min(byPlace.length, await stockOf(c, v));
  // The first places first: the buyers waiting for them are placed right after.
  const admitted = earlier.open ? [] : await admitFirst(c, v, byPlace.slice(0, admitting));
  const admittedAfterMs = await sinceBegin();
  // The entrants not copied yet (the last second's joins), while the places are written: a draw
  // run again after Redis lost its data meanwhile draws them too.
  const copying = c.prequeue.copy(v.id, [...final.joined].filter(([u]) => !early.stored.has(u)));
  copying.catch(() => undefined); // awaited before the entrant list is stored; a draw that fails first runs again
  const drawnAt = earlier.placed ? earlier.drawnAt : beginMs + sortedAfterMs;
  if (!earlier.placed) await placeAll(c, v, byPlace, admitting, drawnAt);
  if (!earlier.open) await c.redis.hset(c.keys.queue(v.id), 'open', 1, 'openedAt', await redisNow(c.redis), 'drawAdmitted', admitted.length);
  const promoted = await c.queue.promote(v);

  await copying;
  await publish(c, v, row.seed, byPlace, admitting, drawnAt);
  const publishedAfterMs = await sinceBegin();
  // Only by the run that admitted them: a run again after a crash does not know every order.
  if (!earlier.open) await announceDrawn(c.pubsub, v, byPlace, admitting, new Map(admitted.map((a) => [a.userId, a.orderId])));
  return { voucherId: v.id.toString(), entrants: byPlace.length, restored, admitted: admitted.length, promoted: promoted.length, sortedAfterMs, admittedAfterMs, publishedAfterMs };
}

/** Closes the pre-queue (a join from now on is an arrival); returns what a run before left. */
async function freeze({ redis, keys }: DrawContext, v: QueueVoucher): Promise<EarlierRun> {
  const queueKey = keys.queue(v.id);
  await redis.hset(queueKey, 'frozen', 1);
  await redis.expireat(queueKey, windowOf(v).expireAtSeconds);
  const [placed, admitting, open, drawnAt] = await redis.hmget(queueKey, 'placed', 'admitting', 'open', 'drawnAt');
  return { placed: placed === '1', admitting: Number(admitting), drawnAt: Number(drawnAt ?? 0), open: open === '1' };
}

async function stockOf({ redisState }: DrawContext, v: QueueVoucher): Promise<number> {
  if ((await redisState.available(v)) === null) await redisState.rewarm(v);
  return (await redisState.available(v)) ?? 0;
}

/** Step 3: the first places through the admit script, in batches sent together. */
async function admitFirst(c: DrawContext, v: QueueVoucher, first: string[]): Promise<Admitted[]> {
  const batches: Promise<Admitted[]>[] = [];
  for (let i = 0; i < first.length; i += MAX_ADMIT_BATCH) batches.push(admitBatch(c, v, first.slice(i, i + MAX_ADMIT_BATCH), i + 1));
  const admitted = (await Promise.all(batches)).flat();
  await c.redis.expireat(c.keys.queueAdmitted(v.id), windowOf(v).expireAtSeconds);
  return admitted;
}

/** One batch of first places through the admit script; the admitted ones with their orders. */
async function admitBatch(c: DrawContext, v: QueueVoucher, users: string[], firstPlace: number): Promise<Admitted[]> {
  const { redis, keys, admitMany, redisState, verifier, ids } = c;
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
  const admitted: Admitted[] = [];
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

/** Step 5: the entrant list stored (it replaces the pre-queue's copy), then the seed made public. */
async function publish({ redis, keys, repository }: DrawContext, v: QueueVoucher, seed: string, byPlace: string[], admitting: number, drawnAt: number) {
  await repository.saveEntrants(v.id, byPlace);
  await repository.publish(v.id, { drawnAt: new Date(drawnAt), entrants: byPlace.length, admitted: admitting });
  await redis.hset(keys.queue(v.id), 'seed', seed);
}
