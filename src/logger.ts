import { isSpanContextValid, trace } from '@opentelemetry/api';
import { type DestinationStream, pino, type Logger } from 'pino';

/** A line logged inside a span carries its trace and span ids (none while tracing is off). */
function traceIds(): Record<string, string> {
  const c = trace.getActiveSpan()?.spanContext();
  return c && isSpanContextValid(c) ? { traceId: c.traceId, spanId: c.spanId } : {};
}

/** Lines go to stdout unless `destination` is given. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, base: { pid: process.pid }, mixin: traceIds }, destination);
}
