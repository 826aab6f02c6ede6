// What is done to a traced order after it was stored (paid, expired, cancelled, refunded) as a span
// in the order's own trace, child of the span its row keeps, and linked to the span that did it (a
// request's, when that one is traced). The event written with the change keeps the new span's
// traceparent, so its publish and delivery follow in the same trace. Untraced orders get nothing.
import { type Span, trace } from '@opentelemetry/api';
import { contextOf, failSpan, traceParentOf, tracer } from './spans.js';

/** An order row as the changes lock it: its id and the traceparent it keeps (null: untraced). */
export interface TracedRow {
  id: string;
  trace_parent?: string | null;
}

export interface OrderSpans {
  /** The traceparent an event of this order keeps: its span's (null when the order is untraced). */
  traceParent(orderId: string): string | null;
}

/** Runs `work` with a span `name` per traced row, ended when it settles (with its error, if any). */
export async function withOrderSpans<T>(name: string, rows: TracedRow[], work: (spans: OrderSpans) => Promise<T>): Promise<T> {
  const traced = rows.filter((r) => r.trace_parent);
  if (traced.length === 0) return work({ traceParent: () => null });
  const doer = trace.getActiveSpan();
  const links = doer?.isRecording() ? [{ context: doer.spanContext() }] : [];
  const spans = new Map<string, Span>(traced.map((r) => [r.id, tracer.startSpan(name, { links, attributes: { 'seckill.order.id': r.id } }, contextOf(r.trace_parent))]));
  try {
    return await work({ traceParent: (orderId) => traceParentOf(spans.get(orderId)) ?? null });
  } catch (err) {
    for (const span of spans.values()) failSpan(span, err);
    throw err;
  } finally {
    for (const span of spans.values()) span.end();
  }
}
