// The example shop backend (examples/shop-backend) against a real engine over HTTP, through the
// typed client: a sale at a price, payments confirmed by the shop (one twice, one for the wrong
// amount), a refund with restock; then both stores.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createShop } from '../../examples/shop-backend/shop.js';
import { claim, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';

const t = await startTestApp(suiteScope(), 'example-shop-backend', { PAYMENT_MODE: 'external' });
await t.c.startWorkers();
const baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });

describe('the example shop backend', () => {
  it('puts a sale on, confirms payments (again: the same answer; a wrong amount: refund due), and refunds one with its unit back on sale', async () => {
    const shop = createShop({ baseUrl, adminToken: await t.admin(), serviceToken: await t.c.tokens.sign({ userId: 5n, admin: false, service: true }, 600) });
    const voucherId = await shop.putOnSale({ title: 'example', stock: 3, price: 2500, currency: 'EUR', hours: 1, paymentTimeoutSeconds: 600 });
    const orderIds: string[] = [];
    for (const buyer of [501, 502, 503]) {
      const res = await claim(t, voucherId, buyer);
      assert.equal(res.statusCode, 202, res.body);
      orderIds.push(res.json().orderId);
    }
    await waitForDrain(t.c, voucherId);
    const [first, second] = orderIds as [string, string];

    assert.equal(await shop.confirmPayment(first, { paymentId: 'ch_1', amount: 2500, currency: 'EUR' }), 'paid');
    assert.equal(await shop.confirmPayment(first, { paymentId: 'ch_1', amount: 2500, currency: 'EUR' }), 'paid', 'the same payment again');
    assert.deepEqual(await shop.confirmPayment(second, { paymentId: 'ch_2', amount: 250, currency: 'EUR' }), { refundDue: 'PAYMENT_MISMATCH' });
    await shop.refund(first, true);

    const orders = await t.c.db.selectFrom('orders').select(['id', 'status']).where('voucher_id', '=', voucherId).orderBy('id').execute();
    assert.deepEqual(orders.map((o) => o.status), ['refunded', 'pending_payment', 'pending_payment']);
    const payments = await t.c.db.selectFrom('payments').select(['payment_id', 'status', 'reason']).where('voucher_id', '=', voucherId).orderBy('payment_id').execute();
    assert.deepEqual(payments, [
      { payment_id: 'ch_1', status: 'applied', reason: null },
      { payment_id: 'ch_2', status: 'refund_due', reason: 'mismatch' },
    ]);
    const truth = await assertInvariants(t.c, voucherId, orderIds);
    assert.equal(truth.dbStock, 1, 'the refunded unit is on sale again');
    assert.equal(truth.redisStock, 1);
  });
});
