// The engine's own span helpers, in this process with an in-memory exporter: the traceparent text
// that crosses Redis and the database, spans only under a sampled parent, log lines naming their
// trace, and the stream entry's trace field.
import assert from 'node:assert/strict';
import { context, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { describe, it } from 'node:test';
import { Writable } from 'node:stream';
import { isMalformed, parseEntry } from '../../src/infra/redis/records.js';
import { createLogger } from '../../src/logger.js';
import { withOrderSpans } from '../../src/tracing/order-spans.js';
import { activeTraceParent, contextOf, inSpan, linksOf, traceParentOf, tracer } from '../../src/tracing/spans.js';
import { loadConfig } from '../../src/config.js';
import { requestSampling, tracesUrl } from '../../src/tracing/tracing.js';

const exporter = new InMemorySpanExporter();
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
trace.setGlobalTracerProvider(provider);
/** The spans ended so far (the processor exports them asynchronously). */
const finished = async () => (await provider.forceFlush(), exporter.getFinishedSpans());

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const SPAN = 'b7ad6b7169203331';
const sampled = `00-${TRACE}-${SPAN}-01`;
const unsampled = `00-${TRACE}-${SPAN}-00`;

describe('traceparent text', () => {
  it('a sampled span gives its traceparent, an unsampled one none; the text gives the span back as a remote parent', () => {
    const span = tracer.startSpan('s', {}, contextOf(sampled));
    assert.equal(traceParentOf(span), `00-${TRACE}-${span.spanContext().spanId}-01`);
    span.end();
    assert.equal(traceParentOf(trace.wrapSpanContext({ traceId: TRACE, spanId: SPAN, traceFlags: TraceFlags.NONE })), undefined);
    assert.equal(traceParentOf(undefined), undefined);
    const parent = trace.getSpanContext(contextOf(sampled))!;
    assert.deepEqual(parent, { traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true });
  });

  it('text that is not a traceparent gives the root context and no link', () => {
    for (const bad of [null, undefined, '', 'garbage', `01-${TRACE}-${SPAN}-01`, `00-${TRACE.toUpperCase()}-${SPAN}-01`]) {
      assert.equal(contextOf(bad), ROOT_CONTEXT, String(bad));
    }
    assert.deepEqual(linksOf([sampled, 'garbage', null]).map((l) => l.context.spanId), [SPAN]);
  });
});

describe('spans only where a trace is kept', () => {
  it('inSpan makes no span without a recording parent, and a child of it with one (an error recorded)', async () => {
    exporter.reset();
    assert.equal(await inSpan('alone', {}, async () => activeTraceParent()), undefined);
    assert.equal((await finished()).length, 0);
    await context.with(contextOf(unsampled), () => inSpan('unsampled parent', {}, async () => 1));
    assert.equal((await finished()).length, 0);
    const parent = tracer.startSpan('parent', {}, contextOf(sampled));
    await assert.rejects(context.with(trace.setSpan(ROOT_CONTEXT, parent), () => inSpan('child', { a: 1 }, async () => Promise.reject(new Error('boom')))), /boom/);
    parent.end();
    const child = (await finished()).find((s) => s.name === 'child')!;
    assert.equal(child.parentSpanContext?.spanId, parent.spanContext().spanId);
    assert.equal(child.status.message, 'boom');
    assert.equal(child.attributes.a, 1);
  });

  it("withOrderSpans: a span per traced order in the order's trace, linked to the active span; none for untraced orders", async () => {
    exporter.reset();
    const doer = tracer.startSpan('request', {}, contextOf(`00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`));
    const parents = await context.with(trace.setSpan(ROOT_CONTEXT, doer), () =>
      withOrderSpans('order paid', [{ id: '7', trace_parent: sampled }, { id: '8', trace_parent: null }], async (spans) => [spans.traceParent('7'), spans.traceParent('8')]),
    );
    doer.end();
    const [span] = (await finished()).filter((s) => s.name === 'order paid');
    assert.ok(span);
    assert.equal((await finished()).filter((s) => s.name === 'order paid').length, 1);
    assert.equal(span.spanContext().traceId, TRACE);
    assert.equal(span.parentSpanContext?.spanId, SPAN);
    assert.deepEqual(span.links.map((l) => l.context.spanId), [doer.spanContext().spanId]);
    assert.deepEqual(parents, [`00-${TRACE}-${span.spanContext().spanId}-01`, null]);
  });
});

describe('log lines', () => {
  it('a line logged inside a span carries its trace and span ids; one outside carries none', () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger('info', new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>), done()) }));
    log.info('outside');
    tracer.startActiveSpan('logged', {}, contextOf(sampled), (span) => {
      log.info('inside');
      span.end();
      assert.equal(lines[1]!.traceId, TRACE);
      assert.equal(lines[1]!.spanId, span.spanContext().spanId);
    });
    assert.equal(lines[0]!.traceId, undefined);
  });
});

describe('the stream entry of a traced claim', () => {
  const d = '9|5|7|1|1700000000000#key-1';
  it('keeps a well-formed t field; drops one that is not a traceparent (the order is still stored); refuses any other field', () => {
    const traced = parseEntry(0, ['1-0', ['d', d, 't', sampled]], 1);
    assert.ok(!isMalformed(traced));
    assert.equal(traced.traceParent, sampled);
    assert.equal(traced.idempotencyKey, 'key-1');
    const garbled = parseEntry(0, ['1-0', ['d', d, 't', 'not-a-trace']], 1);
    assert.ok(!isMalformed(garbled));
    assert.equal(garbled.traceParent, undefined);
    assert.equal((parseEntry(0, ['1-0', ['d', d]], 1) as { traceParent?: string }).traceParent, undefined);
    assert.ok(isMalformed(parseEntry(0, ['1-0', ['d', d, 'x', sampled]], 1)));
  });
});

describe('where spans go', () => {
  it('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else /v1/traces under OTEL_EXPORTER_OTLP_ENDPOINT, else off', () => {
    assert.equal(tracesUrl({ otelEndpoint: 'http://c:4318/', otelTracesEndpoint: '' }), 'http://c:4318/v1/traces');
    assert.equal(tracesUrl({ otelEndpoint: 'http://c:4318', otelTracesEndpoint: 'http://d/traces' }), 'http://d/traces');
    assert.equal(tracesUrl({ otelEndpoint: '', otelTracesEndpoint: '' }), '');
  });

  it('a request without a traceparent is sampled before any span is made: at the ratio for parentbased_traceidratio, never for parentbased_always_off, else by the SDK', () => {
    const sampling = (sampler: string, ratio = '1') =>
      requestSampling(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: sampler, OTEL_TRACES_SAMPLER_ARG: ratio }))!;
    assert.equal(requestSampling(loadConfig({})), null, 'off without an endpoint');
    const share = (decide: () => boolean) => Array.from({ length: 100_000 }, decide).filter(Boolean).length / 100_000;
    assert.equal(share(sampling('parentbased_traceidratio', '0')), 0);
    assert.equal(share(sampling('parentbased_traceidratio', '1')), 1);
    const onePercent = share(sampling('parentbased_traceidratio', '0.01'));
    assert.ok(onePercent > 0.008 && onePercent < 0.012, String(onePercent));
    assert.equal(share(sampling('parentbased_always_off')), 0);
    for (const sdkDecides of ['parentbased_always_on', 'always_on', 'always_off', 'traceidratio']) assert.equal(share(sampling(sdkDecides, '0.5')), 1, sdkDecides);
  });
});
