// Payments racing their orders' deadline, with the payment timer sweeping at the same time: each
// order ends paid with exactly one applied payment, or expired with every payment kept refund_due
// (late) — never both, never neither — and both stores agree with the outcome.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { dialectOf } from '../../src/infra/db/dialect.js';
import { burst, createVoucher, range, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';
import { confirm } from './payments-support.js';

const t = await startTestApp(suiteScope(), 'pay_race', { RECONCILE_INTERVAL_MS: '0', BUCKET_USER_RATE: '0' });
await t.c.startWorkers();

const ORDERS = 30;
const WINDOW_MS = 400;

describe('payments racing the deadline', () => {
  it('each order is paid with one applied payment or expired with its payments refund_due, never both or neither', async () => {
    const v = await createVoucher(t, { stock: ORDERS, price: 300, currency: 'EUR' });
    const ids = await burst(t, v.id, range(1, ORDERS));
    assert.equal(ids.length, ORDERS);
    await waitForDrain(t.c, v.id);
    // Every deadline WINDOW_MS from now, in database time; payments arrive spread around it.
    await t.c.db.updateTable('orders').set({ expires_at: dialectOf(t.c.db).nowPlusSeconds(WINDOW_MS / 1000) }).where('voucher_id', '=', v.id).execute();
    let sweeping = true;
    const sweeper = (async () => {
      while (sweeping) {
        await t.c.releases.expireDue({ limit: 5, voucherId: BigInt(v.id) });
        await sleep(5);
      }
    })();
    const answers = new Map<string, number[]>();
    await Promise.all(
      ids.map(async (id, i) => {
        await sleep((i / ORDERS) * 2 * WINDOW_MS);
        // Every third order gets two payments at once: at most one can be applied.
        const tries = i % 3 === 0 ? ['a', 'b'] : ['a'];
        const statuses = await Promise.all(tries.map(async (p) => (await confirm(t, id, { paymentId: `${id}-${p}`, amount: 300, currency: 'eur' })).statusCode));
        answers.set(id, statuses);
      }),
    );
    sweeping = false;
    await sweeper;
    await t.c.releases.expireDue({ limit: ORDERS, voucherId: BigInt(v.id) });
    await waitForDrain(t.c, v.id);

    const orders = new Map((await t.c.db.selectFrom('orders').select(['id', 'status']).where('voucher_id', '=', v.id).execute()).map((o) => [o.id, o.status]));
    const payments = await t.c.db.selectFrom('payments').select(['order_id', 'status', 'reason']).where('voucher_id', '=', v.id).execute();
    let paid = 0;
    for (const id of ids) {
      const mine = payments.filter((p) => p.order_id === id);
      const sent = answers.get(id)!;
      assert.equal(mine.length, sent.length, `order ${id}: one record per payment`);
      const applied = mine.filter((p) => p.status === 'applied').length;
      if (orders.get(id) === 'paid') {
        paid++;
        assert.equal(applied, 1, `paid order ${id} has one applied payment`);
        assert.ok(mine.every((p) => p.status === 'applied' || p.reason === 'duplicate'), `order ${id}: ${JSON.stringify(mine)}`);
        assert.equal(sent.filter((s) => s === 200).length, 1);
      } else {
        assert.equal(orders.get(id), 'expired', `order ${id} is paid or expired`);
        assert.equal(applied, 0, `expired order ${id} has no applied payment`);
        assert.ok(mine.every((p) => p.status === 'refund_due' && p.reason === 'late'), `order ${id}: ${JSON.stringify(mine)}`);
        assert.ok(sent.every((s) => s === 409));
      }
    }
    // Both outcomes happened, or the race was not a race.
    assert.ok(paid > 0 && paid < ORDERS, `${paid} of ${ORDERS} paid`);
    const truth = await assertInvariants(t.c, v.id, ids);
    assert.equal(truth.dbStock, ORDERS - paid);
    assert.equal(truth.redisStock, ORDERS - paid);
    assert.equal([...truth.redisBuyers.values()].reduce((n, q) => n + q, 0), paid);
  });
});
