// Order events for server-sent events: every process publishes what happened to orders on one
// Redis pub/sub channel (one message per batch, a JSON array), and every API process that has
// listeners subscribes and hands each event to the listeners of its user. Delivery is at most
// once (pub/sub); clients that need certainty poll GET /api/orders.
//
// Publishing costs the order pipeline about a tenth of its CPU, so it happens only while someone
// listens: a process with listeners keeps its id in a sorted set (scored by when its presence
// expires, renewed while it listens), and publishers look at that set at most twice a second. A
// process that starts listening may miss up to that long of other processes' events. Presence is
// timed by Redis TIME (presence-1.lua): a process whose wall clock is set back is still heard.
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../infra/redis/client.js';
import type { Logger } from 'pino';
import type { KeySpace } from '../infra/redis/keys.js';
import { pubSubOf } from '../infra/redis/connections.js';
import { lazySubscriber } from '../infra/redis/lazy-subscriber.js';
import type { PresenceScripts } from '../infra/redis/scripts/presence.js';

import type { OrderEventType } from '../infra/db/types.js';

export type { OrderEventType };

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

/** A change of a buyer's place in a queue voucher's queue (queue/), on the same channel; never sent to RabbitMQ. */
export interface QueueEvent {
  type: 'queue';
  voucherId: string;
  userId: string;
  state: 'prequeue' | 'waiting' | 'admitted' | 'closed';
  position: number | null;
  ahead: number | null;
  etaSeconds: number | null;
  orderId: string | null;
  at: string;
}

/** What a buyer's event stream carries. */
export type UserEvent = OrderEvent | QueueEvent;

/** Distributes Omit over the union (Omit of a union keeps only the common keys). */
export type Unpublished<E> = E extends unknown ? Omit<E, 'at'> : never;

export type OrderEventListener = (event: OrderEvent) => void;
export type UserEventListener = (event: UserEvent) => void;

const PRESENCE_TTL_MS = 6_000;
const LOOK_EVERY_MS = 500;

export interface OrderPubSub {
  /** Whether any process has listeners now (cached); publishing is skipped otherwise. */
  wanted(): boolean;
  /** Publishes a batch of events in one message, if wanted; never throws (events are best effort). */
  publish(events: Unpublished<UserEvent>[]): Promise<void>;
  /** Calls `listener` for each order event of `userId` until the returned function is called. */
  subscribe(userId: string, listener: OrderEventListener): Promise<() => void>;
  /** The same for every event of `userId`, queue events included (the buyer's event stream). */
  subscribeUser(userId: string, listener: UserEventListener): Promise<() => void>;
  close(): Promise<void>;
}

export interface OrderPubSubDeps {
  redis: RedisClient;
  keys: KeySpace;
  scripts: PresenceScripts;
  log: Logger;
}

export function createOrderPubSub({ redis, keys, scripts, log }: OrderPubSubDeps): OrderPubSub {
  const channel = keys.orderEvents();
  const redisPubSub = pubSubOf(redis);
  const presence = new ListeningPresence(redis, scripts, log, `${channel}:listening`);
  const listeners = new Map<string, Set<UserEventListener>>();
  // One subscriber connection per process, opened by the first listener.
  const subscriber = lazySubscriber({ redis, log, channel, connectionName: 'seckill-events', onMessage: (message) => deliver(listeners, log, message) });
  const wanted = () => listeners.size > 0 || presence.othersListening();

  async function subscribeUser(userId: string, listener: UserEventListener): Promise<() => void> {
    let set = listeners.get(userId);
    if (!set) listeners.set(userId, (set = new Set()));
    set.add(listener);
    const unsubscribe = () => {
      set.delete(listener);
      if (set.size === 0 && listeners.get(userId) === set) listeners.delete(userId);
      if (listeners.size === 0) presence.leave();
    };
    try {
      await subscriber.subscribe();
      await presence.join();
    } catch (err) {
      unsubscribe();
      throw err;
    }
    return unsubscribe;
  }

  return {
    wanted,
    async publish(events) {
      if (events.length === 0 || !wanted()) return;
      const at = new Date().toISOString();
      try {
        await redisPubSub.publish(channel, JSON.stringify(events.map((e) => ({ ...e, at }))));
      } catch (err) {
        log.warn({ err, events: events.length }, 'order events not published');
      }
    },
    subscribe: (userId, listener) =>
      subscribeUser(userId, (event) => {
        if (event.type !== 'queue') listener(event);
      }),
    subscribeUser,
    async close() {
      listeners.clear();
      presence.leave();
      await subscriber.close();
    },
  };
}

/** Hands each event of a published message to the listeners of its user. */
function deliver(listeners: Map<string, Set<UserEventListener>>, log: Logger, message: string): void {
  let events: UserEvent[];
  try {
    events = JSON.parse(message) as UserEvent[];
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

/**
 * This process among the listening ones (its id in the presence set, renewed while it listens),
 * and a cached look at whether other processes listen.
 */
class ListeningPresence {
  private readonly redis: RedisClient;
  private readonly scripts: PresenceScripts;
  private readonly log: Logger;
  private readonly key: string;
  private readonly self = randomUUID();
  private heartbeat: NodeJS.Timeout | null = null;
  private listening = true; // until the first look says otherwise
  private lookedAt = -Infinity;

  constructor(redis: RedisClient, scripts: PresenceScripts, log: Logger, key: string) {
    this.redis = redis;
    this.scripts = scripts;
    this.log = log;
    this.key = key;
  }

  private readonly renew = () => this.scripts.presence(this.key, this.self, PRESENCE_TTL_MS).catch((err: unknown) => this.log.warn({ err }, 'order events presence not renewed'));

  /** Enters the set and keeps renewing the entry (once). */
  async join(): Promise<void> {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(this.renew, PRESENCE_TTL_MS / 3);
    this.heartbeat.unref();
    await this.renew();
  }

  /** Leaves the set. */
  leave(): void {
    if (!this.heartbeat) return;
    clearInterval(this.heartbeat);
    this.heartbeat = null;
    this.redis.zrem(this.key, this.self).catch(() => undefined);
  }

  /** Whether any process listened at the last look; looks again, in the background, at most every LOOK_EVERY_MS. */
  othersListening(): boolean {
    const now = performance.now();
    if (now - this.lookedAt >= LOOK_EVERY_MS) {
      this.lookedAt = now;
      this.scripts
        .presence(this.key, null, PRESENCE_TTL_MS)
        .then((n) => (this.listening = n > 0))
        .catch(() => (this.listening = true));
    }
    return this.listening;
  }
}
