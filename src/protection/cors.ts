// CORS for the API (CORS_ORIGINS): a browser page on one of those origins may call the API with
// a bearer token. No cookies are used, so credentials are never allowed; an origin not listed gets
// no CORS headers at all (the browser then refuses the page the answer). The console and the
// store page are same-origin and need none of this.
import type { App } from '../http.js';

const ALLOWED_METHODS = 'GET, POST, OPTIONS';
const ALLOWED_HEADERS = 'authorization, content-type, idempotency-key, claim-token';
const EXPOSED_HEADERS = 'retry-after';
const PREFLIGHT_MAX_AGE_S = '600';

export function registerCors(app: App, origins: string[]): void {
  if (origins.length === 0) return;
  const allowed = new Set(origins);
  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin;
    // Caches must keep the answers per origin apart.
    void reply.header('vary', 'Origin');
    if (origin === undefined || !allowed.has(origin)) return done();
    void reply.header('access-control-allow-origin', origin).header('access-control-expose-headers', EXPOSED_HEADERS);
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
      void reply
        .header('access-control-allow-methods', ALLOWED_METHODS)
        .header('access-control-allow-headers', ALLOWED_HEADERS)
        .header('access-control-max-age', PREFLIGHT_MAX_AGE_S)
        .code(204)
        .send();
      return;
    }
    done();
  });
}
