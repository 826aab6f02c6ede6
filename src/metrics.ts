import { Counter, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  claims: Counter<'outcome'>;
  /** Counts one claim outcome; label children are cached (no label hashing per request). */
  countClaim(outcome: string): void;
  stored: Counter;
  failed: Counter<'reason'>;
  retries: Counter;
  expired: Counter;
  repairs: Counter<'kind'>;
}

/** One registry per process (tests build several apps, so no global default registry). */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const claims = new Counter({
    name: 'seckill_claims_total',
    help: 'Seckill claims by outcome of the admission script (admitted, replayed, sold_out, limit_exceeded, not_started, ended, key_reused, missing).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
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
  const expired = new Counter({
    name: 'seckill_orders_expired_total',
    help: 'Unpaid orders expired by this process (units given back; waitlist served from them).',
    registers: [registry],
  });
  const repairs = new Counter({
    name: 'seckill_reconcile_repairs_total',
    help: 'Drift repaired by reconciliation, by kind (see README: Operations).',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const claimChildren = new Map<string, ReturnType<typeof claims.labels>>();
  const countClaim = (outcome: string) => {
    let child = claimChildren.get(outcome);
    if (!child) claimChildren.set(outcome, (child = claims.labels(outcome)));
    child.inc();
  };
  return { registry, claims, countClaim, stored, failed, retries, expired, repairs };
}
