// The spans of a batch some of whose claims were traced: `pipeline store` for the batch, with a
// link to every traced claim, and, per traced order, `order store` in its claim's trace, linked to
// the batch's span. The batch span is a child of its first traced claim: a root span would be
// sampled by the root sampler on its own (at a 1 % ratio, the links of 99 batches in 100 would
// point at nothing), a child follows the claim's decision. The order's row and its events keep the order span's
// traceparent, so what happens to the order later (publish, delivery, payment, expiry) joins the
// claim's trace. A batch without a traced claim makes no span at all.
import { type Context, ROOT_CONTEXT, type Span, trace } from '@opentelemetry/api';
import type { OrderEntry } from '../infra/redis/records.js';
import { contextOf, failSpan, linksOf, traceParentOf, tracer } from '../tracing/spans.js';
import type { Settlement } from './settlement.js';

export interface BatchSpans {
  /** The batch span's context: the store runs in it. */
  context: Context;
  /** Per traced order, the traceparent of its `order store` span. */
  traceParents: Map<string, string>;
  /** Ends every span with the batch's outcome: how each order was settled, or the error. */
  end(decided: Map<string, Settlement> | null, err?: unknown): void;
}

export function startBatchSpans(entries: OrderEntry[]): BatchSpans | null {
  const traced = entries.filter((e) => e.traceParent !== undefined);
  if (traced.length === 0) return null;
  const links = linksOf(traced.map((e) => e.traceParent));
  const batch = tracer.startSpan('pipeline store', { links, attributes: { 'seckill.batch.orders': entries.length } }, contextOf(traced[0]!.traceParent));
  const link = [{ context: batch.spanContext() }];
  const orders = new Map<string, Span>();
  const traceParents = new Map<string, string>();
  for (const e of traced) {
    const span = tracer.startSpan('order store', { links: link, attributes: { 'seckill.order.id': e.orderId, 'seckill.delivery': e.deliveries } }, contextOf(e.traceParent));
    orders.set(e.orderId, span);
    const tp = traceParentOf(span);
    if (tp) traceParents.set(e.orderId, tp);
  }
  return {
    context: trace.setSpan(ROOT_CONTEXT, batch),
    traceParents,
    end(decided, err) {
      for (const [orderId, span] of orders) {
        const outcome = decided?.get(orderId);
        if (outcome) span.setAttribute('seckill.order.outcome', outcome.kind === 'failed' ? `failed: ${outcome.reason}` : outcome.kind);
        else if (err !== undefined) failSpan(span, err);
        else span.setAttribute('seckill.order.outcome', 'pending');
        span.end();
      }
      if (err !== undefined) failSpan(batch, err);
      batch.end();
    },
  };
}
