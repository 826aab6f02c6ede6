import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Container } from '../../src/container.js';
import type { OrderEvent } from '../../src/orders/order-pubsub.js';
import { claim, createVoucher, orderAction, range, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants } from '../support/invariants.js';
import { waitFor } from '../../support/wait.js';

const LOCK_TTL_MS = 300;

// Two apps: the races run with the default claim lock lifetime; the lock scenarios with a short
// one, so that a claim outlives its first lease within a fraction of a second.
// Several tests here send one buyer's claims many at once; the per-buyer token bucket (on by
// default, test/claims/token-buckets.test.ts) would answer most of them 429.
const NO_USER_BUCKET = { BUCKET_USER_RATE: '0' };
const [t, short] = await Promise.all([
  startTestApp(suiteScope(), 'sql-claims', NO_USER_BUCKET),
  startTestApp(suiteScope(), 'sql-claims-lock', { ...NO_USER_BUCKET, CLAIM_LOCK_TTL_MS: String(LOCK_TTL_MS) }),
]);

/** What the database holds for a voucher. */
async function dbState(c: Container, voucherId: string) {
  const { stock } = await c.db.selectFrom('vouchers').select('stock').where('id', '=', voucherId).executeTakeFirstOrThrow();
  const orders = await c.db.selectFrom('orders').selectAll().where('voucher_id', '=', voucherId).execute();
  const quantities = new Map(
    (await c.db.selectFrom('user_quantities').select(['user_id', 'quantity']).where('voucher_id', '=', voucherId).execute()).map((r) => [r.user_id, r.quantity]),
  );
  return { stock, orders, quantities };
}

/** Locks the voucher row from another connection, so claims wait for it; returns the release. */
async function holdVoucherRow(c: Container, voucherId: string): Promise<() => Promise<void>> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => (locked = resolve));
  const done = c.db.transaction().execute(async (trx) => {
    await trx.selectFrom('vouchers').select('id').where('id', '=', voucherId).forUpdate().execute();
    locked();
    // Bounded, so that a test that dies before releasing it cannot hang the file's clean-up.
    await Promise.race([released, sleep(10_000, undefined, { ref: false })]);
  });
  await Promise.race([isLocked, done]);
  return async () => {
    release();
    await done;
  };
}

const mutexKey = (c: Container, voucherId: string, userId: number) => `mutex:${c.keys.claimLock(BigInt(voucherId), BigInt(userId))}`;

function tally(responses: { statusCode: number; json(): any }[]) {
  const codes = new Map<string, number>();
  const orderIds: string[] = [];
  for (const res of responses) {
    if (res.statusCode === 201) {
      assert.equal(res.json().status, 'pending_payment');
      orderIds.push(res.json().orderId);
    } else {
      const code = res.json().code as string;
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
  }
  return { codes, orderIds };
}

describe('synchronous claims (common and limited)', () => {
  it('when 200 claims from 120 buyers race for 50 units of a common voucher, then exactly 50 are sold, stored as pending payment', async () => {
    const v = await createVoucher(t, { kind: 'common', stock: 50, perUserLimit: 1, paymentTimeoutSeconds: 600 });
    const buyers = [...range(1000, 120), ...range(1000, 80)];
    const { codes, orderIds } = tally(await Promise.all(buyers.map((u) => claim(t, v.id, u))));

    assert.equal(orderIds.length, 50);
    assert.equal(new Set(orderIds).size, 50, 'order ids are unique');
    assert.deepEqual([...codes.keys()].filter((c) => c !== 'SOLD_OUT' && c !== 'LIMIT_EXCEEDED'), []);
    assert.equal((codes.get('SOLD_OUT') ?? 0) + (codes.get('LIMIT_EXCEEDED') ?? 0), 150);

    const db = await dbState(t.c, v.id);
    assert.equal(db.stock, 0);
    assert.ok([...db.quantities.values()].every((q) => q <= 1));
    assert.deepEqual(new Set(db.orders.map((o) => o.id)), new Set(orderIds));
    for (const o of db.orders) {
      assert.equal(o.status, 'pending_payment');
      // Both from the database clock of the insert: the window is exactly the voucher's timeout.
      assert.equal(o.expires_at!.getTime() - o.created_at.getTime(), 600_000);
      assert.ok(Math.abs(o.created_at.getTime() - Date.now()) < 60_000, 'created now');
    }
    await assertInvariants(t.c, v.id, orderIds);
  });

  it('when buyers of a limited voucher send several claims at once, then each buyer has one claim in progress, the limit holds and exactly the stock is sold', async () => {
    const v = await createVoucher(t, { kind: 'limited', stock: 50, perUserLimit: 2 });
    const buyers = range(2000, 100).flatMap((u) => [u, u, u]);
    const { codes, orderIds } = tally(await Promise.all(buyers.map((u) => claim(t, v.id, u))));

    assert.equal(orderIds.length, 50);
    assert.deepEqual([...codes.keys()].filter((c) => !['SOLD_OUT', 'LIMIT_EXCEEDED', 'CLAIM_IN_PROGRESS'].includes(c)), []);
    assert.ok((codes.get('CLAIM_IN_PROGRESS') ?? 0) > 0, 'concurrent claims of one buyer are turned away');
    const db = await dbState(t.c, v.id);
    assert.equal(db.stock, 0);
    assert.ok([...db.quantities.values()].every((q) => q <= 2));
    assert.equal([...db.quantities.values()].reduce((a, b) => a + b, 0), 50);
    // One key per EXISTS: each buyer's lock is in its own slot (a cluster refuses one command over several).
    const held = await Promise.all(range(2000, 100).map((u) => t.c.redis.exists(mutexKey(t.c, v.id, u))));
    assert.equal(held.reduce((n, e) => n + e, 0), 0, 'every claim lock is released');
    await assertInvariants(t.c, v.id, orderIds);
  });

  for (const kind of ['common', 'limited'] as const) {
    it(`when ${kind} claims, cancellations and expiries race on one voucher row, then claims share transactions and every invariant holds on both stores`, async () => {
      const STOCK = 40;
      const v = await createVoucher(t, { kind, stock: STOCK, perUserLimit: 2, paymentTimeoutSeconds: 1 });
      const groupsBefore = (await t.c.metrics.sqlClaimGroups.get()).values;
      const count = (values: typeof groupsBefore, name: string) => values.find((x) => x.metricName === `seckill_sql_claim_group_size_${name}`)?.value ?? 0;
      const answers: { user: number; key?: string; statusCode: number; body: any }[] = [];
      let storming = true;
      // The payment timer, as workers run it, all through the storm: orders expire one second after they are stored.
      const expiring = (async () => {
        while (storming) {
          await t.c.releases.expireDue({ limit: 500, voucherId: BigInt(v.id) });
          await sleep(50);
        }
      })();
      // Four waves a third of a second apart, over the first orders' expiry: 100 buyers, 300 claims,
      // every third buyer retrying with one Idempotency-Key; about a tenth of the orders cancelled at once.
      let cancelled = 0;
      for (let wave = 0; wave < 4; wave++) {
        const claims = range(3000 + wave * 25, 25).flatMap((u) => {
          const key = u % 3 === 0 ? `k-${u}` : undefined;
          return [0, 1, 2].map(async () => {
            const res = await claim(t, v.id, u, key ? { idempotencyKey: key } : {});
            const body = res.json();
            answers.push({ user: u, key, statusCode: res.statusCode, body });
            if (res.statusCode === 201 && body.orderId.endsWith('3') && (await orderAction(t, 'cancel', body.orderId, u)).statusCode === 200) cancelled++;
          });
        });
        await Promise.all(claims);
        await sleep(330);
      }
      await sleep(1_200); // the last orders' windows end
      storming = false;
      await expiring;
      await t.c.releases.expireDue({ limit: 500, voucherId: BigInt(v.id) });

      const stored = answers.filter((a) => a.statusCode === 201);
      const codes = new Set(answers.filter((a) => a.statusCode !== 201).map((a) => a.body.code));
      assert.deepEqual([...codes].filter((c) => !['SOLD_OUT', 'LIMIT_EXCEEDED', 'CLAIM_IN_PROGRESS'].includes(c)), [], JSON.stringify([...codes]));
      // A key's retries answer its one order.
      for (const key of new Set(answers.filter((a) => a.key).map((a) => a.key))) {
        assert.ok(new Set(stored.filter((a) => a.key === key).map((a) => a.body.orderId)).size <= 1, `one order for key ${key}`);
      }
      const db = await dbState(t.c, v.id);
      const orderIds = [...new Set(stored.map((a) => a.body.orderId as string))];
      assert.deepEqual(new Set(db.orders.map((o) => o.id)), new Set(orderIds), 'every order answered 201 is stored, and no other');
      assert.ok(db.orders.every((o) => o.status === 'cancelled' || o.status === 'expired'), 'every order ended');
      assert.equal(db.stock, STOCK, 'every unit back on sale');
      assert.ok([...db.quantities.values()].every((q) => q === 0), 'no buyer holds a unit');
      assert.ok(cancelled > 0 && db.orders.some((o) => o.status === 'expired'), `cancellations (${cancelled}) and expiries raced the claims`);
      assert.ok(orderIds.length > STOCK, `units came back and sold again (${orderIds.length} orders for ${STOCK} units)`);
      await assertInvariants(t.c, v.id, orderIds);
      // The claims that met the row held shared its next transaction.
      const groups = (await t.c.metrics.sqlClaimGroups.get()).values;
      const transactions = count(groups, 'count') - count(groupsBefore, 'count');
      const grouped = count(groups, 'sum') - count(groupsBefore, 'sum');
      assert.ok(grouped > transactions, `${grouped} claims in ${transactions} transactions`);
    });
  }

  for (const kind of ['common', 'limited'] as const) {
    it(`when ${kind} buyers ask for several units under a limit above one, then the limit is checked before the stock`, async () => {
      const v = await createVoucher(t, { kind, stock: 5, perUserLimit: 3 });
      const code = async (user: number, quantity: number) => {
        const res = await claim(t, v.id, user, { quantity });
        return res.statusCode === 201 ? res.json().orderId : res.json().code;
      };
      const a1 = await code(1, 2);
      assert.equal(await code(1, 2), 'LIMIT_EXCEEDED', '2 + 2 > 3');
      const a2 = await code(1, 1);
      assert.equal(await code(2, 4), 'LIMIT_EXCEEDED', 'more than the limit in one claim');
      assert.equal(await code(2, 3), 'SOLD_OUT', '3 > 2 left');
      const b1 = await code(2, 2);
      assert.equal(await code(1, 1), 'LIMIT_EXCEEDED', 'a buyer at the limit hears so, even when sold out');
      assert.equal(await code(3, 1), 'SOLD_OUT');

      const db = await dbState(t.c, v.id);
      assert.equal(db.stock, 0);
      assert.deepEqual(db.quantities, new Map([['1', 3], ['2', 2]]));
      assert.deepEqual(new Map(db.orders.map((o) => [o.id, o.quantity])), new Map([[a1, 2], [a2, 1], [b1, 2]]));
      await assertInvariants(t.c, v.id, [a1, a2, b1]);
    });

    it(`when a ${kind} sale has not begun or has ended, then NOT_STARTED / ENDED and nothing changes`, async () => {
      const hour = 3_600_000;
      const early = await createVoucher(t, { kind, stock: 5, beginAt: new Date(Date.now() + hour), endAt: new Date(Date.now() + 2 * hour) });
      const late = await createVoucher(t, { kind, stock: 5, beginAt: new Date(Date.now() - 2 * hour), endAt: new Date(Date.now() - 1_000) });
      const a = await claim(t, early.id, 1);
      const b = await claim(t, late.id, 1);
      assert.equal(a.statusCode, 409);
      assert.equal(a.json().code, 'NOT_STARTED');
      assert.equal(b.statusCode, 409);
      assert.equal(b.json().code, 'ENDED');
      for (const v of [early, late]) {
        const db = await dbState(t.c, v.id);
        assert.equal(db.stock, 5);
        assert.equal(db.orders.length, 0);
        assert.equal(db.quantities.size, 0);
        await assertInvariants(t.c, v.id, []);
      }
    });

    it(`when a ${kind} claim is retried with its Idempotency-Key, then the same order comes back (even at the limit and sold out) and another quantity is 422`, async () => {
      const v = await createVoucher(t, { kind, stock: 1, perUserLimit: 1 });
      const first = await claim(t, v.id, 1, { idempotencyKey: 'k-1' });
      assert.equal(first.statusCode, 201);
      const retry = await claim(t, v.id, 1, { idempotencyKey: 'k-1' });
      assert.equal(retry.statusCode, 201);
      assert.equal(retry.json().orderId, first.json().orderId);
      const reused = await claim(t, v.id, 1, { idempotencyKey: 'k-1', quantity: 2 });
      assert.equal(reused.statusCode, 422);
      assert.equal(reused.json().code, 'IDEMPOTENCY_KEY_REUSED');
      const otherBuyer = await claim(t, v.id, 2, { idempotencyKey: 'k-1' });
      assert.equal(otherBuyer.json().code, 'SOLD_OUT', 'a key belongs to one buyer');

      const db = await dbState(t.c, v.id);
      assert.equal(db.stock, 0);
      assert.equal(db.orders.length, 1);
      assert.equal(db.orders[0]!.idempotency_key, 'k-1');
      await assertInvariants(t.c, v.id, [first.json().orderId]);
    });

    it(`when identical keyed ${kind} claims arrive at the same time, then one order is stored and one unit taken`, async () => {
      // Limit 1: a twin that looked for the key before waiting its turn would hear LIMIT_EXCEEDED.
      const v = await createVoucher(t, { kind, stock: 10, perUserLimit: 1 });
      const responses = await Promise.all(Array.from({ length: 10 }, () => claim(t, v.id, 7, { idempotencyKey: 'twin' })));
      const { codes, orderIds } = tally(responses);
      assert.equal(new Set(orderIds).size, 1, 'every 201 names the same order');
      // A limited claim's twin may find the buyer's lock taken: it is told to retry, and then replays.
      const allowed = kind === 'limited' ? ['CLAIM_IN_PROGRESS'] : [];
      assert.deepEqual([...codes.keys()].filter((c) => !allowed.includes(c)), []);
      const retry = await claim(t, v.id, 7, { idempotencyKey: 'twin' });
      assert.equal(retry.json().orderId, orderIds[0]);

      const db = await dbState(t.c, v.id);
      assert.equal(db.stock, 9);
      assert.equal(db.orders.length, 1);
      await assertInvariants(t.c, v.id, [orderIds[0]!]);
    });
  }

  it('when a claim is stored, then the buyer hears a stored event', async () => {
    const v = await createVoucher(t, { kind: 'common', stock: 3, perUserLimit: 3 });
    const heard: OrderEvent[] = [];
    const unsubscribe = await t.c.pubsub.subscribe('31', (e) => heard.push(e));
    try {
      const res = await claim(t, v.id, 31, { quantity: 2 });
      assert.equal(res.statusCode, 201);
      await waitFor('the event to arrive', () => heard.length > 0);
      assert.deepEqual({ ...heard[0], at: undefined }, {
        type: 'stored',
        orderId: res.json().orderId,
        voucherId: v.id,
        userId: '31',
        quantity: 2,
        status: 'pending_payment',
        at: undefined,
      });
    } finally {
      unsubscribe();
    }
  });
});

/** A limited claim answered LOCK_LOST took nothing: stock 5 untouched, no order, no quantity. */
async function assertLockLostTookNothing(res: { statusCode: number; body: string; json(): { code?: string } }, voucherId: string) {
  assert.equal(res.statusCode, 503, res.body);
  assert.equal(res.json().code, 'LOCK_LOST');
  const db = await dbState(short.c, voucherId);
  assert.equal(db.stock, 5);
  assert.equal(db.orders.length, 0);
  assert.equal(db.quantities.size, 0);
  await assertInvariants(short.c, voucherId, []);
}

describe('the per-user lock of limited claims', () => {
  it('when a limited claim waits longer than the lock lifetime, then the watchdog keeps its lock, a second claim of the buyer is turned away, and the first one succeeds', async () => {
    const v = await createVoucher(short, { kind: 'limited', stock: 5, perUserLimit: 2 });
    const key = mutexKey(short.c, v.id, 41);
    const releaseRow = await holdVoucherRow(short.c, v.id);
    let settled = false;
    const first = claim(short, v.id, 41).finally(() => (settled = true));
    try {
      await waitFor('the claim to hold its lock', async () => (await short.c.redis.exists(key)) === 1);
      // Three lifetimes: only renewals can keep the lock alive this long.
      await sleep(3 * LOCK_TTL_MS);
      assert.equal(settled, false, 'the claim still waits for the voucher row');
      assert.ok((await short.c.redis.pttl(key)) > 0, 'the lock is still held');
      const second = await claim(short, v.id, 41);
      assert.equal(second.statusCode, 409);
      assert.equal(second.json().code, 'CLAIM_IN_PROGRESS');
    } finally {
      await releaseRow();
    }
    const res = await first;
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(await short.c.redis.exists(key), 0, 'the lock is released');
    const db = await dbState(short.c, v.id);
    assert.equal(db.stock, 4);
    await assertInvariants(short.c, v.id, [res.json().orderId]);
  });

  it('when a limited claim loses its lock while it waits, then it fails with LOCK_LOST and takes nothing', async () => {
    const v = await createVoucher(short, { kind: 'limited', stock: 5, perUserLimit: 2 });
    const key = mutexKey(short.c, v.id, 42);
    const releaseRow = await holdVoucherRow(short.c, v.id);
    const pending = claim(short, v.id, 42);
    try {
      await waitFor('the claim to hold its lock', async () => (await short.c.redis.exists(key)) === 1);
      // Expired or taken over: the lock is no longer the claim's. The watchdog renews every third
      // of the lifetime and its verdict shows only when the claim resumes: the wait spans renewals.
      await short.c.redis.del(key);
      await sleep(3 * LOCK_TTL_MS);
    } finally {
      await releaseRow();
    }
    await assertLockLostTookNothing(await pending, v.id);

    // Nothing is left behind: the buyer's next claim goes through.
    const again = await claim(short, v.id, 42);
    assert.equal(again.statusCode, 201, again.body);
  });

  it('when Redis cannot be reached at a renewal, then the claim counts its lock as lost, takes nothing, and the process lives on', async () => {
    const v = await createVoucher(short, { kind: 'limited', stock: 5 });
    const key = mutexKey(short.c, v.id, 43);
    const releaseRow = await holdVoucherRow(short.c, v.id);
    const pending = claim(short, v.id, 43);
    try {
      await waitFor('the claim to hold its lock', async () => (await short.c.redis.exists(key)) === 1);
      // The renewals now fail with "Connection is closed" (an unhandled rejection would fail this test).
      short.c.redis.disconnect();
      // Time for renewals to fail: their verdict shows only when the claim resumes.
      await sleep(3 * LOCK_TTL_MS);
    } finally {
      await short.c.redis.connect();
      await releaseRow();
    }
    await assertLockLostTookNothing(await pending, v.id);
  });
});
