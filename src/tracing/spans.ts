// The engine's own spans, and a span's W3C traceparent as text, to carry a trace where no header
// goes: the order stream's entry, the order row, the event outbox's row. Only a sampled span gives
// one, so an untraced claim carries nothing and pays for no span object.
import { type Attributes, type Context, type Link, ROOT_CONTEXT, type Span, type SpanContext, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';

/** The tracer of every span the engine makes itself. */
export const tracer = trace.getTracer('seckill');

const TRACE_PARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The span's traceparent when it is sampled (and so exported); undefined otherwise. */
export function traceParentOf(span: Span | undefined): string | undefined {
  const c = span?.spanContext();
  if (!c || !(c.traceFlags & TraceFlags.SAMPLED)) return undefined;
  return `00-${c.traceId}-${c.spanId}-01`;
}

/** The active span's traceparent when it is sampled. */
export function activeTraceParent(): string | undefined {
  return traceParentOf(trace.getActiveSpan());
}

function spanContextOf(traceParent: string): SpanContext | undefined {
  const m = TRACE_PARENT.exec(traceParent);
  if (!m) return undefined;
  return { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16), isRemote: true };
}

/** A context whose parent is the carried span (the root context for text that is not a traceparent). */
export function contextOf(traceParent: string | null | undefined): Context {
  const c = traceParent ? spanContextOf(traceParent) : undefined;
  return c ? trace.setSpanContext(ROOT_CONTEXT, c) : ROOT_CONTEXT;
}

/** Links to the carried spans (those that parse). */
export function linksOf(traceParents: (string | null | undefined)[]): Link[] {
  const links: Link[] = [];
  for (const tp of traceParents) {
    const c = tp ? spanContextOf(tp) : undefined;
    if (c) links.push({ context: c });
  }
  return links;
}

/** Marks `span` failed, with the error recorded. */
export function failSpan(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/**
 * Runs `work` in a span `name` that continues a carried trace, given the span's traceparent; without
 * one (an untraced order) it just runs `work`, given nothing.
 */
export async function inCarriedSpan<T>(name: string, traceParent: string | null | undefined, attributes: Attributes, work: (traceParent: string | undefined) => Promise<T>): Promise<T> {
  if (!traceParent) return work(undefined);
  return tracer.startActiveSpan(name, { attributes }, contextOf(traceParent), async (span) => {
    try {
      return await work(traceParentOf(span));
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Runs `work` in a child span of the active span when that one is sampled; otherwise just runs it. */
export async function inSpan<T>(name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  if (!trace.getActiveSpan()?.isRecording()) return work();
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work();
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}
