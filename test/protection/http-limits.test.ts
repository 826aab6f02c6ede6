// Limits of the HTTP layer: a coarse per-address limit, 503 with Retry-After under overload, and
// the server's own limits (head size, request timeout, keep-alive), each answered in the
// contract's error shape, over real sockets where Node answers before Fastify does.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { createVoucher, startSecondInstance, startTestApp, suiteScope, type TestApp } from '../support/helpers.js';
import { waitFor } from '../../support/wait.js';

const base = await startTestApp(suiteScope(), 'http');

/** Sends `request` raw over TCP to `t` (listening) and returns everything it answers until it closes. */
async function rawExchange(t: TestApp, request: string): Promise<string> {
  const address = t.app.server.address();
  assert.ok(address && typeof address === 'object');
  return new Promise((resolve, reject) => {
    const socket = connect(address.port, '127.0.0.1', () => socket.write(request));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
  });
}

const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

describe('HTTP limits', () => {
  it('when one address exceeds IP_RATE_LIMIT, then it hears 429 RATE_LIMITED with Retry-After, and other addresses, health and spoofed forwarding headers are unaffected', async (ctx) => {
    const t = await startSecondInstance(ctx, base, { IP_RATE_LIMIT: '5', IP_RATE_WINDOW_MS: '60000', TRUSTED_PROXIES: '127.0.0.1' });
    const v = await createVoucher(base);
    const get = (url: string, client: string, remoteAddress = '127.0.0.1') =>
      t.app.inject({ method: 'GET', url, remoteAddress, headers: { 'x-forwarded-for': client } });

    for (let i = 0; i < 5; i++) assert.equal((await get(`/api/vouchers/${v.id}`, '203.0.113.7')).statusCode, 200);
    const refused = await get(`/api/vouchers/${v.id}`, '203.0.113.7');
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().code, 'RATE_LIMITED');
    assert.match(refused.json().message, /retry in/);
    assert.ok(Number(refused.headers['retry-after']) >= 1, `Retry-After ${refused.headers['retry-after']}`);

    assert.equal((await get(`/api/vouchers/${v.id}`, '203.0.113.8')).statusCode, 200, 'another address');
    assert.equal((await get('/healthz', '203.0.113.7')).statusCode, 200, 'health is not limited');
    // Only the trusted proxy (127.0.0.1) may name the client: anyone else is counted as itself.
    assert.equal((await get(`/api/vouchers/${v.id}`, '203.0.113.7', '198.51.100.9')).statusCode, 200, 'a spoofed X-Forwarded-For');
  });

  it('when the process is under pressure, then /api answers 503 UNAVAILABLE with Retry-After at once, and health still answers', async (ctx) => {
    const t = await startSecondInstance(ctx, base, { OVERLOAD_HEAP_USED_MB: '1' }); // always exceeded, from the first sample on (each second)
    const v = await createVoucher(base);
    const shed = await waitFor('the overload guard', async () => {
      const res = await t.app.inject({ method: 'GET', url: `/api/vouchers/${v.id}` });
      return res.statusCode === 503 && res;
    }, 5_000);
    assert.deepEqual(shed.json(), { code: 'UNAVAILABLE', message: 'the server is overloaded; retry shortly' });
    assert.equal(shed.headers['retry-after'], '1');
    assert.equal((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
    assert.equal((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 200);
  });

  it('sets the server timeouts deliberately', async () => {
    const { server } = base.app;
    assert.equal(server.requestTimeout, 10_000);
    assert.equal(server.headersTimeout, 10_000);
    assert.equal(server.keepAliveTimeout, 72_000);
  });

  it('when request headers exceed HTTP_MAX_HEADER_BYTES, then 431 HEADERS_TOO_LARGE in the contract shape; smaller ones pass', async () => {
    await base.app.listen({ port: 0, host: '127.0.0.1' });
    const request = (bytes: number) => `GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\nX-Pad: ${'a'.repeat(bytes)}\r\n\r\n`;
    const small = await rawExchange(base, request(4_000));
    assert.match(small, /^HTTP\/1\.1 200 /);
    const large = await rawExchange(base, request(10_000));
    assert.match(large, /^HTTP\/1\.1 431 /);
    assert.deepEqual(bodyOf(large), { code: 'HEADERS_TOO_LARGE', message: 'request headers exceed 8192 bytes' });
  });

  it('when a client sends its request too slowly, then 408 REQUEST_TIMEOUT and the socket is closed', async (ctx) => {
    const t = await startSecondInstance(ctx, base, { HTTP_REQUEST_TIMEOUT_MS: '1000' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const started = performance.now();
    const answer = await rawExchange(t, 'GET /healthz HTTP/1.1\r\nHost: test\r\n'); // the head never ends
    const ms = performance.now() - started;
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.deepEqual(bodyOf(answer), { code: 'REQUEST_TIMEOUT', message: 'the request did not arrive in time' });
    assert.ok(ms >= 900 && ms < 4_000, `closed after ${ms.toFixed(0)} ms`);
  });
});
