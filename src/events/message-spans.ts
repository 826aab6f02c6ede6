// A span per traced event that leaves: the RabbitMQ publish (PRODUCER) and each webhook delivery
// attempt (CLIENT), children of the span that wrote the event (its outbox row's traceparent). The
// message carries the new span's traceparent, so a consumer's own spans continue the trace.
import { type Span, SpanKind } from '@opentelemetry/api';
import { contextOf, failSpan, traceParentOf, tracer } from '../tracing/spans.js';
import { type EventMessage, messageOf, type OutboxRow } from './message.js';

export interface SentMessage {
  message: EventMessage;
  /** Only for a traced event. */
  span?: Span;
}

const KIND = { publish: SpanKind.PRODUCER, deliver: SpanKind.CLIENT } as const;

/** The row's message, with its span started when the row is traced. */
export function sendingMessage(row: OutboxRow, operation: keyof typeof KIND): SentMessage {
  const message = messageOf(row);
  if (!row.trace_parent) return { message };
  const span = tracer.startSpan(
    `${message.routingKey} ${operation}`,
    { kind: KIND[operation], attributes: { 'messaging.message.id': message.eventId, 'seckill.order.id': row.order_id } },
    contextOf(row.trace_parent),
  );
  const traceParent = traceParentOf(span);
  return { message: traceParent ? { ...message, traceParent } : message, span };
}

/** Ends the messages' spans, with the error when sending failed. */
export function endSending(sent: SentMessage[], err?: unknown): void {
  for (const { span } of sent) {
    if (!span) continue;
    if (err !== undefined) failSpan(span, err);
    span.end();
  }
}
