// CORS_ORIGINS: listed origins may call the API from a browser (preflight included); others, and
// every origin by default, get no CORS headers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { createVoucher, startTestApp, suiteScope } from '../support/helpers.js';

const SHOP = 'https://shop.example.com';
const t = await startTestApp(suiteScope(), 'cors', { CORS_ORIGINS: `${SHOP}, http://127.0.0.1:8080` });
const voucher = await createVoucher(t);

describe('CORS_ORIGINS', () => {
  it('parses a comma-separated list of origins, empty by default', () => {
    assert.deepEqual(loadConfig({}).corsOrigins, []);
    assert.deepEqual(loadConfig({ CORS_ORIGINS: `${SHOP}/, http://127.0.0.1:8080` }).corsOrigins, [SHOP, 'http://127.0.0.1:8080']);
  });

  it('lets a listed origin read the answers, error answers included', async () => {
    const ok = await t.app.inject({ url: `/api/vouchers/${voucher.id}`, headers: { origin: SHOP } });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.headers['access-control-allow-origin'], SHOP);
    assert.equal(ok.headers['access-control-expose-headers'], 'retry-after');
    assert.equal(ok.headers['access-control-allow-credentials'], undefined);
    assert.match(String(ok.headers.vary), /Origin/);
    const refused = await t.app.inject({ method: 'POST', url: `/api/vouchers/${voucher.id}/orders`, headers: { origin: SHOP } });
    assert.equal(refused.statusCode, 401);
    assert.equal(refused.headers['access-control-allow-origin'], SHOP);
  });

  it('answers a listed origin\'s preflight with the methods and headers the API takes', async () => {
    const res = await t.app.inject({
      method: 'OPTIONS',
      url: `/api/vouchers/${voucher.id}/orders`,
      headers: { origin: SHOP, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, idempotency-key' },
    });
    assert.equal(res.statusCode, 204);
    assert.equal(res.headers['access-control-allow-origin'], SHOP);
    assert.match(String(res.headers['access-control-allow-headers']), /authorization.*idempotency-key/);
    assert.match(String(res.headers['access-control-allow-methods']), /POST/);
  });

  it('gives an origin that is not listed no CORS headers', async () => {
    const res = await t.app.inject({ url: `/api/vouchers/${voucher.id}`, headers: { origin: 'https://evil.example.com' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    const preflight = await t.app.inject({
      method: 'OPTIONS',
      url: `/api/vouchers/${voucher.id}/orders`,
      headers: { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' },
    });
    assert.notEqual(preflight.statusCode, 204);
    assert.equal(preflight.headers['access-control-allow-origin'], undefined);
  });
});
