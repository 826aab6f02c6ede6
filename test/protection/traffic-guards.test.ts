// The per-address limit and the overload guard apply by the route the router matched: every
// spelling of a URL that reaches an /api route (percent-encoded letters or digits) is guarded like
// the plain one, and so is every URL that reaches no route; health, readiness, metrics, docs and
// the pages are not.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createVoucher, startSecondInstance, startTestApp, suiteScope, type TestApp } from '../support/helpers.js';
import { waitFor } from '../../support/wait.js';

const base = await startTestApp(suiteScope(), 'guards');
const voucher = await createVoucher(base);
const id: string = voucher.id;

/** Spellings the router takes to the claim route (a claim without a token: 401, nothing taken). */
const claimSpellings = [
  `/api/vouchers/${id}/orders`,
  `/%61pi/vouchers/${id}/orders`,
  `/api/v%6Fuchers/${id}/orders`,
  `/%61%70%69/vouchers/${id}/orders`,
  `/api/vouchers/${id}/%6Frders?x=1`,
];
/** Spellings that reach no route: the router is case-sensitive and keeps duplicate and trailing slashes. */
const unmatchedSpellings = [`/API/vouchers/${id}/orders`, `//api/vouchers/${id}/orders`, `/api//vouchers/${id}/orders`, `/api/vouchers/${id}/orders/`];

const post = (t: TestApp, url: string, remoteAddress: string) => t.app.inject({ method: 'POST', url, remoteAddress });

describe('traffic guards by route', () => {
  it('when the router is asked for other spellings of a route, then encoded ones reach it and case, doubled or trailing slashes reach none', async () => {
    for (const url of claimSpellings) assert.equal((await post(base, url, '127.0.0.1')).statusCode, 401, url);
    for (const url of unmatchedSpellings) assert.equal((await post(base, url, '127.0.0.1')).statusCode, 404, url);
  });

  it('when one address spends IP_RATE_LIMIT on encoded spellings of the claim route, then every spelling of it, and any unknown URL, hears 429; the other routes do not', async (ctx) => {
    const t = await startSecondInstance(ctx, base, { IP_RATE_LIMIT: String(claimSpellings.length - 1), IP_RATE_WINDOW_MS: '60000' });
    const address = '203.0.113.20';
    // Every request counts, whatever its spelling: the last spelling is already over the limit.
    const answers = [];
    for (const url of claimSpellings.slice(1)) answers.push((await post(t, url, address)).statusCode);
    assert.deepEqual(answers, claimSpellings.slice(1).map(() => 401));
    for (const url of [...claimSpellings, ...unmatchedSpellings, '/nothing-here']) {
      const refused = await post(t, url, address);
      assert.equal(refused.statusCode, 429, url);
      assert.equal(refused.json().code, 'RATE_LIMITED');
      assert.ok(Number(refused.headers['retry-after']) >= 1);
    }
    for (const url of ['/healthz', '/%68ealthz', '/metrics', '/docs/json', '/console', `/store/${id}`, '/assets/style.css']) {
      assert.equal((await t.app.inject({ url, remoteAddress: address })).statusCode, 200, url);
    }
    assert.equal((await post(t, `/%61pi/vouchers/${id}/orders`, '203.0.113.21')).statusCode, 401, 'another address has its own count');
  });

  it('when unknown URLs come from one address, then they are counted by the per-address limit like /api requests', async (ctx) => {
    const t = await startSecondInstance(ctx, base, { IP_RATE_LIMIT: '3', IP_RATE_WINDOW_MS: '60000' });
    const address = '203.0.113.30';
    for (const url of ['/wp-login.php', '/API/vouchers', '/api/vouchers/1/orders/']) assert.equal((await post(t, url, address)).statusCode, 404, url);
    assert.equal((await post(t, `/%61pi/vouchers/${id}/orders`, address)).statusCode, 429);
  });

  it('when the process is under pressure, then every spelling of an /api route and any unknown URL answers 503, and the probes still answer', async (ctx) => {
    const t = await startSecondInstance(ctx, base, { OVERLOAD_HEAP_USED_MB: '1' }); // always exceeded, from the first sample on
    await waitFor('the overload guard', async () => (await t.app.inject({ url: `/api/vouchers/${id}` })).statusCode === 503, 5_000);
    for (const url of [...claimSpellings, ...unmatchedSpellings]) {
      const shed = await post(t, url, '127.0.0.1');
      assert.equal(shed.statusCode, 503, url);
      assert.equal(shed.json().code, 'UNAVAILABLE');
      assert.equal(shed.headers['retry-after'], '1');
    }
    assert.equal((await t.app.inject({ url: `/%61pi/vouchers/${id}` })).statusCode, 503);
    for (const url of ['/healthz', '/%68ealthz', '/metrics']) assert.equal((await t.app.inject({ url })).statusCode, 200, url);
  });
});
