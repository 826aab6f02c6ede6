// The order's way to the database and after: the pipeline, the payment timer, and Redis checked
// against the truth.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface PipelineMetrics {
  stored: Counter;
  failed: Counter<'reason'>;
  retries: Counter;
  /** Makes the pipeline lag gauge read `probe` at each scrape (the processes that run the pipeline). */
  watchPipelineLag(probe: () => number): void;
  /** Makes the stream backlog gauge read `probe` at each scrape (the processes that run the pipeline). */
  watchStreamBacklog(probe: () => Promise<number>): void;
  expired: Counter;
  /** How late each expired order was expired (expired at − due at, database time), in seconds. */
  expiryLateness: Histogram;
  repairs: Counter<'kind'>;
  redisDataLosses: Counter;
  redisMasterChanges: Counter;
  databaseServerChanges: Counter;
  ordersRestored: Counter;
  /** Backwards jumps of the wall clock the id generator saw (ids continue from the last timestamp). */
  clockBackwards: Counter;
}

export function pipelineMetrics(registry: Registry): PipelineMetrics {
  return { ...storeMetrics(registry), ...lifecycleMetrics(registry), ...consistencyMetrics(registry) };
}

/** The order pipeline: what it stored, failed and retried, and how far behind the admissions it is. */
function storeMetrics(registry: Registry): Pick<PipelineMetrics, 'stored' | 'failed' | 'retries' | 'watchPipelineLag' | 'watchStreamBacklog'> {
  const stored = new Counter({
    name: 'seckill_orders_stored_total',
    help: 'Admitted orders stored in the database by this process.',
    registers: [registry],
  });
  const failed = new Counter({
    name: 'seckill_orders_failed_total',
    help: 'Admitted orders stored as failed (and compensated in Redis), by reason.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const retries = new Counter({
    name: 'seckill_pipeline_retries_total',
    help: 'Order batches retried after a transient database error.',
    registers: [registry],
  });
  let lagProbe: (() => number) | null = null;
  new Gauge({
    name: 'seckill_pipeline_lag_seconds',
    help:
      'Age of the oldest order entry in the batch a pipeline lane holds (or read last), the largest over the lanes: ' +
      'how far the database is behind the admissions. 0 after a read that found nothing.',
    registers: [registry],
    // Processes share the streams: the cluster view is the worst lane, not a sum.
    aggregator: 'max',
    collect() {
      if (lagProbe) this.set(lagProbe());
    },
  });
  let backlogProbe: (() => Promise<number>) | null = null;
  new Gauge({
    name: 'seckill_stream_backlog',
    help: 'Admitted orders in the shard streams not stored yet (delivered and unacknowledged, or not delivered), all shards, read at each scrape.',
    registers: [registry],
    // Every worker reads the same streams: the cluster view is one value, not a sum.
    aggregator: 'max',
    async collect() {
      if (backlogProbe) this.set(await backlogProbe().catch(() => NaN));
    },
  });
  return {
    stored,
    failed,
    retries,
    watchPipelineLag: (read) => {
      lagProbe = read;
    },
    watchStreamBacklog: (read) => {
      backlogProbe = read;
    },
  };
}

/** The payment timer: orders expired and how late. */
function lifecycleMetrics(registry: Registry): Pick<PipelineMetrics, 'expired' | 'expiryLateness'> {
  const expired = new Counter({
    name: 'seckill_orders_expired_total',
    help: 'Unpaid orders expired by this process (units given back; waitlist served from them).',
    registers: [registry],
  });
  const expiryLateness = new Histogram({
    name: 'seckill_expiry_lateness_seconds',
    help: 'How late the payment timer expired each unpaid order (expired at − expires_at, database time).',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers: [registry],
  });
  return { expired, expiryLateness };
}

/** Redis against the truth: drift reconciliation repaired, data Redis lost, masters it changed to. */
function consistencyMetrics(registry: Registry): Pick<PipelineMetrics, 'repairs' | 'redisDataLosses' | 'redisMasterChanges' | 'clockBackwards' | 'databaseServerChanges' | 'ordersRestored'> {
  const repairs = new Counter({
    name: 'seckill_reconcile_repairs_total',
    help: 'Drift repaired by reconciliation, by kind (docs/operations.md: Reconciliation and the audit).',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const redisDataLosses = new Counter({
    name: 'seckill_redis_data_losses_total',
    help: 'Times this process noticed that Redis had lost its data (restart without persistence, failover to an empty replica, flush).',
    registers: [registry],
  });
  const redisMasterChanges = new Counter({
    name: 'seckill_redis_master_changes_total',
    help: 'Times this process noticed that Redis answers from another master (a failover, a restart): voucher state is verified against the database before it admits again.',
    registers: [registry],
  });
  const clockBackwards = new Counter({
    name: 'seckill_clock_backwards_total',
    help: 'Times the wall clock of this process went back while it issued order ids; ids continue from the last timestamp, never reused (the log line gives how far).',
    registers: [registry],
  });
  const databaseServerChanges = new Counter({
    name: 'seckill_database_server_changes_total',
    help: 'Times another database server answered than the one that last did (a failover, a restart): acknowledged orders it lacks are stored again.',
    registers: [registry],
  });
  const ordersRestored = new Counter({
    name: 'seckill_orders_restored_total',
    help: 'Acknowledged orders the database had lost (a failover to a standby behind), admitted again to be stored (docs/operations.md: The database fails over).',
    registers: [registry],
  });
  return { repairs, redisDataLosses, redisMasterChanges, clockBackwards, databaseServerChanges, ordersRestored };
}
