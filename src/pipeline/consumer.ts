// The order pipeline: consumer-group readers of the shard streams that store admitted orders in
// MariaDB in batches, then acknowledge them. Nothing is acknowledged before it is stored, so a
// process that dies holding entries loses nothing: live consumers claim them (XAUTOCLAIM) once
// they have been idle long enough.
//
// Each process runs `lanes` loops (lane.ts); lane i reads the shards s with s mod lanes = i, with
// its own blocking connection and one multi-stream XREADGROUP. On a Redis Cluster every shard is
// its own slot and a read may name one stream only: there each shard gets a lane of its own. The
// lanes store full batches side by side and small ones one at a time (small-batch-gate.ts).
import { isCluster } from '../infra/redis/client.js';
import { allShards } from '../infra/redis/keys.js';
import { Lane } from './lane.js';
import { ensureConsumerGroups } from './maintenance.js';
import { SmallBatchGate } from './small-batch-gate.js';

import type { PipelineDeps } from './pipeline-deps.js';

export type { PipelineDeps, PipelineEvents, PipelineOptions } from './pipeline-deps.js';

export class OrderPipeline {
  private readonly lanes: Lane[];

  private constructor(lanes: Lane[]) {
    this.lanes = lanes;
  }

  static async start(deps: PipelineDeps): Promise<OrderPipeline> {
    await ensureConsumerGroups(deps.redis, deps.keys);
    const count = isCluster(deps.redis) ? deps.keys.shards : Math.min(deps.options.lanes, deps.keys.shards);
    const gate = new SmallBatchGate();
    const lanes = Array.from({ length: count }, (_, i) => {
      const shards = allShards(deps.keys).filter((s) => s % count === i);
      return new Lane(deps, shards, gate);
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
