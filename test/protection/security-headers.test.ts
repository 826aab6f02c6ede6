// Security headers on every answer: successes and every kind of error answer (the not-found
// handler, validation, authentication, the traffic guards, CORS preflights, the answers Node gives
// before Fastify), the API's CSP on JSON and assets, the pages' and the OpenAPI UI's own CSP, and
// HSTS only for requests that arrived over TLS.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { createVoucher, startSecondInstance, startTestApp, suiteScope } from '../support/helpers.js';
import { waitFor } from '../../support/wait.js';

const API_CSP = "default-src 'none'; frame-ancestors 'none'";
const SHOP = 'https://shop.example.com';
const t = await startTestApp(suiteScope(), 'sec-headers', { TRUSTED_PROXIES: '127.0.0.1', CORS_ORIGINS: SHOP });
const voucher = await createVoucher(t);

function assertSecured(res: LightMyRequestResponse, what: string, csp: string | RegExp = API_CSP) {
  const h = res.headers;
  assert.equal(h['x-content-type-options'], 'nosniff', what);
  assert.equal(h['referrer-policy'], 'no-referrer', what);
  assert.equal(h['x-frame-options'], 'DENY', what);
  assert.equal(h['cross-origin-resource-policy'], 'same-origin', what);
  assert.equal(h['cross-origin-opener-policy'], 'same-origin', what);
  if (typeof csp === 'string') assert.equal(h['content-security-policy'], csp, what);
  else assert.match(String(h['content-security-policy']), csp, what);
  assert.doesNotMatch(String(h['content-security-policy']), /unsafe-inline|unsafe-eval/, what);
}

describe('security headers', () => {
  it('when the API answers, successes and errors alike, then every answer carries the headers and the API\'s CSP, and no HSTS over plain HTTP', async () => {
    const admin = { authorization: `Bearer ${await t.admin()}` };
    const answers: [string, number, InjectOptions][] = [
      ['voucher', 200, { url: `/api/vouchers/${voucher.id}` }],
      ['health', 200, { url: '/healthz' }],
      ['readiness', 200, { url: '/readyz' }],
      ['metrics', 200, { url: '/metrics' }],
      ['asset', 200, { url: '/assets/store.js' }],
      ['unknown route', 404, { url: '/nothing/here' }],
      ['unknown asset', 404, { url: '/assets/nothing.js' }],
      ['unknown voucher', 404, { url: '/api/vouchers/1' }],
      ['bad id', 400, { url: '/api/vouchers/abc' }],
      ['bad body', 400, { method: 'POST', url: '/api/vouchers', headers: admin, payload: { title: '' } }],
      ['not JSON', 415, { method: 'POST', url: '/api/vouchers', headers: { ...admin, 'content-type': 'application/xml' }, payload: '<x/>' }],
      ['no token', 401, { method: 'POST', url: `/api/vouchers/${voucher.id}/orders` }],
      ['not an admin', 403, { url: `/api/vouchers/${voucher.id}/stats`, headers: { authorization: `Bearer ${await t.token(7)}` } }],
      ['preflight', 204, { method: 'OPTIONS', url: `/api/vouchers/${voucher.id}/orders`, headers: { origin: SHOP, 'access-control-request-method': 'POST' } }],
    ];
    for (const [what, status, request] of answers) {
      const res = await t.app.inject(request);
      assert.equal(res.statusCode, status, `${what}: ${res.body.slice(0, 200)}`);
      assertSecured(res, what);
      assert.equal(res.headers['strict-transport-security'], undefined, what);
    }
  });

  it('when the traffic guards refuse, then their 429 and 503 carry the headers', async (ctx) => {
    const limited = await startSecondInstance(ctx, t, { IP_RATE_LIMIT: '1', IP_RATE_WINDOW_MS: '60000' });
    await limited.app.inject({ url: `/api/vouchers/${voucher.id}` });
    const refused = await limited.app.inject({ url: `/api/vouchers/${voucher.id}` });
    assert.equal(refused.statusCode, 429);
    assertSecured(refused, '429');

    const pressed = await startSecondInstance(ctx, t, { OVERLOAD_HEAP_USED_MB: '1' });
    const shed = await waitFor('the overload guard', async () => {
      const res = await pressed.app.inject({ url: `/api/vouchers/${voucher.id}` });
      return res.statusCode === 503 && res;
    }, 5_000);
    assertSecured(shed, '503');
  });

  it('when Node answers before Fastify (a head too large), then that answer carries the headers too', async (ctx) => {
    const raw = await startSecondInstance(ctx, t);
    await raw.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = raw.app.server.address() as { port: number };
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(`GET /healthz HTTP/1.1\r\nHost: test\r\nX-Pad: ${'a'.repeat(10_000)}\r\n\r\n`));
      let text = '';
      socket.on('data', (chunk) => (text += chunk));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    assert.match(answer, /^HTTP\/1\.1 431 /);
    assert.match(answer, /\r\nx-content-type-options: nosniff\r\n/);
    assert.match(answer, new RegExp(`\r\ncontent-security-policy: ${API_CSP}\r\n`));
  });

  it('when a page or the OpenAPI UI is served, then it keeps its own strict CSP and the other headers', async () => {
    for (const url of ['/console', `/store/${voucher.id}`]) {
      const res = await t.app.inject({ url });
      assert.equal(res.statusCode, 200);
      assertSecured(res, url, /^default-src 'self'; script-src 'self'; style-src 'self';.*frame-ancestors 'none'$/);
    }
    for (const url of ['/docs', '/docs/static/swagger-ui-bundle.js', '/docs/json']) {
      const res = await t.app.inject({ url });
      assert.equal(res.statusCode, 200, url);
      assertSecured(res, url, /^default-src 'none'; script-src 'self'; style-src 'self';.*frame-ancestors 'none'$/);
    }
  });

  it('when a request arrived over TLS at a trusted proxy, then the answer also carries HSTS; an untrusted sender cannot ask for it', async () => {
    const overTls = await t.app.inject({ url: '/healthz', headers: { 'x-forwarded-proto': 'https' } });
    assert.equal(overTls.headers['strict-transport-security'], 'max-age=31536000');
    assertSecured(overTls, 'over TLS');
    const untrusted = await t.app.inject({ url: '/healthz', remoteAddress: '198.51.100.9', headers: { 'x-forwarded-proto': 'https' } });
    assert.equal(untrusted.headers['strict-transport-security'], undefined);
  });

  it('when an event stream is opened (a hijacked answer), then it carries the headers and the CORS answer too', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as { port: number };
    const authorization = `Bearer ${await t.token(42)}`;
    for (const path of ['/api/orders/events', `/api/vouchers/${voucher.id}/live`]) {
      const token = path.endsWith('/live') ? `Bearer ${await t.admin()}` : authorization;
      const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: token, origin: SHOP } });
      assert.equal(res.status, 200, path);
      assert.match(String(res.headers.get('content-type')), /^text\/event-stream/);
      assertSecured({ headers: Object.fromEntries(res.headers) } as unknown as LightMyRequestResponse, path);
      assert.equal(res.headers.get('access-control-allow-origin'), SHOP, path);
      await res.body?.cancel();
    }
  });
});
