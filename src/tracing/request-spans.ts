// A server span per HTTP request while tracing is on, child of the caller's traceparent header
// when it sends one. The handler runs in the span's context (preHandler: after the body is read,
// whose events would lose it), so the spans it starts and the lines it logs belong to the request.
// An unsampled request gets no context of its own: only a sampled one pays for more than the check.
import { type Context, context, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { FastifyRequest } from 'fastify';
import type { App } from '../http.js';
import { tracer } from './spans.js';

export function registerRequestSpans(app: App): void {
  const traced = new WeakMap<FastifyRequest, { span: Span; context: Context }>();
  app.addHook('onRequest', (request, _reply, done) => {
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const route = request.routeOptions.url ?? 'unmatched';
    const span = tracer.startSpan(
      `${request.method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'http.route': route, 'url.path': request.url.split('?')[0] } },
      parent,
    );
    if (!span.isRecording()) return done();
    const ctx = trace.setSpan(parent, span);
    traced.set(request, { span, context: ctx });
    context.with(ctx, done);
  });
  app.addHook('preHandler', (request, _reply, done) => {
    const t = traced.get(request);
    if (t) context.with(t.context, done);
    else done();
  });
  const end = (request: FastifyRequest, status?: number) => {
    const t = traced.get(request);
    if (!t) return;
    traced.delete(request);
    if (status !== undefined) t.span.setAttribute('http.response.status_code', status);
    if (status === undefined || status >= 500) t.span.setStatus({ code: SpanStatusCode.ERROR });
    t.span.end();
  };
  app.addHook('onResponse', (request, reply, done) => {
    end(request, reply.statusCode);
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    end(request);
    done();
  });
}
