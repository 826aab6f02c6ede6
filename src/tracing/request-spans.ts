// A server span per HTTP request while tracing is on, child of the caller's traceparent header
// when it sends one; a request without one is sampled here, before any span is made. The handler
// runs in the span's context (preHandler: after the body is read, whose events would lose it), so
// the spans it starts and the lines it logs belong to the request. An unsampled request gets no
// span and no context of its own.
import { type Context, context, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { FastifyRequest } from 'fastify';
import type { App } from '../http.js';
import { tracer } from './spans.js';

/** `sampleRoot`: whether a request without a traceparent starts a trace (tracing.ts, requestSampling). */
export function registerRequestSpans(app: App, sampleRoot: () => boolean): void {
  const traced = new WeakMap<FastifyRequest, { span: Span; context: Context }>();
  app.addHook('onRequest', (request, _reply, done) => {
    // The W3C propagator reads nothing else: without the header there is no parent to extract.
    const root = request.headers.traceparent === undefined;
    if (root && !sampleRoot()) return done();
    const parent = root ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, request.headers);
    // Name and attributes only on a kept span: nothing is built for the requests the sampler drops.
    const span = tracer.startSpan('HTTP request', { kind: SpanKind.SERVER }, parent);
    if (!span.isRecording()) return done();
    const route = request.routeOptions.url ?? 'unmatched';
    span.updateName(`${request.method} ${route}`);
    span.setAttributes({ 'http.request.method': request.method, 'http.route': route, 'url.path': request.url.split('?')[0] });
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
