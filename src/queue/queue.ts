// Use cases of a queue voucher's queue, for buyers: join it, see where you stand, and see the
// queue as a whole. A join is one Lua call on the voucher's slot (queue-7.lua) and writes nothing
// to the database: before the draw it only adds the buyer to the pre-queue. Once the draw is done,
// a buyer who joins is appended, and admitted at once while units are left (the waitlist's
// promotion, restock-8.lua, as for every later place). The draw itself is draw.ts.
import { AppError } from '../errors.js';
import type { IdGenerator } from '../ids/worker-lease.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import type { QueueStanding, QueueWindow } from '../infra/redis/scripts/queue.js';
import type { Promotion } from '../infra/redis/scripts/voucher-state.js';
import type { OrderPubSub, QueueEvent, Unpublished } from '../orders/order-pubsub.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import { batchQueueCalls } from './queue-batch.js';
import { RETAIN_AFTER_END_MS, type VoucherRedisState } from '../vouchers/redis-state.js';
import type { Voucher } from '../vouchers/voucher.js';

/** Fresh order ids per promotion call: more than a join or a release needs, few enough to be cheap. */
const PROMOTIONS_PER_CALL = 16;
/** Queue events per published message, when many places change at once (the draw, the closing). */
export const EVENTS_PER_MESSAGE = 1_000;

/** What a buyer sees of their place (the contract's shape). */
export interface QueueView {
  state: QueueStanding['state'];
  position: number | null;
  ahead: number | null;
  etaSeconds: number | null;
  orderId: string | null;
}

export interface QueueSummary {
  commitment: string;
  seed: string | null;
  drawnAt: string | null;
  /** Entrants of the pre-queue (drawn, once the draw placed them). */
  entrants: number;
  /** Buyers who joined after the pre-queue closed, placed after the drawn ones. */
  appended: number;
  /** Places admitted so far, and by the draw itself. */
  admitted: number;
  drawAdmitted: number;
  /** Places still waiting when the queue closed (0 while it is open). */
  closed: number;
}

export type QueueVoucher = Voucher & { queue: NonNullable<Voucher['queue']> };

export const windowOf = (v: QueueVoucher): QueueWindow => ({
  voucherId: v.id,
  opensAtMs: v.queue.opensAt.getTime(),
  beginAtMs: v.beginAt.getTime(),
  endAtMs: v.endAt.getTime(),
  expireAtSeconds: Math.ceil((v.endAt.getTime() + RETAIN_AFTER_END_MS) / 1000),
});

/**
 * Seconds until a waiting place is admitted, at the rate places were admitted since the draw's
 * own admissions (units that came back); null while none was.
 */
export function etaSeconds(s: QueueStanding): number | null {
  if (s.state !== 'waiting' || s.openedAt === null || s.ahead === null) return null;
  const since = s.admitted - s.drawAdmitted;
  const seconds = (s.now - s.openedAt) / 1000;
  if (since <= 0 || seconds <= 0) return null;
  return Math.ceil((s.ahead + 1) / (since / seconds));
}

export const viewOf = (s: QueueStanding): QueueView => ({
  state: s.state,
  position: s.place,
  ahead: s.state === 'admitted' ? 0 : s.ahead,
  etaSeconds: etaSeconds(s),
  orderId: s.orderId,
});

export const queueEvent = (voucherId: bigint, userId: string, view: QueueView): Unpublished<QueueEvent> => ({
  type: 'queue',
  voucherId: voucherId.toString(),
  userId,
  ...view,
});

export interface QueueDeps {
  redis: RedisClient;
  keys: KeySpace;
  scripts: Scripts;
  directory: VoucherDirectory;
  redisState: VoucherRedisState;
  pubsub: OrderPubSub;
  ids: () => Promise<IdGenerator>;
  /** Told of each join answered (the joins counter). */
  onJoin?(): void;
  /** Told of every place admitted after the draw's own admissions. */
  onAdmitted?(places: number): void;
}

export interface Queue {
  join(voucherId: bigint, userId: bigint): Promise<QueueView>;
  me(voucherId: bigint, userId: bigint): Promise<QueueView>;
  summary(voucherId: bigint): Promise<QueueSummary>;
  /** The voucher, if it has a queue: VOUCHER_NOT_FOUND or QUEUE_NOT_OFFERED otherwise. */
  voucher(voucherId: bigint): Promise<QueueVoucher>;
  /** Admits the next places while units are left; returns the promotions. */
  promote(voucher: QueueVoucher): Promise<Promotion[]>;
  /** Publishes the queue events of admitted places (promoted orders' `promoted` events are the caller's). */
  announceAdmitted(voucher: Voucher, promotions: Promotion[]): Promise<void>;
}

const REFUSED = {
  NOT_STARTED: (v: QueueVoucher) => new AppError('NOT_STARTED', `the queue opens at ${v.queue.opensAt.toISOString()}`),
  ENDED: (v: QueueVoucher) => new AppError('ENDED', `the sale ended at ${v.endAt.toISOString()}`),
  SOLD_OUT: () => new AppError('SOLD_OUT', 'sold out: the queue is closed', { waitlisted: false }),
  NOT_IN_QUEUE: (v: QueueVoucher) => new AppError('NOT_IN_QUEUE', `you are not in the queue of voucher ${v.id}`),
} as const;

export function createQueue(deps: QueueDeps): Queue {
  const { directory, scripts, onJoin } = deps;
  const call = batchQueueCalls(scripts);
  // The window of a voucher is built once, not on every join.
  const windows = new WeakMap<QueueVoucher, QueueWindow>();
  const windowFor = (v: QueueVoucher) => {
    let w = windows.get(v);
    if (!w) windows.set(v, (w = windowOf(v)));
    return w;
  };
  const voucher = (voucherId: bigint) => queueVoucher(directory, voucherId);
  const promote = (v: QueueVoucher) => promoteAll(deps, v);

  async function standing(mode: 'join' | 'look', v: QueueVoucher, userId: bigint): Promise<QueueStanding> {
    const answer = await call(mode, windowFor(v), userId);
    if (answer.code !== 'OK') throw REFUSED[answer.code](v);
    return answer.standing;
  }

  return {
    voucher,
    promote,
    announceAdmitted: (v, promotions) => announceAdmitted(deps, v, promotions),
    async join(voucherId, userId) {
      const v = await voucher(voucherId);
      let s = await standing('join', v, userId);
      onJoin?.();
      if (s.promote) {
        await promote(v);
        s = await standing('look', v, userId);
      }
      return viewOf(s);
    },
    async me(voucherId, userId) {
      return viewOf(await standing('look', await voucher(voucherId), userId));
    },
    summary: async (voucherId) => summaryOf(deps, await voucher(voucherId)),
  };
}

async function queueVoucher(directory: VoucherDirectory, voucherId: bigint): Promise<QueueVoucher> {
  const v = await directory.get(voucherId);
  if (!v) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${voucherId} not found`);
  if (!v.queue) throw new AppError('QUEUE_NOT_OFFERED', `voucher ${voucherId} has no queue: claim it directly`);
  return v as QueueVoucher;
}

/** Admits the next places while units are left, a call of PROMOTIONS_PER_CALL at a time, and tells of them. */
async function promoteAll(deps: QueueDeps, v: QueueVoucher): Promise<Promotion[]> {
  const { scripts, redisState, pubsub, ids, onAdmitted } = deps;
  const all: Promotion[] = [];
  for (;;) {
    const generator = await ids();
    const input = { voucherId: v.id, orderId: '', userId: '', quantity: 0, queue: true, promotionIds: Array.from({ length: PROMOTIONS_PER_CALL }, () => generator.next()) };
    let result = await scripts.restock(input);
    if (result.kind === 'missing') {
      await redisState.rewarm(v);
      result = await scripts.restock(input);
    }
    const promotions = result.kind === 'restocked' ? result.promotions : [];
    all.push(...promotions);
    if (promotions.length < PROMOTIONS_PER_CALL) break;
  }
  if (all.length) {
    onAdmitted?.(all.length);
    await pubsub.publish(all.map((p) => ({ type: 'promoted' as const, status: 'processing', voucherId: v.id.toString(), ...p })));
    await announceAdmitted(deps, v, all);
  }
  return all;
}

async function announceAdmitted({ redis, keys, pubsub }: Pick<QueueDeps, 'redis' | 'keys' | 'pubsub'>, v: Voucher, promotions: Promotion[]) {
  if (promotions.length === 0 || !pubsub.wanted()) return;
  const places = await redis.hmget(keys.queuePlaces(v.id), ...promotions.map((p) => p.userId));
  await pubsub.publish(
    promotions.map((p, i) => queueEvent(v.id, p.userId, { state: 'admitted', position: places[i] ? Number(places[i]) : null, ahead: 0, etaSeconds: null, orderId: p.orderId })),
  );
}

async function summaryOf({ redis, keys }: Pick<QueueDeps, 'redis' | 'keys'>, v: QueueVoucher): Promise<QueueSummary> {
  const [fields, entrants, admitted] = await Promise.all([
    redis.hmget(keys.queue(v.id), 'placed', 'n', 'late', 'seed', 'drawnAt', 'drawAdmitted', 'closed'),
    redis.zcard(keys.queueEntrants(v.id)),
    redis.hlen(keys.queueAdmitted(v.id)),
  ]);
  const [placed, n, late, seed, drawnAt, drawAdmitted, closed] = fields;
  return {
    commitment: v.queue.commitment,
    seed: seed ?? null,
    drawnAt: seed && drawnAt ? new Date(Number(drawnAt)).toISOString() : null,
    entrants: placed === '1' ? Number(n) : entrants,
    appended: Number(late ?? 0),
    admitted,
    drawAdmitted: Number(drawAdmitted ?? 0),
    closed: Number(closed ?? 0),
  };
}
