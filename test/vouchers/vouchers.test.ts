import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claim, createVoucher, redisView, startTestApp, suiteScope } from '../support/helpers.js';

const t = await startTestApp(suiteScope(), 'vouchers');

const valid = () => ({
  title: 'Spring drop',
  kind: 'seckill',
  stock: 100,
  beginAt: new Date(Date.now() - 1000).toISOString(),
  endAt: new Date(Date.now() + 3_600_000).toISOString(),
});

async function post(body: unknown, token?: string) {
  return t.app.inject({
    method: 'POST',
    url: '/api/vouchers',
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    payload: body as Record<string, unknown>,
  });
}

async function voucherCount(): Promise<number> {
  const row = await t.c.db.selectFrom('vouchers').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('creating vouchers', () => {
  it('creates a seckill voucher with defaults, warms it into Redis and reads it back with live availability', async () => {
    const res = await post(valid(), await t.admin());
    assert.equal(res.statusCode, 201);
    const v = res.json();
    assert.match(v.id, /^\d+$/);
    assert.deepEqual({ ...v, id: undefined, beginAt: undefined, endAt: undefined }, {
      id: undefined,
      title: 'Spring drop',
      kind: 'seckill',
      stock: 100,
      available: 100,
      beginAt: undefined,
      endAt: undefined,
      perUserLimit: 1,
      paymentTimeoutSeconds: 900,
      waitlist: false,
      claimToken: false,
      segments: 1,
      queue: null,
      price: 0,
      currency: 'USD',
    });
    assert.equal((await redisView(t, v.id)).stock, 100);
    await claim(t, v.id, 5);
    const read = await t.app.inject({ method: 'GET', url: `/api/vouchers/${v.id}` });
    assert.equal(read.statusCode, 200);
    assert.equal(read.json().available, 99);
    assert.equal(read.json().stock, 100);
  });

  it('creates limited and common vouchers without Redis state', async () => {
    for (const kind of ['limited', 'common']) {
      const res = await post({ ...valid(), kind, perUserLimit: 3 }, await t.admin());
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.json().kind, kind);
      assert.equal((await redisView(t, res.json().id)).stock, null);
      const read = await t.app.inject({ method: 'GET', url: `/api/vouchers/${res.json().id}` });
      assert.equal(read.json().available, 100);
    }
  });

  it('refuses anonymous and non-admin callers', async () => {
    const before = await voucherCount();
    const anonymous = await post(valid());
    assert.equal(anonymous.statusCode, 401);
    assert.equal(anonymous.json().code, 'UNAUTHORIZED');
    const user = await post(valid(), await t.token(42));
    assert.equal(user.statusCode, 403);
    assert.equal(user.json().code, 'FORBIDDEN');
    assert.equal(await voucherCount(), before);
  });

  it('answers every invalid body with 400 INVALID_REQUEST and stores nothing', async () => {
    const admin = await t.admin();
    const before = await voucherCount();
    const cases: [string, unknown][] = [
      ['missing title', { ...valid(), title: undefined }],
      ['empty title', { ...valid(), title: '' }],
      ['title too long', { ...valid(), title: 'x'.repeat(201) }],
      ['unknown kind', { ...valid(), kind: 'flash' }],
      ['stock zero', { ...valid(), stock: 0 }],
      ['stock too large', { ...valid(), stock: 10_000_001 }],
      ['stock fractional', { ...valid(), stock: 1.5 }],
      ['stock as string', { ...valid(), stock: '100' }],
      ['beginAt not a date', { ...valid(), beginAt: 'tomorrow' }],
      ['endAt before beginAt', { ...valid(), endAt: new Date(Date.now() - 5000).toISOString() }],
      ['endAt equal to beginAt', ((v) => ({ ...v, endAt: v.beginAt }))(valid())],
      ['perUserLimit zero', { ...valid(), perUserLimit: 0 }],
      ['paymentTimeoutSeconds zero', { ...valid(), paymentTimeoutSeconds: 0 }],
      ['paymentTimeoutSeconds above a day', { ...valid(), paymentTimeoutSeconds: 86_401 }],
      ['waitlist not boolean', { ...valid(), waitlist: 'yes' }],
      ['waitlist on a common voucher', { ...valid(), kind: 'common', waitlist: true }],
      ['segments zero', { ...valid(), segments: 0 }],
      ['segments above 64', { ...valid(), segments: 65 }],
      ['segments above SHARDS (4 here)', { ...valid(), segments: 5 }],
      ['segments on a limited voucher', { ...valid(), kind: 'limited', segments: 2 }],
      ['unknown field', { ...valid(), discount: 10 }],
      ['negative price', { ...valid(), price: -1 }],
      ['lower-case currency', { ...valid(), currency: 'eur' }],
      ['not an object', [1, 2]],
    ];
    for (const [name, body] of cases) {
      const res = await post(body, admin);
      assert.equal(res.statusCode, 400, `${name}: ${res.body}`);
      assert.equal(res.json().code, 'INVALID_REQUEST', name);
    }
    const malformed = await t.app.inject({
      method: 'POST',
      url: '/api/vouchers',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      payload: '{"title":',
    });
    assert.equal(malformed.statusCode, 400);
    assert.equal(malformed.json().code, 'INVALID_REQUEST');
    assert.equal(await voucherCount(), before);
  });

  it('answers unknown and malformed voucher ids with 404 and 400', async () => {
    assert.equal((await t.app.inject({ method: 'GET', url: '/api/vouchers/777' })).json().code, 'VOUCHER_NOT_FOUND');
    assert.equal((await t.app.inject({ method: 'GET', url: '/api/vouchers/-1' })).statusCode, 400);
    assert.equal((await t.app.inject({ method: 'GET', url: '/api/vouchers/0x10' })).statusCode, 400);
  });
});

describe('rebuilding Redis state from the database', () => {
  it('when the voucher keys are lost, then the next claim rebuilds them from the database and never resurrects sold units', async () => {
    const v = await createVoucher(t, { stock: 10, perUserLimit: 2 });
    const id = BigInt(v.id);
    // The database has sold 7 units, 2 of them to user 500 (as the order pipeline would record).
    await t.c.db.updateTable('vouchers').set({ stock: 3 }).where('id', '=', v.id).execute();
    await t.c.db.insertInto('user_quantities').values({ voucher_id: v.id, user_id: '500', quantity: 2 }).execute();
    await t.c.redis.del(t.c.keys.voucher(id), t.c.keys.buyers(id));

    const repeat = await claim(t, v.id, 500);
    assert.equal(repeat.json().code, 'LIMIT_EXCEEDED', 'the per-user count came back from the database');
    const responses = await Promise.all(Array.from({ length: 10 }, (_, i) => claim(t, v.id, 600 + i)));
    assert.equal(responses.filter((r) => r.statusCode === 202).length, 3);
    assert.equal((await redisView(t, v.id)).stock, 0);
  });

  it('when only the voucher hash is lost while orders are in flight, then the rebuilt stock subtracts them', async () => {
    const v = await createVoucher(t, { stock: 10, perUserLimit: 1 });
    const id = BigInt(v.id);
    for (const u of [701, 702]) assert.equal((await claim(t, v.id, u)).statusCode, 202);
    await t.c.redis.del(t.c.keys.voucher(id), t.c.keys.buyers(id));

    const read = await t.app.inject({ method: 'GET', url: `/api/vouchers/${v.id}` });
    assert.equal(read.json().available, 8);
    const view = await redisView(t, v.id);
    assert.equal(view.stock, 8);
    assert.equal(view.inflightCount, 2);
    assert.deepEqual(view.buyers, { '701': 1, '702': 1 });
    assert.equal((await claim(t, v.id, 701)).json().code, 'LIMIT_EXCEEDED');
  });

  it('when many claims arrive at once on a lost state, then it is rebuilt once and stock stays exact', async (ctx) => {
    const v = await createVoucher(t, { stock: 20 });
    const id = BigInt(v.id);
    await t.c.redis.del(t.c.keys.voucher(id));
    const rewarm = ctx.mock.method(t.c.redisState, 'rewarm');
    const responses = await Promise.all(Array.from({ length: 60 }, (_, i) => claim(t, v.id, 900 + i)));
    assert.equal(responses.filter((r) => r.statusCode === 202).length, 20);
    assert.ok(responses.every((r) => r.statusCode === 202 || r.json().code === 'SOLD_OUT'), 'no 5xx while rebuilding');
    const calls = rewarm.mock.calls.filter((call) => call.arguments[0].id === id);
    const rebuilt = await Promise.all(calls.map((call) => call.result));
    assert.equal(rebuilt.filter(Boolean).length, 1, `rebuilt by one of the ${calls.length} claims that found it missing`);
    const view = await redisView(t, v.id);
    assert.equal(view.stock, 0);
    assert.equal(view.entries.length, 20);
  });
});
