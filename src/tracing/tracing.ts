// Tracing's start: OpenTelemetry's SDK, registered for this process, when an OTLP endpoint is
// configured (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). Without one
// nothing is loaded or registered, and every span the code asks for is the API's no-op span.
import { context, propagation, trace } from '@opentelemetry/api';
import type { Config } from '../config.js';

export interface Tracing {
  /** Sends the spans still held and stops the exporter; nothing when tracing is off. */
  close(): Promise<void>;
}

const OFF: Tracing = { close: async () => {} };

/**
 * Whether a request that brings no traceparent starts a trace, decided before any span is made:
 * null while tracing is off. Every root span is a request's (the engine's other spans continue an
 * order's trace), so for the parent-based samplers the root decision is taken here, a random draw
 * at the ratio, and the SDK keeps every root it is handed (startTracing): an unsampled request
 * costs no ids, no span object and no sampler call (they were about 5 µs of an admission's
 * ~150 at 1 %, bench/admission --profile). The other samplers decide every span in the SDK as
 * configured (on the trace id: a trace is kept whole).
 */
export function requestSampling(config: Config): (() => boolean) | null {
  if (!tracesUrl(config)) return null;
  switch (config.otelTracesSampler) {
    case 'parentbased_always_off':
      return () => false;
    case 'parentbased_traceidratio': {
      const ratio = config.otelTracesSamplerArg;
      return () => Math.random() < ratio;
    }
    default:
      return () => true;
  }
}

/** Where spans go: the traces URL as given, or /v1/traces under the endpoint (the OTLP spec's rule). */
export function tracesUrl(config: Pick<Config, 'otelEndpoint' | 'otelTracesEndpoint'>): string {
  if (config.otelTracesEndpoint) return config.otelTracesEndpoint;
  if (!config.otelEndpoint) return '';
  return `${config.otelEndpoint.replace(/\/+$/, '')}/v1/traces`;
}

export async function startTracing(config: Config): Promise<Tracing> {
  const url = tracesUrl(config);
  if (!url) return OFF;
  // Loaded only here: a process without tracing does not pay for the SDK's modules.
  const [{ AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { resourceFromAttributes }, sdk, { OTLPTraceExporter }] = await Promise.all([
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  // Parent-based: the roots reaching the SDK were kept by requestSampling already.
  const name = config.otelTracesSampler;
  const sampler =
    name === 'always_on' ? new sdk.AlwaysOnSampler()
    : name === 'always_off' ? new sdk.AlwaysOffSampler()
    : name === 'traceidratio' ? new sdk.TraceIdRatioBasedSampler(config.otelTracesSamplerArg)
    : new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
  const provider = new sdk.TracerProvider({
    sampler,
    resource: resourceFromAttributes({ 'service.name': config.otelServiceName }),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }), scheduledDelayMillis: config.otelBspScheduleDelayMs })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return { close: () => provider.shutdown() };
}
