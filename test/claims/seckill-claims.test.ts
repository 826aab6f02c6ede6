import assert from 'node:assert/strict';
import type { InjectOptions } from 'fastify';
import { describe, it } from 'node:test';
import { claim, createVoucher, redisView, startTestApp, suiteScope } from '../support/helpers.js';
import { waitFor } from '../../support/wait.js';

// Several tests here send one buyer's claims many at once; the per-buyer token bucket (on by
// default, test/claims/token-buckets.test.ts) would answer most of them 429.
const t = await startTestApp(suiteScope(), 'claims', { BUCKET_USER_RATE: '0' });

describe('seckill admission', () => {
  it('when 600 requests from 300 users (half of them twice) race for 50 units, then exactly 50 are admitted, one per user', async () => {
    const v = await createVoucher(t, { stock: 50, perUserLimit: 1 });
    const users = Array.from({ length: 300 }, (_, i) => 1000 + i);
    const senders = [...users, ...users];
    const responses = await Promise.all(senders.map((u) => claim(t, v.id, u)));

    const byStatus = new Map<number, number>();
    const admittedUsers = new Map<string, number>();
    const orderIds = new Set<string>();
    for (const [i, res] of responses.entries()) {
      byStatus.set(res.statusCode, (byStatus.get(res.statusCode) ?? 0) + 1);
      if (res.statusCode === 202) {
        const user = String(senders[i]);
        admittedUsers.set(user, (admittedUsers.get(user) ?? 0) + 1);
        assert.equal(res.json().status, 'processing');
        orderIds.add(res.json().orderId);
      } else {
        assert.equal(res.statusCode, 409);
        assert.ok(['SOLD_OUT', 'LIMIT_EXCEEDED'].includes(res.json().code), res.body);
      }
    }
    assert.equal(byStatus.get(202), 50);
    assert.equal(orderIds.size, 50, 'order ids are unique');
    assert.ok([...admittedUsers.values()].every((n) => n === 1), 'no user admitted twice');

    const view = await redisView(t, v.id);
    assert.equal(view.stock, 0);
    assert.equal(view.entries.length, 50, 'one stream entry per admission');
    assert.equal(view.inflight.length, 50);
    assert.equal(view.inflightCount, 50);
    assert.deepEqual(new Set(view.inflight.map((o) => o.orderId)), orderIds);
    assert.equal(Object.values(view.buyers).reduce((a, b) => a + b, 0), 50);
    assert.ok(Object.values(view.buyers).every((q) => q === 1));
  });

  it('when users buy several units under a limit above one, then nobody exceeds the limit and stock is exact', async () => {
    const v = await createVoucher(t, { stock: 100, perUserLimit: 5 });
    // 40 users, each tries quantity 2 three times: at most 2 requests (4 units) fit under limit 5.
    const attempts = Array.from({ length: 40 }, (_, u) => [u, u, u]).flat();
    const responses = await Promise.all(attempts.map((u) => claim(t, v.id, 5000 + u, { quantity: 2 })));
    const admitted = responses.filter((r) => r.statusCode === 202).length;
    assert.equal(admitted, 50, '100 units / 2 per order');
    const view = await redisView(t, v.id);
    assert.equal(view.stock, 0);
    assert.ok(Object.values(view.buyers).every((q) => q <= 5 && q % 2 === 0));
    assert.equal(Object.values(view.buyers).reduce((a, b) => a + b, 0), 100);
    assert.equal(view.entries.length, 50);
    assert.ok(view.inflight.every((o) => o.quantity === 2));
  });

  it('when a quantity larger than the stock left is asked, then SOLD_OUT and nothing changes', async () => {
    const v = await createVoucher(t, { stock: 3, perUserLimit: 10 });
    assert.equal((await claim(t, v.id, 7, { quantity: 2 })).statusCode, 202);
    const res = await claim(t, v.id, 8, { quantity: 2 });
    assert.equal(res.statusCode, 409);
    assert.deepEqual(res.json(), { code: 'SOLD_OUT', message: 'sold out', waitlisted: false });
    const view = await redisView(t, v.id);
    assert.equal(view.stock, 1);
    assert.deepEqual(view.buyers, { '7': 2 });
  });

  it('when a buyer at the limit asks again after the sale sold out, then LIMIT_EXCEEDED, not SOLD_OUT', async () => {
    const v = await createVoucher(t, { stock: 1 });
    assert.equal((await claim(t, v.id, 11)).statusCode, 202);
    const again = await claim(t, v.id, 11);
    assert.equal(again.json().code, 'LIMIT_EXCEEDED');
    const other = await claim(t, v.id, 12);
    assert.equal(other.json().code, 'SOLD_OUT');
  });

  it('when the sale has not begun or has ended, then NOT_STARTED / ENDED and stock is untouched', async () => {
    const early = await createVoucher(t, { stock: 5, beginAt: new Date(Date.now() + 3_600_000), endAt: new Date(Date.now() + 7_200_000) });
    const late = await createVoucher(t, { stock: 5, beginAt: new Date(Date.now() - 7_200_000), endAt: new Date(Date.now() - 1_000) });
    const a = await claim(t, early.id, 21);
    const b = await claim(t, late.id, 21);
    assert.equal(a.statusCode, 409);
    assert.equal(a.json().code, 'NOT_STARTED');
    assert.equal(b.json().code, 'ENDED');
    for (const v of [early, late]) {
      const view = await redisView(t, v.id);
      assert.equal(view.stock, 5);
      assert.deepEqual(view.buyers, {});
      assert.equal(view.entries.length, 0);
    }
  });

  it('when the window opens a moment later, then the same claim is admitted once it is open', async () => {
    const beginAt = new Date(Date.now() + 1_500);
    const v = await createVoucher(t, { stock: 2, beginAt, endAt: new Date(Date.now() + 60_000) });
    assert.equal((await claim(t, v.id, 31)).json().code, 'NOT_STARTED');
    await waitFor('the window to open', async () => {
      const res = await claim(t, v.id, 31);
      if (res.statusCode !== 202) assert.equal(res.json().code, 'NOT_STARTED', res.body);
      return res.statusCode === 202;
    });
    // Redis and this process read the same clock: the window is the one the voucher was given.
    assert.ok(Date.now() >= beginAt.getTime(), 'admitted before beginAt');
  });

  it('when a request is retried with the same Idempotency-Key, then the same order id comes back and no second unit is taken', async () => {
    const v = await createVoucher(t, { stock: 10, perUserLimit: 3 });
    const first = await claim(t, v.id, 41, { idempotencyKey: 'k-1' });
    const retries = await Promise.all(Array.from({ length: 5 }, () => claim(t, v.id, 41, { idempotencyKey: 'k-1' })));
    assert.equal(first.statusCode, 202);
    for (const r of retries) {
      assert.equal(r.statusCode, 202);
      assert.equal(r.json().orderId, first.json().orderId);
    }
    // Another user with the same key is another request.
    const otherUser = await claim(t, v.id, 42, { idempotencyKey: 'k-1' });
    assert.notEqual(otherUser.json().orderId, first.json().orderId);
    const view = await redisView(t, v.id);
    assert.equal(view.stock, 8);
    assert.deepEqual(view.buyers, { '41': 1, '42': 1 });
    assert.equal(view.entries.length, 2);
  });

  it('when concurrent first requests share one Idempotency-Key, then one order is created', async () => {
    const v = await createVoucher(t, { stock: 10, perUserLimit: 5 });
    const responses = await Promise.all(Array.from({ length: 20 }, () => claim(t, v.id, 51, { idempotencyKey: 'race' })));
    assert.equal(new Set(responses.map((r) => r.json().orderId)).size, 1);
    assert.equal((await redisView(t, v.id)).stock, 9);
  });

  it('when an Idempotency-Key is reused with another quantity, then 422 and nothing changes', async () => {
    const v = await createVoucher(t, { stock: 10, perUserLimit: 5 });
    assert.equal((await claim(t, v.id, 61, { quantity: 1, idempotencyKey: 'q' })).statusCode, 202);
    const res = await claim(t, v.id, 61, { quantity: 2, idempotencyKey: 'q' });
    assert.equal(res.statusCode, 422);
    assert.equal(res.json().code, 'IDEMPOTENCY_KEY_REUSED');
    assert.equal((await redisView(t, v.id)).stock, 9);
  });

  it('when an admitted order is read back, then it is processing for its owner and not found for others', async () => {
    const v = await createVoucher(t, { stock: 5 });
    const { orderId } = (await claim(t, v.id, 71, { quantity: 1 })).json();
    const own = await t.app.inject({ method: 'GET', url: `/api/orders/${orderId}`, headers: { authorization: `Bearer ${await t.token(71)}` } });
    assert.equal(own.statusCode, 200);
    assert.deepEqual({ ...(own.json() as object), createdAt: undefined }, {
      id: orderId,
      voucherId: v.id,
      userId: '71',
      quantity: 1,
      status: 'processing',
      amount: 0,
      currency: 'USD',
      createdAt: undefined,
    });
    const other = await t.app.inject({ method: 'GET', url: `/api/orders/${orderId}`, headers: { authorization: `Bearer ${await t.token(72)}` } });
    assert.equal(other.statusCode, 404);
    assert.equal(other.json().code, 'ORDER_NOT_FOUND');
    const admin = await t.app.inject({ method: 'GET', url: `/api/orders/${orderId}`, headers: { authorization: `Bearer ${await t.admin()}` } });
    assert.equal(admin.statusCode, 200);
    const unknown = await t.app.inject({ method: 'GET', url: '/api/orders/123456789', headers: { authorization: `Bearer ${await t.token(71)}` } });
    assert.equal(unknown.statusCode, 404);
  });
});

describe('bad claims change nothing', () => {
  it('answers each malformed claim with its 4xx code and leaves stock, buyers and stream alone', async () => {
    const v = await createVoucher(t, { stock: 5, perUserLimit: 5 });
    const user = `Bearer ${await t.token(81)}`;
    const url = `/api/vouchers/${v.id}/orders`;
    const json = { authorization: user, 'content-type': 'application/json' };
    const cases: [string, InjectOptions, number, string][] = [
      ['no token', { method: 'POST', url }, 401, 'UNAUTHORIZED'],
      ['garbage token', { method: 'POST', url, headers: { authorization: 'Bearer abc.def.ghi' } }, 401, 'UNAUTHORIZED'],
      ['quantity 0', { method: 'POST', url, headers: json, payload: { quantity: 0 } }, 400, 'INVALID_REQUEST'],
      ['quantity negative', { method: 'POST', url, headers: json, payload: { quantity: -1 } }, 400, 'INVALID_REQUEST'],
      ['quantity fractional', { method: 'POST', url, headers: json, payload: { quantity: 1.5 } }, 400, 'INVALID_REQUEST'],
      ['quantity as string', { method: 'POST', url, headers: json, payload: { quantity: '1' } }, 400, 'INVALID_REQUEST'],
      ['unknown field', { method: 'POST', url, headers: json, payload: { quantity: 1, price: 0 } }, 400, 'INVALID_REQUEST'],
      ['malformed JSON', { method: 'POST', url, headers: json, payload: '{"quantity":' }, 400, 'INVALID_REQUEST'],
      ['body is an array', { method: 'POST', url, headers: json, payload: '[1]' }, 400, 'INVALID_REQUEST'],
      ['oversized body', { method: 'POST', url, headers: json, payload: JSON.stringify({ quantity: 1, pad: 'x'.repeat(20_000) }) }, 413, 'PAYLOAD_TOO_LARGE'],
      ['bad idempotency key', { method: 'POST', url, headers: { ...json, 'idempotency-key': 'has space' }, payload: {} }, 400, 'INVALID_REQUEST'],
      ['idempotency key too long', { method: 'POST', url, headers: { ...json, 'idempotency-key': 'k'.repeat(65) }, payload: {} }, 400, 'INVALID_REQUEST'],
      ['voucher id not a number', { method: 'POST', url: '/api/vouchers/abc/orders', headers: json, payload: {} }, 400, 'INVALID_REQUEST'],
      ['voucher id too large', { method: 'POST', url: '/api/vouchers/99999999999999999999/orders', headers: json, payload: {} }, 400, 'INVALID_REQUEST'],
      ['unknown voucher', { method: 'POST', url: '/api/vouchers/424242/orders', headers: json, payload: {} }, 404, 'VOUCHER_NOT_FOUND'],
      ['over the limit', { method: 'POST', url, headers: json, payload: { quantity: 6 } }, 409, 'LIMIT_EXCEEDED'],
    ];
    for (const [name, request, status, code] of cases) {
      const res = await t.app.inject(request);
      assert.equal(res.statusCode, status, `${name}: ${res.body}`);
      assert.equal(res.json().code, code, name);
      assert.equal(typeof res.json().message, 'string', name);
      assert.doesNotMatch(res.body, /at .*\.ts:\d+/, `${name}: no stack trace`);
    }
    const view = await redisView(t, v.id);
    assert.equal(view.stock, 5);
    assert.deepEqual(view.buyers, {});
    assert.equal(view.entries.length, 0);
  });

  it('accepts a claim without a body as quantity 1', async () => {
    const v = await createVoucher(t, { stock: 2 });
    const res = await t.app.inject({ method: 'POST', url: `/api/vouchers/${v.id}/orders`, headers: { authorization: `Bearer ${await t.token(91)}` } });
    assert.equal(res.statusCode, 202);
    assert.deepEqual((await redisView(t, v.id)).buyers, { '91': 1 });
  });

  it('rejects an expired token', async () => {
    const v = await createVoucher(t, { stock: 2 });
    const expired = await t.c.tokens.sign({ userId: 5n, admin: false }, -10);
    const res = await t.app.inject({ method: 'POST', url: `/api/vouchers/${v.id}/orders`, headers: { authorization: `Bearer ${expired}` } });
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().message, 'token expired');
  });
});
