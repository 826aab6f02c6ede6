// Server-sent events over real HTTP for tests of the SSE writer and its feeds: a bare Fastify app
// that answers AppErrors as the API does, and a client that keeps what it read.
import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { AppError } from '../../src/errors.js';

/** A Fastify app with `register`'s routes, listening on a free port until the file ends. */
export async function sseApp(register: (app: FastifyInstance) => void): Promise<string> {
  const app = Fastify();
  app.setErrorHandler((err, _request, reply) => {
    const e = err instanceof AppError ? err : new AppError('INTERNAL', 'unexpected');
    if (e.retryAfterSeconds !== undefined) void reply.header('retry-after', String(e.retryAfterSeconds));
    return reply.code(e.status).send(e.toBody());
  });
  register(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  after(() => app.close());
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

export interface SseClient {
  status: number;
  headers: IncomingHttpHeaders;
  /** Everything read so far. */
  text(): string;
  /** The blocks read so far, comments included, without their blank line. */
  blocks(): string[];
  /** Settles when the response is over: `ended` says whether it ended cleanly (not cut). */
  done: Promise<void>;
  readonly ended: boolean;
  /** Stops reading (the server's writes pile up). */
  pause(): void;
  close(): void;
}

export function connect(url: string, method = 'GET', headers: OutgoingHttpHeaders = {}): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      let body = '';
      let ended = false;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      const done = new Promise<void>((settle) => {
        res.on('end', () => ((ended = true), settle()));
        res.on('close', () => settle());
        res.on('error', () => settle());
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        text: () => body,
        blocks: () => body.split('\n\n').slice(0, -1),
        done,
        get ended() {
          return ended;
        },
        pause: () => void res.pause(),
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
    req.end();
  });
}
