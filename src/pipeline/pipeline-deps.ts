// What the order pipeline and its lanes are given: connections, settings and the callbacks that
// count and announce what they store (composition/workers.ts fills them in).
import type { Logger } from 'pino';
import type { Db } from '../infra/db/database.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import type { EventOutbox } from '../orders/event-outbox.js';

export interface PipelineOptions {
  consumer: string;
  lanes: number;
  batchSize: number;
  blockMs: number;
  /** Entries pending this long on any consumer are taken over. */
  claimIdleMs: number;
  /** Deliveries after which an entry that still cannot be stored is failed. */
  maxDeliveries: number;
  /** Acknowledged entries stay in the stream this long, for consistency/lost-orders.ts. */
  restoreWindowMs: number;
}

export interface PipelineEvents {
  stored?(count: number): void;
  /** Subscribers of order events (stored or failed), asked first whether anyone listens. */
  announce?: Pick<OrderPubSub, 'wanted' | 'publish'>;
  failed?(reason: string): void;
  retried?(error: unknown): void;
}

export interface PipelineDeps {
  /** Shared connection for settling, claiming and trimming; each lane derives its blocking reader from it. */
  redis: RedisClient;
  db: Db;
  keys: KeySpace;
  scripts: Scripts;
  log: Logger;
  options: PipelineOptions;
  events?: PipelineEvents;
  /** The order-event outbox each batch writes to (events on). */
  eventOutbox?: EventOutbox;
}
