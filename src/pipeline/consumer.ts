// The order pipeline: consumer-group readers of the shard streams that store admitted orders in
// MariaDB in batches, then acknowledge them. Nothing is acknowledged before it is stored, so a
// process that dies holding entries loses nothing: live consumers claim them (XAUTOCLAIM) once
// they have been idle long enough.
//
// Each process runs `lanes` loops (lane.ts); lane i reads the shards s with s mod lanes = i, with
// its own blocking connection and one multi-stream XREADGROUP. On a Redis Cluster every shard is
// its own slot and a read may name one stream only: there each shard gets a lane of its own.
import type { Logger } from 'pino';
import type { Db } from '../infra/db/database.js';
import { isCluster, type RedisClient } from '../infra/redis/client.js';
import { allShards, type KeySpace } from '../infra/redis/keys.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import type { EventOutbox } from '../orders/event-outbox.js';
import { Lane } from './lane.js';
import { ensureConsumerGroups } from './maintenance.js';

export interface PipelineOptions {
  consumer: string;
  lanes: number;
  batchSize: number;
  blockMs: number;
  /** Entries pending this long on any consumer are taken over. */
  claimIdleMs: number;
  /** Deliveries after which an entry that still cannot be stored is failed. */
  maxDeliveries: number;
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

export class OrderPipeline {
  private constructor(private readonly lanes: Lane[]) {}

  static async start(deps: PipelineDeps): Promise<OrderPipeline> {
    await ensureConsumerGroups(deps.redis, deps.keys);
    const count = isCluster(deps.redis) ? deps.keys.shards : Math.min(deps.options.lanes, deps.keys.shards);
    const lanes = Array.from({ length: count }, (_, i) => {
      const shards = allShards(deps.keys).filter((s) => s % count === i);
      return new Lane(deps, shards);
    });
    await Promise.all(lanes.map((l) => l.start()));
    deps.log.info({ consumer: deps.options.consumer, lanes: count }, 'order pipeline started');
    return new OrderPipeline(lanes);
  }

  private closed: Promise<void> | null = null;

  /** The pipeline lag (seckill_pipeline_lag_seconds): the worst lane's, in seconds. */
  lagSeconds(): number {
    const now = Date.now();
    return Math.max(0, ...this.lanes.map((l) => l.lagMs(now))) / 1000;
  }

  /** Idempotent: finishes the batches in hand, acknowledges what was stored, stops reading. */
  close(): Promise<void> {
    this.closed ??= Promise.all(this.lanes.map((l) => l.close())).then(() => undefined);
    return this.closed;
  }
}
