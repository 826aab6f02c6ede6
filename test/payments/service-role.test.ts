// PAYMENT_MODE=external: the buyer's simulated payment is refused; the shop's backend (service)
// reads and cancels any order, owns none and may not use the admin routes. Simulated payments are
// refused beyond loopback at start-up.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { checkServingPayments } from '../../src/config/serving-payments.js';
import { runSeckill } from '../../support/processes.js';
import { claim, createVoucher, orderAction, startTestApp, suiteScope } from '../support/helpers.js';
import { bearer, confirm, orderRow, serviceToken } from './payments-support.js';

const t = await startTestApp(suiteScope(), 'pay_service', { PAYMENT_MODE: 'external', BUCKET_USER_RATE: '0' });

describe('PAYMENT_MODE=external and the service role', () => {
  it("a buyer's own payment is 403 FORBIDDEN and changes nothing; the shop's confirmation pays the order", async () => {
    const v = await createVoucher(t, { kind: 'common', stock: 3, price: 500 });
    const orderId = (await claim(t, v.id, 11)).json().orderId;
    const pay = await orderAction(t, 'pay', orderId, 11);
    assert.equal(pay.statusCode, 403, pay.body);
    assert.equal(pay.json().code, 'FORBIDDEN');
    assert.equal((await orderRow(t, orderId)).status, 'pending_payment');
    assert.equal((await confirm(t, orderId, { paymentId: 'p1', amount: 500, currency: 'USD' })).statusCode, 200);
    assert.equal((await orderRow(t, orderId)).status, 'paid');
  });

  it("the service reads and cancels any buyer's order (its units back), gets 404 for a missing one, owns none, and is refused the admin routes", async () => {
    const v = await createVoucher(t, { kind: 'limited', stock: 3 });
    const orderId = (await claim(t, v.id, 12)).json().orderId;
    const service = bearer(await serviceToken(t, 12n)); // even with the buyer's user id, it owns no orders
    const read = await t.app.inject({ method: 'GET', url: `/api/orders/${orderId}`, headers: bearer(await serviceToken(t)) });
    assert.equal(read.statusCode, 200, read.body);
    assert.equal(read.json().userId, '12');
    const cancel = await t.app.inject({ method: 'POST', url: `/api/orders/${orderId}/cancel`, headers: bearer(await serviceToken(t)) });
    assert.equal(cancel.statusCode, 200, cancel.body);
    assert.equal(cancel.json().status, 'cancelled');
    const stock = await t.c.db.selectFrom('vouchers').select('stock').where('id', '=', v.id).executeTakeFirstOrThrow();
    assert.equal(stock.stock, 3);
    const held = await t.c.db.selectFrom('user_quantities').select('quantity').where('voucher_id', '=', v.id).where('user_id', '=', '12').executeTakeFirst();
    assert.equal(held?.quantity ?? 0, 0);
    for (const url of ['/api/orders/999999/cancel', '/api/orders/999999/refund']) {
      const res = await t.app.inject({ method: 'POST', url, headers: service, payload: {} });
      assert.equal(res.statusCode, 404, url);
      assert.equal(res.json().code, 'ORDER_NOT_FOUND');
    }
    assert.equal((await t.app.inject({ method: 'GET', url: '/api/orders/999999', headers: service })).statusCode, 404);
    const own = await t.app.inject({ method: 'GET', url: '/api/orders', headers: service });
    assert.equal(own.statusCode, 200);
    assert.equal((await t.app.inject({ method: 'GET', url: `/api/vouchers/${v.id}/stats`, headers: service })).statusCode, 403);
    assert.equal((await t.app.inject({ method: 'POST', url: '/api/vouchers', headers: service, payload: {} })).statusCode, 403);
  });

  it('simulated payments beyond loopback are refused at start-up with one line naming PAYMENT_MODE; external ones, or loopback, are fine', () => {
    const serving = (env: Record<string, string>) => () => checkServingPayments(loadConfig(env));
    assert.throws(serving({ HOST: '0.0.0.0' }), (err: Error) => err instanceof ConfigError && /^PAYMENT_MODE is simulated and HOST 0\.0\.0\.0 is not a loopback address[^\n]*$/.test(err.message));
    assert.doesNotThrow(serving({ HOST: '0.0.0.0', PAYMENT_MODE: 'external' }));
    assert.doesNotThrow(serving({ HOST: '::1' }));
  });

  it('serve: exits 2 with that line', async () => {
    // Were it not refused, it would fail on its own: an address of no interface (TEST-NET-1), stores that do not answer.
    const env = { HOST: '192.0.2.1', JWT_SECRET: 'x'.repeat(32), DATABASE_URL: 'mysql://root@127.0.0.1:1/none', REDIS_URL: 'redis://127.0.0.1:1' };
    const { code, stderr } = await runSeckill(['serve'], { env, timeoutMs: 30_000 });
    assert.equal(code, 2, stderr);
    assert.match(stderr.trim(), /^seckill: PAYMENT_MODE is simulated and HOST 192\.0\.2\.1 is not a loopback address: any buyer could mark their own order paid; set PAYMENT_MODE=external/);
    assert.doesNotMatch(stderr.trim(), /\n/);
  });
});
