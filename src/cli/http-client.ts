// A small JSON client over keep-alive sockets, for the demo and the load tools.
import http from 'node:http';

export interface JsonResponse {
  status: number;
  body: Record<string, unknown>;
}

export class JsonClient {
  private readonly agent: http.Agent;
  private readonly base: URL;

  constructor(baseUrl: string, maxSockets = 128) {
    this.base = new URL(baseUrl);
    this.agent = new http.Agent({ keepAlive: true, maxSockets });
  }

  request(method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<JsonResponse> {
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
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
