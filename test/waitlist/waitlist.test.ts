import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OrderEvent } from '../../src/orders/order-pubsub.js';
import { claim, createVoucher, orderAction, range, startTestApp, suiteScope } from '../support/helpers.js';
import { waitFor } from '../../support/wait.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';

const t = await startTestApp(suiteScope(), 'waitlist', { EXPIRY_POLL_MS: '100', WAITLIST_MAX: '4' });
await t.c.startWorkers();

const position = async (voucherId: string, user: number) =>
  t.app.inject({ method: 'GET', url: `/api/vouchers/${voucherId}/waitlist/me`, headers: { authorization: `Bearer ${await t.token(user)}` } });
const activeOrders = (voucherId: string) =>
  t.c.db.selectFrom('orders').select(['id', 'user_id', 'status']).where('voucher_id', '=', voucherId).where('status', 'in', ['pending_payment', 'paid']).execute();

describe('waitlist', () => {
  it('when buyers do not pay, then the waiting users get the freed units in enrolment order, skipping one who bought meanwhile', async () => {
    const v = await createVoucher(t, { stock: 5, perUserLimit: 2, waitlist: true, paymentTimeoutSeconds: 4 });
    const buyers = range(1, 5);
    const admitted: string[] = [];
    for (const b of buyers) admitted.push((await claim(t, v.id, b)).json().orderId);
    await waitForDrain(t.c, v.id);

    // User 10 enrols first, wanting 2 units; users 11-13 want one each; 14 does not fit (capacity 4).
    const first = await claim(t, v.id, 10, { quantity: 2 });
    assert.equal(first.statusCode, 409);
    assert.deepEqual([first.json().code, first.json().waitlisted], ['SOLD_OUT', true]);
    for (const w of [11, 12, 13]) assert.equal((await claim(t, v.id, w)).json().waitlisted, true);
    for (let i = 0; i < 3; i++) assert.equal((await claim(t, v.id, 11)).json().waitlisted, true, 'a repeated attempt keeps its place');
    assert.equal((await claim(t, v.id, 14)).json().waitlisted, false, 'the waitlist is full');
    assert.deepEqual(await Promise.all([10, 11, 12, 13].map(async (w) => (await position(v.id, w)).json().position)), [1, 2, 3, 4]);
    const absent = await position(v.id, 14);
    assert.deepEqual([absent.statusCode, absent.json().code], [404, 'NOT_WAITLISTED']);

    const promoted: OrderEvent[] = [];
    const unsubscribe = await Promise.all([11, 12, 13].map((w) => t.c.pubsub.subscribe(String(w), (e) => promoted.push(e))));

    // (The payment window of 4 s leaves time for these steps before buyers 2-4 expire.)
    // Buyer 1 cancels: one unit is free, but the head wants two, so it keeps its place and the unit
    // stays on sale; user 10 buys it directly ("meanwhile") and now holds 1 of 2: no longer eligible.
    const byUser = new Map((await activeOrders(v.id)).map((o) => [Number(o.user_id), o.id]));
    assert.equal((await orderAction(t, 'cancel', byUser.get(1)!, 1)).json().status, 'cancelled');
    await waitFor('the cancelled unit back in Redis', async () => (await t.c.redis.hget(t.c.keys.voucher(BigInt(v.id)), 'stock')) === '1');
    const direct = await claim(t, v.id, 10);
    assert.equal(direct.statusCode, 202);
    admitted.push(direct.json().orderId);
    await waitForDrain(t.c, v.id);
    assert.equal((await orderAction(t, 'pay', direct.json().orderId, 10)).statusCode, 200);

    // Buyers 2-4 pay nothing and expire; buyer 5 pays. Each freed unit goes to the next eligible waiter.
    assert.equal((await orderAction(t, 'pay', byUser.get(5)!, 5)).statusCode, 200);
    const winners = await waitFor('three promoted orders stored', async () => {
      const orders = (await activeOrders(v.id)).filter((o) => [11, 12, 13].includes(Number(o.user_id)));
      return orders.length === 3 && orders;
    });
    for (const o of winners) {
      admitted.push(o.id);
      assert.equal((await orderAction(t, 'pay', o.id, Number(o.user_id))).statusCode, 200, 'a promoted order has its own payment window');
    }
    await waitForDrain(t.c, v.id);
    assert.equal(await t.c.redis.zcard(t.c.keys.waitlist(BigInt(v.id))), 0, 'user 10 was skipped and removed');
    assert.equal((await position(v.id, 10)).statusCode, 404);
    const held = new Map((await activeOrders(v.id)).map((o) => [Number(o.user_id), o.status]));
    assert.deepEqual([...held.keys()].sort((a, b) => a - b), [5, 10, 11, 12, 13]);
    assert.deepEqual(promoted.filter((e) => e.type === 'promoted').map((e) => e.userId).sort(), ['11', '12', '13'], 'each promotion is announced');
    unsubscribe.forEach((stop) => stop());
    const truth = await assertInvariants(t.c, v.id, admitted);
    assert.equal(truth.dbStock, 0);
    assert.equal(truth.redisStock, 0);
  });

  it('a voucher without a waitlist answers waitlisted: false and keeps no list', async () => {
    const v = await createVoucher(t, { stock: 1 });
    assert.equal((await claim(t, v.id, 1)).statusCode, 202);
    const res = await claim(t, v.id, 2);
    assert.deepEqual([res.json().code, res.json().waitlisted], ['SOLD_OUT', false]);
    assert.equal((await position(v.id, 2)).statusCode, 404);
    assert.equal(await t.c.redis.exists(t.c.keys.waitlist(BigInt(v.id))), 0);
  });

  it('when a unit comes back while the state is not verified on a new Redis master, then the waiting buyer is promoted only once it is', async () => {
    const v = await createVoucher(t, { stock: 1, perUserLimit: 1, waitlist: true });
    const bought = await claim(t, v.id, 21);
    assert.equal((await claim(t, v.id, 22)).json().waitlisted, true);
    await waitForDrain(t.c, v.id);
    // As after a failover: the state was verified on another master than the one holding it now.
    await t.c.redis.hset(t.c.keys.voucher(BigInt(v.id)), 'verifiedOn', 'another-master');
    assert.equal((await orderAction(t, 'cancel', bought.json().orderId, 21)).statusCode, 200);
    await waitFor('the unit back in Redis', async () => (await t.c.redis.hget(t.c.keys.voucher(BigInt(v.id)), 'stock')) === '1');
    assert.equal((await position(v.id, 22)).json().position, 1, 'still waiting: nobody is admitted on unverified state');

    assert.equal(await t.c.verifier.verify((await t.c.directory.getStored(BigInt(v.id)))!), true);
    const promoted = await waitFor('the waiting buyer promoted and stored', async () => (await activeOrders(v.id)).find((o) => o.user_id === '22'));
    await waitForDrain(t.c, v.id);
    await assertInvariants(t.c, v.id, [bought.json().orderId, promoted.id]);
  });
});
