// Security headers on every answer, error answers included: set in the first onRequest hook, so a
// 404, a 429 or 503 of the traffic guards, a 400 of validation and a CORS preflight all carry them.
// One precomputed object, set with one call: the claim path pays a few property writes, not a
// middleware chain per request.
// - The API answers JSON and never wants to be rendered, framed or embedded: `default-src 'none'`.
//   The pages (web/routes.ts) and the OpenAPI UI (app.ts) replace the CSP with their own.
// - HSTS only over TLS, as the request arrived at the edge (directly, or as a trusted proxy's
//   X-Forwarded-Proto says); browsers ignore it over plain HTTP. No includeSubDomains: the
//   engine does not know which other hosts share its domain.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../http.js';

export const API_CSP = "default-src 'none'; frame-ancestors 'none'";
const HSTS = 'max-age=31536000';

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': API_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};
const OVER_TLS: Readonly<Record<string, string>> = { ...SECURITY_HEADERS, 'strict-transport-security': HSTS };

export function registerSecurityHeaders(app: App): void {
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done) => {
    void reply.headers(request.protocol === 'https' ? OVER_TLS : SECURITY_HEADERS);
    done();
  });
}
