// Bad input at every door, on the database of this pass (MariaDB, or PostgreSQL in scripts/test.sh's
// last pass): an id out of the 64-bit range or not written as one, text a database would not store
// as given, an instant outside what both store. Each is a 400 INVALID_REQUEST in the contract's
// shape, and neither store changes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSigner } from 'fast-jwt';
import { claim, createVoucher, orderAction, startTestApp, suiteScope } from '../support/helpers.js';
import { keysMatching } from '../../support/redis-keys.js';

const t = await startTestApp(suiteScope(), 'bad_input');

const MAX_ID = '9223372036854775807';
const BAD_IDS = ['9223372036854775808', '18446744073709551616', '12345678901234567890', '0', '-1', '01', '1e3', ' 1', '1.0', 'abc'];

/** Every row of every table and every key of this app's prefix with its serialized value. */
async function stores() {
  const { db, redis, keys } = t.c;
  const tables = ['vouchers', 'orders', 'user_quantities', 'release_outbox', 'order_events'] as const;
  const rows = await Promise.all(tables.map(async (table) => [table, (await db.selectFrom(table).selectAll().execute()).map((r) => JSON.stringify(r)).sort()]));
  const names = await keysMatching(redis, keys.pattern());
  const values = await Promise.all(names.sort().map(async (k) => [k, (await redis.dumpBuffer(k))?.toString('hex')]));
  // A key listed by SCAN may expire before its DUMP (a rate-limit bucket): it is not there.
  return { rows: Object.fromEntries(rows), redis: Object.fromEntries(values.filter(([, value]) => value !== undefined)) };
}

/**
 * No row changed, and no Redis key was written: every key there now was there before with the same
 * value (a rate-limit bucket of an earlier claim may have expired meanwhile).
 */
async function assertUnchanged(before: Awaited<ReturnType<typeof stores>>) {
  const now = await stores();
  assert.deepEqual(now.rows, before.rows);
  for (const [key, value] of Object.entries(now.redis)) assert.equal(value, before.redis[key], `Redis key ${key} written`);
}

function assertRefused(res: { statusCode: number; json(): any }, message: RegExp, what: string) {
  assert.equal(res.statusCode, 400, `${what}: ${res.statusCode} ${JSON.stringify(res.json())}`);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message'], what);
  assert.equal(body.code, 'INVALID_REQUEST', what);
  assert.match(body.message, message, what);
}

const ID_MESSAGE = 'must be a positive 64-bit integer: decimal digits without a leading zero, 1 to 9223372036854775807';

// Something in both stores for bad input to disturb: vouchers of each kind, an order.
const seckill = await createVoucher(t, { kind: 'seckill', stock: 5, waitlist: true });
const limited = await createVoucher(t, { kind: 'limited', stock: 5 });
await createVoucher(t, { kind: 'common', stock: 5, claimToken: true });
assert.equal((await claim(t, limited.id, 7)).statusCode, 201);

describe('bad input changes nothing', () => {
  it('when an id in a path or a query is out of range or not a plain decimal, then every route answers 400 INVALID_REQUEST saying what an id must be, and neither store changes', async () => {
    const before = await stores();
    const user = { authorization: `Bearer ${await t.token(7)}` };
    const admin = { authorization: `Bearer ${await t.admin()}` };
    const routes: { method: 'GET' | 'POST'; url: (id: string) => string; headers?: Record<string, string>; part: string }[] = [
      { method: 'GET', url: (id) => `/api/vouchers/${id}`, part: 'params /id' },
      { method: 'POST', url: (id) => `/api/vouchers/${id}/orders`, headers: { ...user, 'idempotency-key': 'k1' }, part: 'params /id' },
      { method: 'GET', url: (id) => `/api/vouchers/${id}/claim-token`, headers: user, part: 'params /id' },
      { method: 'GET', url: (id) => `/api/vouchers/${id}/waitlist/me`, headers: user, part: 'params /id' },
      { method: 'GET', url: (id) => `/api/vouchers/${id}/stats`, headers: admin, part: 'params /id' },
      { method: 'POST', url: (id) => `/api/vouchers/${id}/reconcile`, headers: admin, part: 'params /id' },
      { method: 'GET', url: (id) => `/api/vouchers/${id}/audit`, headers: admin, part: 'params /id' },
      { method: 'GET', url: (id) => `/api/vouchers/${id}/live`, headers: admin, part: 'params /id' },
      { method: 'GET', url: (id) => `/api/orders/${id}`, headers: user, part: 'params /id' },
      { method: 'POST', url: (id) => `/api/orders/${id}/pay`, headers: user, part: 'params /id' },
      { method: 'POST', url: (id) => `/api/orders/${id}/cancel`, headers: user, part: 'params /id' },
      { method: 'GET', url: (id) => `/api/orders?voucherId=${id}`, headers: user, part: 'querystring /voucherId' },
      { method: 'GET', url: (id) => `/store/${id}`, part: 'params /voucherId' },
    ];
    for (const route of routes) {
      for (const id of BAD_IDS) {
        const url = route.url(encodeURIComponent(id));
        const res = await t.app.inject({ method: route.method, url, headers: route.headers ?? {} });
        assertRefused(res, new RegExp(`^${route.part.replace('/', '\\/')} ${ID_MESSAGE}$`), `${route.method} ${url}`);
      }
    }
    // The largest id is an id: it reaches the use case, which finds nothing.
    assert.equal((await t.app.inject({ method: 'GET', url: `/api/orders/${MAX_ID}`, headers: user })).json().code, 'ORDER_NOT_FOUND');
    assert.equal((await orderAction(t, 'pay', MAX_ID, 7)).json().code, 'ORDER_NOT_FOUND');
    assert.equal((await claim(t, MAX_ID, 7, { idempotencyKey: 'k2' })).json().code, 'VOUCHER_NOT_FOUND');
    await assertUnchanged(before);
  });

  it('when a bearer token names a user id out of range or not a plain decimal, then it is refused 401 UNAUTHORIZED and nothing is claimed', async () => {
    const before = await stores();
    const sign = createSigner({ key: t.env.JWT_SECRET!, algorithm: 'HS256', expiresIn: 60_000 });
    for (const sub of ['9223372036854775808', '0', '01', ' 1', '1e3']) {
      const res = await t.app.inject({ method: 'POST', url: `/api/vouchers/${seckill.id}/orders`, headers: { authorization: `Bearer ${sign({ sub })}`, 'idempotency-key': 'k3' } });
      assert.equal(res.statusCode, 401, `sub ${JSON.stringify(sub)}: ${res.body}`);
      assert.equal(res.json().code, 'UNAUTHORIZED');
    }
    await assertUnchanged(before);
  });

  it('when a voucher title holds NUL, an unpaired surrogate or a control character, then it is refused 400 and nothing is stored; tab, line breaks and any other character are stored as given', async () => {
    const admin = { authorization: `Bearer ${await t.admin()}` };
    const create = (title: string, kind = 'common') =>
      t.app.inject({
        method: 'POST',
        url: '/api/vouchers',
        headers: { ...admin, 'content-type': 'application/json' },
        // JSON.stringify writes an unpaired surrogate as an escape (\ud800), as a client would.
        payload: JSON.stringify({ title, kind, stock: 1, beginAt: new Date(Date.now() - 1000).toISOString(), endAt: new Date(Date.now() + 3_600_000).toISOString() }),
      });
    const before = await stores();
    for (const title of ['a\u0000b', '\u0000', '\ud800', 'x\udc00y', '\udbff', 'bell\u0007', 'esc\u001b[31m', 'vt\u000b', 'del\u0008']) {
      for (const kind of ['common', 'seckill']) {
        assertRefused(await create(title, kind), /^body: \/title must not contain NUL, control characters other than tab and line breaks, or unpaired surrogates$/, JSON.stringify(title));
      }
    }
    await assertUnchanged(before);

    for (const title of ['tab\there', 'two\nlines\r\n', 'Grüße 😀 秒杀', '\u007f\u0085\ufffd\uffff']) {
      const res = await create(title);
      assert.equal(res.statusCode, 201, `${JSON.stringify(title)}: ${res.body}`);
      const row = await t.c.db.selectFrom('vouchers').select('title').where('id', '=', res.json().id).executeTakeFirstOrThrow();
      assert.equal(row.title, title, 'stored as given');
      assert.equal(res.json().title, title);
    }
  });

  it('when a sale time lies outside years 1000 to 9999 (UTC), then it is refused 400 and nothing is stored; the last millisecond of 9999 is stored as given', async () => {
    const admin = { authorization: `Bearer ${await t.admin()}` };
    const create = (beginAt: string, endAt: string) =>
      t.app.inject({ method: 'POST', url: '/api/vouchers', headers: admin, payload: { title: 'times', kind: 'common', stock: 1, beginAt, endAt } });
    const before = await stores();
    // An offset carries a year-9999 local time into year 10000 (UTC); years below 100 came back as 19xx or 20xx from MariaDB.
    assertRefused(await create('2020-01-01T00:00:00Z', '9999-12-31T23:59:59-23:00'), /^body: \/endAt must be at or before 9999-12-31T23:59:59.999Z$/, 'year 10000');
    assertRefused(await create('0000-01-01T00:00:00Z', '2030-01-01T00:00:00Z'), /^body: \/beginAt must be at or after 1000-01-01T00:00:00Z$/, 'year 0');
    assertRefused(await create('0099-06-01T00:00:00Z', '2030-01-01T00:00:00Z'), /^body: \/beginAt must be at or after/, 'year 99');
    await assertUnchanged(before);

    const res = await create('1000-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z');
    assert.equal(res.statusCode, 201, res.body);
    const row = await t.c.db.selectFrom('vouchers').select(['begin_at', 'end_at']).where('id', '=', res.json().id).executeTakeFirstOrThrow();
    assert.deepEqual([row.begin_at.toISOString(), row.end_at.toISOString()], ['1000-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z']);
  });
});

// Without this, an empty or blind snapshot would let every test above pass.
describe('the snapshot of the stores', () => {
  it('when a claim with a valid id is admitted, then the snapshot sees it', async () => {
    const before = await stores();
    assert.equal((await claim(t, seckill.id, 8)).statusCode, 202);
    assert.notDeepEqual((await stores()).redis, before.redis);
  });
});
