// An OTLP/HTTP trace receiver on loopback (JSON, as @opentelemetry/exporter-trace-otlp-http sends):
// it keeps every span it is sent, flattened, for a test to follow a trace through, or counts them
// only (a benchmark's collector).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  service: string;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
  status: { code?: number; message?: string };
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpKeyValue {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpKeyValue[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
}
interface OtlpRequest {
  resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

const valueOf = (v: OtlpValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? v.boolValue));
const attributesOf = (kvs: OtlpKeyValue[] = []) => Object.fromEntries(kvs.map((kv) => [kv.key, valueOf(kv.value)]));

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Spans received, kept or not. */
  count = 0;
  requests = 0;
  readonly url: string;
  private readonly server: Server;

  private constructor(server: Server, url: string) {
    this.server = server;
    this.url = url;
  }

  /** keep: false only counts (a benchmark's receiver, whose memory must not grow). */
  static async start({ keep = true } = {}): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        receiver!.take(JSON.parse(Buffer.concat(chunks).toString() || '{}') as OtlpRequest, keep);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return receiver;
  }

  private take(request: OtlpRequest, keep: boolean): void {
    this.requests++;
    for (const rs of request.resourceSpans ?? []) {
      const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          this.count++;
          if (!keep) continue;
          this.spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? '',
            name: s.name,
            kind: s.kind,
            service,
            attributes: attributesOf(s.attributes),
            links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
            status: s.status ?? {},
          });
        }
      }
    }
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}
