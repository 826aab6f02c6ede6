// A queue closes when no unit can come back for its waiting places: every unit is paid, or the
// sale ended. Closing marks it once (the places still waiting are counted and told), after which a
// new buyer hears SOLD_OUT and every waiting place reads `closed`. A place past the end reads
// `closed` from the queue script's own clock even before this runs.
import type { Logger } from 'pino';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { pairsOf } from '../infra/redis/walk.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import { EVENTS_PER_MESSAGE, type QueueVoucher, queueEvent, windowOf } from './queue.js';
import type { QueueRepository } from './repository.js';

export interface ClosingDeps {
  redis: RedisClient;
  keys: KeySpace;
  repository: QueueRepository;
  directory: VoucherDirectory;
  pubsub: OrderPubSub;
  log: Logger;
}

export interface QueueClosing {
  /** Closes the queue (once); resolves to the places still waiting then, or null when it was closed before. */
  close(voucher: QueueVoucher): Promise<number | null>;
  /** After a payment: closes the voucher's queue when every unit is paid. */
  afterPaid(voucherId: bigint): Promise<void>;
}

export function createQueueClosing({ redis, keys, repository, directory, pubsub, log }: ClosingDeps): QueueClosing {
  async function announceClosed(v: QueueVoucher) {
    const waitlist = keys.waitlist(v.id);
    for (let from = 0; pubsub.wanted(); from += EVENTS_PER_MESSAGE) {
      const part = await redis.zrange(waitlist, String(from), String(from + EVENTS_PER_MESSAGE - 1), 'WITHSCORES');
      const events = [...pairsOf(part)].map(([userId, place]) => queueEvent(v.id, userId, { state: 'closed', position: Number(place), ahead: null, etaSeconds: null, orderId: null }));
      await pubsub.publish(events);
      if (part.length < 2 * EVENTS_PER_MESSAGE) return;
    }
  }

  async function close(v: QueueVoucher): Promise<number | null> {
    const waiting = await redis.zcard(keys.waitlist(v.id));
    const first = (await redis.hsetnx(keys.queue(v.id), 'closed', waiting)) === 1;
    if (first) {
      await redis.hset(keys.queue(v.id), 'closedAt', Date.now());
      await redis.expireat(keys.queue(v.id), windowOf(v).expireAtSeconds);
    }
    await repository.close(v.id);
    if (!first) return null;
    await announceClosed(v);
    return waiting;
  }

  return {
    close,
    async afterPaid(voucherId) {
      const v = await directory.getStored(voucherId);
      if (!v?.queue) return;
      try {
        if ((await repository.paidUnits(v.id)) >= v.initialStock) await close(v as QueueVoucher);
      } catch (err) {
        // The runner closes it at the end of the sale at the latest.
        log.warn({ err, voucherId: voucherId.toString() }, 'queue not closed after the last payment');
      }
    },
  };
}
