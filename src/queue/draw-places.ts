// The drawn places in Redis (step 4 of draw.ts): every place, the waiting ones in the voucher's
// waitlist scored by place, then the queue marked placed (place-4.lua places the arrivals with
// it); and, once the draw is published, every entrant's new state told to those listening.
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import { ENTRANTS_STEP } from './prequeue-copy.js';
import { EVENTS_PER_MESSAGE, type QueueVoucher, queueEvent, windowOf } from './queue.js';

export interface DrawPlacesDeps {
  redis: RedisClient;
  keys: KeySpace;
  scripts: Pick<Scripts, 'place'>;
}

/** Writes every place, the first `admitting` admitted and the rest waiting, and marks the queue placed at `drawnAt` (ms). */
export async function placeAll(deps: DrawPlacesDeps, v: QueueVoucher, byPlace: string[], admitting: number, drawnAt: number): Promise<void> {
  await writePlaces(deps, v, byPlace, admitting);
  await deps.scripts.place(v.id, byPlace.length, admitting, drawnAt, windowOf(v).expireAtSeconds);
}

/** Every place, and the waiting ones (after `admitting`) into the waitlist, in bounded commands sent together. */
async function writePlaces({ redis, keys }: DrawPlacesDeps, v: QueueVoucher, byPlace: string[], admitting: number) {
  const expireAt = windowOf(v).expireAtSeconds;
  const writes: Promise<unknown>[] = [];
  for (let i = 0; i < byPlace.length; i += ENTRANTS_STEP) {
    const part = byPlace.slice(i, i + ENTRANTS_STEP);
    writes.push(redis.hset(keys.queuePlaces(v.id), Object.fromEntries(part.map((u, j) => [u, i + j + 1]))));
    const waiting = part.flatMap((u, j) => (i + j >= admitting ? [i + j + 1, u] : []));
    if (waiting.length) writes.push(redis.zadd(keys.waitlist(v.id), ...waiting));
  }
  await Promise.all(writes);
  await Promise.all([redis.expireat(keys.queuePlaces(v.id), expireAt), redis.expireat(keys.waitlist(v.id), expireAt)]);
}

/** Every entrant's new state, to those listening (the first places admitted, the rest waiting). */
export async function announceDrawn(pubsub: OrderPubSub, v: QueueVoucher, byPlace: string[], admitting: number, admitted: Map<string, string>): Promise<void> {
  for (let i = 0; i < byPlace.length && pubsub.wanted(); i += EVENTS_PER_MESSAGE) {
    const events = byPlace.slice(i, i + EVENTS_PER_MESSAGE).map((userId, j) => {
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
