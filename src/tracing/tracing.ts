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
  const ratio = new sdk.TraceIdRatioBasedSampler(config.otelTracesSamplerArg);
  const root = {
    always_on: new sdk.AlwaysOnSampler(),
    always_off: new sdk.AlwaysOffSampler(),
    traceidratio: ratio,
  }[config.otelTracesSampler.replace(/^parentbased_/, '') as 'always_on' | 'always_off' | 'traceidratio'];
  const sampler = config.otelTracesSampler.startsWith('parentbased_') ? new sdk.ParentBasedSampler({ root }) : root;
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
