import { Counter, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  claims: Counter<'outcome'>;
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
  return { registry, claims };
}
