// Closing without dropping requests. When close() starts, the listener stops accepting (new
// connections are refused: the request never left the client, which may send it elsewhere) but
// the open connections stay: for SHUTDOWN_GRACE_MS they are served, every answer with
// `Connection: close` (Fastify adds it while closing), so each busy keep-alive connection
// finishes its request and is closed by its client instead of being reset with a request on its
// way. Then the idle connections left are closed, requests in progress finish, and a request that
// still arrives is answered 503 UNAVAILABLE in the contract's shape, with Retry-After.
import { Server as NetServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../errors.js';
import type { App } from '../http.js';

const CLOSED_BODY = JSON.stringify(new AppError('UNAVAILABLE', 'this instance is shutting down; retry (another instance will answer)').toBody());

/** Returns whether close() has begun (readiness turns 503 at once, so load balancers move on). */
export function registerGracefulClose(app: App, graceMs: number): () => boolean {
  let closing = false;
  let closed = false;
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closed) return done();
    void reply.code(503).header('retry-after', '1').header('connection', 'close').type('application/json; charset=utf-8').send(CLOSED_BODY);
  });
  app.addHook('preClose', async () => {
    closing = true;
    if (app.server.listening && graceMs > 0) {
      // net's close, not http's: http.Server.close() also closes idle connections at once, and a
      // connection accepted a moment ago, its request not read yet, counts as idle.
      NetServer.prototype.close.call(app.server);
      await sleep(graceMs);
    }
    closed = true;
  });
  return () => closing;
}
