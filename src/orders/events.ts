// Order events for server-sent events: every process publishes what happened to orders on one
// Redis pub/sub channel (one message per batch, a JSON array), and every API process that has
// listeners subscribes and hands each event to the listeners of its user. Delivery is at most
// once (pub/sub); clients that need certainty poll GET /api/orders.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { KeySpace } from '../infra/redis/keys.js';

export type OrderEventType = 'stored' | 'paid' | 'expired' | 'cancelled' | 'failed' | 'promoted';

export interface OrderEvent {
  type: OrderEventType;
  orderId: string;
  voucherId: string;
  userId: string;
  quantity: number;
  /** The order's status after the event (`processing` for a promotion not stored yet). */
  status: string;
  /** ISO-8601, when the event was published. */
  at: string;
}

export type OrderEventListener = (event: OrderEvent) => void;

export interface OrderEvents {
  /** Publishes a batch of events in one message; never throws (events are best effort). */
  publish(events: Omit<OrderEvent, 'at'>[]): Promise<void>;
  /** Calls `listener` for each event of `userId` until the returned function is called. */
  subscribe(userId: string, listener: OrderEventListener): Promise<() => void>;
  close(): Promise<void>;
}

export interface OrderEventsDeps {
  redis: Redis;
  keys: KeySpace;
  log: Logger;
}

export function createOrderEvents({ redis, keys, log }: OrderEventsDeps): OrderEvents {
  const channel = keys.orderEvents();
  const listeners = new Map<string, Set<OrderEventListener>>();
  let subscriber: Redis | null = null;
  let subscribing: Promise<unknown> | null = null;

  function dispatch(message: string) {
    let events: OrderEvent[];
    try {
      events = JSON.parse(message) as OrderEvent[];
    } catch {
      return;
    }
    for (const event of events) {
      for (const listener of listeners.get(event.userId) ?? []) {
        try {
          listener(event);
        } catch (err) {
          log.warn({ err }, 'order event listener failed');
        }
      }
    }
  }

  // One subscriber connection per process, opened by the first listener and kept afterwards; a
  // failed SUBSCRIBE is forgotten so the next listener tries again.
  async function ensureSubscribed() {
    if (!subscriber) {
      const s = redis.duplicate({ connectionName: 'seckill-events', enableAutoPipelining: false });
      subscriber = s;
      s.on('message', (ch: string, message: string) => ch === channel && dispatch(message));
      s.on('error', (err: Error) => log.warn({ err }, 'order events subscriber error'));
      subscribing = s.subscribe(channel).catch((err: unknown) => {
        if (subscriber === s) subscriber = subscribing = null;
        s.disconnect();
        throw err;
      });
    }
    await subscribing;
  }

  return {
    async publish(events) {
      if (events.length === 0) return;
      const at = new Date().toISOString();
      try {
        await redis.publish(channel, JSON.stringify(events.map((e) => ({ ...e, at }))));
      } catch (err) {
        log.warn({ err, events: events.length }, 'order events not published');
      }
    },
    async subscribe(userId, listener) {
      let set = listeners.get(userId);
      if (!set) listeners.set(userId, (set = new Set()));
      set.add(listener);
      const unsubscribe = () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(userId) === set) listeners.delete(userId);
      };
      try {
        await ensureSubscribed();
      } catch (err) {
        unsubscribe();
        throw err;
      }
      return unsubscribe;
    },
    async close() {
      listeners.clear();
      const s = subscriber;
      subscriber = null;
      if (s) await s.quit().catch(() => s.disconnect());
    },
  };
}
