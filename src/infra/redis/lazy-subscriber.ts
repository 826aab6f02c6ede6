// One subscriber connection to one pub/sub channel, opened by the first process-local user and
// kept afterwards (processes that never listen open none). A failed SUBSCRIBE is forgotten, its
// connection dropped, so the next caller tries again; once closed it never opens again.
import type { Logger } from 'pino';
import type { RedisClient } from './client.js';
import { closeConnection, dropConnection, pubSubOf } from './connections.js';

export interface LazySubscriber {
  /** Subscribes if not yet (again after a failure); resolves once subscribed, rejects when SUBSCRIBE fails or it is closed. */
  subscribe(): Promise<void>;
  /** Whether the subscription is in place (never starts it). */
  readonly subscribed: boolean;
  close(): Promise<void>;
}

export interface LazySubscriberDeps {
  /** The shared client: the subscriber is a connection of its own to the same Redis. */
  redis: RedisClient;
  log: Logger;
  channel: string;
  /** The connection's name (CLIENT LIST) and its logs' label. */
  connectionName: string;
  onMessage(message: string): void;
}

export function lazySubscriber({ redis, log, channel, connectionName, onMessage }: LazySubscriberDeps): LazySubscriber {
  const pubSub = pubSubOf(redis);
  let connection: RedisClient | null = null;
  let subscribing: Promise<void> | null = null;
  let subscribed = false;
  let closed = false;

  return {
    subscribe() {
      if (closed) return Promise.reject(new Error(`${connectionName} subscriber is closed`));
      if (!subscribing) {
        const { connection: s, subscribed: done } = pubSub.subscriber(channel, connectionName, onMessage);
        connection = s;
        s.on('error', (err: Error) => log.warn({ err, connection: connectionName }, 'subscriber connection error'));
        subscribing = done.then(
          () => void (subscribed = connection === s),
          (err: unknown) => {
            log.warn({ err, connection: connectionName, channel }, 'SUBSCRIBE failed; the next listener tries again');
            if (connection === s) connection = subscribing = null;
            dropConnection(s);
            throw err;
          },
        );
      }
      return subscribing;
    },
    get subscribed() {
      return subscribed;
    },
    async close() {
      closed = true;
      subscribed = false;
      const s = connection;
      connection = subscribing = null;
      if (s) await closeConnection(s);
    },
  };
}
