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
import { closeConnection, dropConnection, pubSubOf } from '../infra/redis/connections.js';

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
  let subscriber: RedisClient | null = null;
  let subscribed = false;
  let closed = false;

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

  // One subscriber connection, opened by the first process-local user (API processes only); a
  // failed SUBSCRIBE is forgotten so the next call tries again.
  function subscribe() {
    const { connection: s, subscribed: subscribing } = pubSub.subscriber(channel, 'seckill-units-back', (message) => {
      for (const part of message.split(',')) {
        const voucherId = parseId(part);
        if (voucherId !== null) hear(voucherId);
      }
    });
    subscriber = s;
    s.on('error', (err: Error) => log.warn({ err }, 'units-back subscriber error'));
    subscribing.then(
      () => void (subscribed = subscriber === s),
      (err: unknown) => {
        log.warn({ err }, 'units-back SUBSCRIBE failed');
        if (subscriber === s) subscriber = null;
        dropConnection(s);
      },
    );
  }

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
      if (!subscriber && !closed) subscribe();
      return subscribed;
    },
    async close() {
      closed = true;
      if (flushing) {
        clearImmediate(flushing);
        await flush();
      }
      const s = subscriber;
      subscriber = null;
      subscribed = false;
      if (s) await closeConnection(s);
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
