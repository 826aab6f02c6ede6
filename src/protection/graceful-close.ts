// Closing without dropping requests. When close() starts, Fastify answers every request with
// `Connection: close`, so clients stop reusing their sockets; for SHUTDOWN_GRACE_MS the server
// still serves (and accepts), which lets each busy keep-alive connection finish its request and
// close, instead of being reset with a request on its way. Then the listener closes with the idle
// sockets that remain, requests in progress finish, and a request that still arrives on an open
// connection is answered 503 UNAVAILABLE in the contract's shape, with Retry-After.
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
    if (app.server.listening && graceMs > 0) await sleep(graceMs);
    closed = true;
  });
  return () => closing;
}
