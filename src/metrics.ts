// The process's Prometheus metrics: one family per area (src/metrics/), composed here.
import { Registry, collectDefaultMetrics } from 'prom-client';
import { type ClaimMetrics, claimMetrics } from './metrics/claim-metrics.js';
import { type OutboxMetrics, outboxMetrics } from './metrics/outbox-metrics.js';
import { type PaymentMetrics, paymentMetrics } from './metrics/payment-metrics.js';
import { type PipelineMetrics, pipelineMetrics } from './metrics/pipeline-metrics.js';

export { claimOutcomeClass } from './metrics/claim-metrics.js';
export type { OutboxReading } from './metrics/outbox-metrics.js';

export interface Metrics extends ClaimMetrics, PipelineMetrics, OutboxMetrics, PaymentMetrics {
  registry: Registry;
}

/** One registry per process (tests build several apps, so no global default registry). */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return { registry, ...claimMetrics(registry), ...pipelineMetrics(registry), ...outboxMetrics(registry), ...paymentMetrics(registry) };
}
