// "Units of voucher X are back on sale in Redis": announced by whatever gives units back (the
// release relay after a cancel or expiry, pipeline compensation of a failed order,
// reconciliation) on one pub/sub channel, and heard by every API process, whose sold-out flag for
// X then clears at once. Delivery is at most once (pub/sub); the flags' own expiry is the
// guarantee, this only makes it fast.
import type { RedisClient } from '../infra/redis/client.js';
import type { Logger } from 'pino';
import { parseId } from '../id-text.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import { pubSubOf } from '../infra/redis/connections.js';
import { lazySubscriber } from '../infra/redis/lazy-subscriber.js';

export type UnitsBackListener = (voucherId: bigint) => void;

export interface UnitsBack {
  /**
   * Units of the voucher are back in Redis: this process hears it at once, the others through
   * pub/sub (one message per event-loop turn for all vouchers announced in it). Never throws.
   */
  announce(voucherId: bigint): void;
  /** Calls `listener` for every voucher announced, here or by another process. */
  onBack(listener: UnitsBackListener): void;
  /** Starts listening to other processes if not yet; true once their announcements arrive. */
  listening(): boolean;
  close(): Promise<void>;
}

export function createUnitsBack({ redis, keys, log }: { redis: RedisClient; keys: KeySpace; log: Logger }): UnitsBack {
  const channel = keys.unitsBack();
  const pubSub = pubSubOf(redis);
  const listeners: UnitsBackListener[] = [];
  const pending = new Set<bigint>();
  let flushing: NodeJS.Immediate | null = null;

  const hear = (voucherId: bigint) => {
    for (const listener of listeners) listener(voucherId);
  };

  async function flush() {
    flushing = null;
    const message = [...pending].join(',');
    pending.clear();
    try {
      await pubSub.publish(channel, message);
    } catch (err) {
      log.warn({ err }, 'units-back announcement not published; other processes notice when their sold-out flags expire');
    }
  }

  // Opened by the first process-local user (API processes only).
  const subscriber = lazySubscriber({
    redis,
    log,
    channel,
    connectionName: 'seckill-units-back',
    onMessage(message) {
      for (const part of message.split(',')) {
        const voucherId = parseId(part);
        if (voucherId !== null) hear(voucherId);
      }
    },
  });

  return {
    announce(voucherId) {
      hear(voucherId);
      pending.add(voucherId);
      flushing ??= setImmediate(() => void flush());
    },
    onBack(listener) {
      listeners.push(listener);
    },
    listening() {
      // A failure is logged by the subscriber; the next call tries again.
      if (!subscriber.subscribed) subscriber.subscribe().catch(() => undefined);
      return subscriber.subscribed;
    },
    async close() {
      if (flushing) {
        clearImmediate(flushing);
        await flush();
      }
      await subscriber.close();
    },
  };
}

/** The scripts that put units on sale (warm, which rebuilds; restock; settle when it compensates) announce each voucher. */
export function announcingUnitsBack(scripts: Scripts, unitsBack: Pick<UnitsBack, 'announce'>): Scripts {
  return {
    ...scripts,
    async warm(input) {
      const created = await scripts.warm(input);
      if (created) unitsBack.announce(input.voucherId);
      return created;
    },
    async restock(input) {
      const result = await scripts.restock(input);
      if (result.kind === 'restocked') unitsBack.announce(input.voucherId);
      return result;
    },
    async settle(group, shard, orders) {
      const settled = await scripts.settle(group, shard, orders);
      for (const [i, o] of orders.entries()) if (settled[i] && o.restoreStock) unitsBack.announce(o.voucherId);
      return settled;
    },
  };
}
