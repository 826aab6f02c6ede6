// A small JSON client over keep-alive sockets, for the CLI's admin calls and tests (the load
// itself goes through src/loadgen/driver.ts).
import http from 'node:http';

export interface JsonResponse {
  status: number;
  body: Record<string, unknown>;
}

export interface JsonRequestOptions {
  /** Bearer token (without the "Bearer " prefix). */
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export class JsonClient {
  private readonly timeoutMs: number;
  private readonly agent: http.Agent;
  private readonly base: URL;

  /** `timeoutMs`: a request with no complete answer by then fails (a hung server must not hang the caller). */
  constructor(baseUrl: string, maxSockets = 128, timeoutMs = 60_000) {
    this.timeoutMs = timeoutMs;
    this.base = new URL(baseUrl);
    this.agent = new http.Agent({ keepAlive: true, maxSockets });
  }

  request(method: string, path: string, options: JsonRequestOptions = {}): Promise<JsonResponse> {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (payload !== undefined) headers['content-type'] = 'application/json';
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: this.base.hostname, port: this.base.port, path, method, headers, agent: this.agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: Record<string, unknown> = {};
            try {
              body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
            } catch {
              body = { raw: text };
            }
            resolve({ status: res.statusCode ?? 0, body });
          });
        },
      );
      req.setTimeout(this.timeoutMs, () => req.destroy(new Error(`${method} ${path}: no answer within ${this.timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
