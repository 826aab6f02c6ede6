import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { createReleases } from '../../src/lifecycle/releases.js';
import { burst, claim, createVoucher, orderAction, range, startTestApp, suiteScope } from '../support/helpers.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { waitFor } from '../../support/wait.js';
import { assertInvariants, readTruth, waitForDrain } from '../support/invariants.js';

const t = await startTestApp(suiteScope(), 'lifecycle', { EXPIRY_POLL_MS: '100' });
await t.c.startWorkers();

const ordersOf = (voucherId: string) =>
  t.c.db.selectFrom('orders').select(['id', 'user_id', 'status', 'expires_at', 'updated_at']).where('voucher_id', '=', voucherId).execute();
const outboxRows = async () => (await t.c.db.selectFrom('release_outbox').select('order_id').execute()).length;

/** A sale whose buyers' orders are stored; returns the order id of each user. */
async function storedSale(stock: number, users: number[], paymentTimeoutSeconds: number) {
  const v = await createVoucher(t, { stock, paymentTimeoutSeconds });
  const admitted = await burst(t, v.id, users);
  assert.equal(admitted.length, users.length);
  await waitForDrain(t.c, v.id);
  const byUser = new Map((await ordersOf(v.id)).map((o) => [Number(o.user_id), o.id]));
  return { v, admitted, byUser };
}

describe('order lifecycle', () => {
  it('when some buyers pay and others do not, then the unpaid orders expire within 2 s of their deadline and their units return in both stores', async () => {
    const users = range(100, 6);
    const { v, admitted, byUser } = await storedSale(10, users, 1);
    for (const u of users.slice(0, 3)) {
      const paid = await orderAction(t, 'pay', byUser.get(u)!, u);
      assert.equal(paid.statusCode, 200, paid.body);
      assert.equal(paid.json().status, 'paid');
    }
    const orders = await waitFor('the unpaid orders to expire', async () => {
      const all = await ordersOf(v.id);
      return all.filter((o) => o.status === 'expired').length === 3 && all;
    });
    for (const o of orders.filter((x) => x.status === 'expired')) {
      const lateMs = o.updated_at.getTime() - o.expires_at!.getTime();
      assert.ok(lateMs >= 0 && lateMs <= 2_000, `expired ${lateMs} ms after its deadline`);
    }
    await waitFor('the outbox to drain', async () => (await outboxRows()) === 0);
    const truth = await assertInvariants(t.c, v.id, admitted);
    assert.equal(truth.dbStock, 7);
    assert.equal(truth.redisStock, 7);
    assert.deepEqual([...truth.redisBuyers.keys()].sort(), users.slice(0, 3).map(String).sort(), 'only payers still hold units');
    const again = await claim(t, v.id, users[5]!);
    assert.equal(again.statusCode, 202, 'a buyer whose order expired may buy again');
  });

  it('pay and cancel answer by the order state, idempotently, for the owner only', async () => {
    const { v, admitted, byUser } = await storedSale(5, [201, 202, 203], 600);
    const [a, b, c] = [byUser.get(201)!, byUser.get(202)!, byUser.get(203)!];
    assert.equal((await orderAction(t, 'pay', a, 201)).json().status, 'paid');
    assert.equal((await orderAction(t, 'pay', a, 201)).statusCode, 200, 'paying twice is fine');
    assert.equal((await orderAction(t, 'cancel', a, 201)).json().code, 'ORDER_PAID');
    const cancelled = await orderAction(t, 'cancel', b, 202);
    assert.equal(cancelled.json().status, 'cancelled');
    assert.equal((await orderAction(t, 'cancel', b, 202)).statusCode, 200, 'cancelling twice is fine');
    assert.equal((await orderAction(t, 'pay', b, 202)).json().code, 'ORDER_CANCELLED');
    const foreign = await orderAction(t, 'pay', c, 201);
    assert.equal(foreign.statusCode, 404);
    assert.equal(foreign.json().code, 'ORDER_NOT_FOUND');
    const admin = await t.app.inject({ method: 'POST', url: `/api/orders/${c}/cancel`, headers: { authorization: `Bearer ${await t.admin()}` } });
    assert.equal(admin.statusCode, 404, 'an admin does not act on buyers\' orders');
    assert.equal((await orderAction(t, 'pay', '123456789', 201)).statusCode, 404);
    assert.equal((await orderAction(t, 'pay', 'abc', 201)).statusCode, 400);
    await waitFor('the outbox to drain', async () => (await outboxRows()) === 0);
    const truth = await assertInvariants(t.c, v.id, admitted);
    assert.equal(truth.dbStock, 3);
    assert.equal(truth.redisStock, 3);
  });

  it('when 500 payments race their own deadlines, then every order ends either paid or expired, as its answer said', async () => {
    const users = range(1_000, 500);
    const { v, admitted } = await storedSale(500, users, 2);
    const orders = await ordersOf(v.id);
    const answers = await Promise.all(
      orders.map(async (o) => {
        // Aim each payment at its own deadline, up to 150 ms either side: the timing is the race tested.
        const at = o.expires_at!.getTime() + Math.round((Math.random() - 0.5) * 300);
        await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
        // A 503 (every connection busy past DB_STATEMENT_TIMEOUT_MS on a loaded machine) says
        // nothing happened: the buyer retries, and the answer that counts is the definite one.
        let res = await orderAction(t, 'pay', o.id, Number(o.user_id));
        while (res.statusCode === 503) res = await orderAction(t, 'pay', o.id, Number(o.user_id));
        return { id: o.id, status: res.statusCode, code: res.statusCode === 200 ? 'paid' : res.json().code };
      }),
    );
    for (const a of answers) assert.ok(a.status === 200 || a.code === 'ORDER_EXPIRED', `unexpected answer ${a.status} ${a.code}`);
    const final = await waitFor('every order to be paid or expired', async () => {
      const all = await ordersOf(v.id);
      return all.every((o) => o.status === 'paid' || o.status === 'expired') && all;
    });
    const finalStatus = new Map(final.map((o) => [o.id, o.status]));
    for (const a of answers) assert.equal(finalStatus.get(a.id), a.code === 'paid' ? 'paid' : 'expired', `order ${a.id}`);
    const paid = answers.filter((a) => a.code === 'paid').length;
    await waitFor('the outbox to drain', async () => (await outboxRows()) === 0);
    const truth = await assertInvariants(t.c, v.id, admitted);
    assert.equal(truth.dbStock, 500 - paid);
    assert.equal(truth.redisStock, 500 - paid);
  });

  it('when a process dies between the SQL release and the Redis release, then another worker gives the units back exactly once', async () => {
    const { v, admitted, byUser } = await storedSale(4, [301, 302, 303], 600);
    // A release whose process "dies" right after the commit: its relay never runs.
    const dying = createReleases({ db: t.c.db, releaseRelay: { drain: () => Promise.reject(new Error('killed')) }, pubsub: t.c.pubsub, log: pino({ level: 'silent' }) });
    assert.equal(await dying.cancel(BigInt(byUser.get(301)!), 301n), true);
    // Redis got one of the two others back already, but the row was not deleted (died after Redis).
    // The Redis step runs first here, so that the running relay (every 100 ms) cannot take the
    // row before it: the relay then finds the order marked as given back.
    const second = byUser.get(302)!;
    const restocked = await t.c.scripts.restock({ voucherId: BigInt(v.id), orderId: second, userId: '302', quantity: 1, promotionIds: [] });
    assert.equal(restocked.kind, 'restocked');
    assert.equal(await dying.cancel(BigInt(second), 302n), true);
    // The running worker's relay finishes both, giving each unit back once.
    await waitFor('the outbox to drain', async () => (await outboxRows()) === 0);
    const truth = await assertInvariants(t.c, v.id, admitted);
    assert.equal(truth.dbStock, 3);
    assert.equal(truth.redisStock, 3);
  });

  it('when Redis loses every key of the sale, then overdue orders still expire and Redis is rebuilt from the database', async () => {
    const { v, admitted, byUser } = await storedSale(5, [401, 402, 403], 1);
    await orderAction(t, 'pay', byUser.get(401)!, 401);
    await deleteKeys(t.c.redis, `${t.c.keys.prefix}:*:v:${v.id}*`);
    await waitFor('the unpaid orders to expire', async () => (await ordersOf(v.id)).filter((o) => o.status === 'expired').length === 2);
    await waitFor('the outbox to drain', async () => (await outboxRows()) === 0);
    const truth = await assertInvariants(t.c, v.id, admitted);
    assert.equal(truth.dbStock, 4);
    assert.equal(truth.redisStock, 4);
  });
});

describe('an order not stored yet', () => {
  it('answers ORDER_PROCESSING to pay and cancel, without waiting', async (ctx) => {
    const idle = await startTestApp(ctx, 'lifecycle-idle'); // no pipeline: admitted orders stay in flight
    const v = await createVoucher(idle, { stock: 2 });
    const { orderId } = (await claim(idle, v.id, 7)).json();
    for (const action of ['pay', 'cancel'] as const) {
      const res = await orderAction(idle, action, orderId, 7);
      assert.equal(res.statusCode, 409);
      assert.equal(res.json().code, 'ORDER_PROCESSING');
    }
    assert.equal((await readTruth(idle.c, v.id)).redisStock, 1, 'nothing was released');
  });
});
