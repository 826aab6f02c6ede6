// The store page when the shop takes payments (PAYMENT_MODE=external): it shows the price, offers
// no Pay button of its own but says how the shop's checkout takes the payment, and shows the
// order paid once the shop confirms it — in a real browser, with both stores checked.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startBrowser } from '../support/browser.js';
import { createVoucher, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';

const t = await startTestApp(suiteScope(), 'web-store-external', { PAYMENT_MODE: 'external' });
await t.c.startWorkers();
const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
const browser = await startBrowser();

describe('the buyer page when the shop takes payments', () => {
  it('shows the price and a note on the shop\'s checkout instead of Pay, then the order paid once the shop confirms it', async () => {
    const voucher = await createVoucher(t, { stock: 3, price: 1999, currency: 'EUR' });
    const buyer = 410;
    const page = await browser.newPage();
    await page.goto(`${base}/store/${voucher.id}`);
    await page.waitForSelector('#price:has-text("19.99")');
    await page.fill('#token', await t.token(buyer));
    await page.click('#sign-in-form button');
    await page.waitForSelector('#buyer:not([hidden])');

    await page.click('#buy');
    await page.waitForSelector('#order-status:text-is("pending_payment")', { timeout: 10_000 });
    assert.equal(await page.isVisible('#pay'), false, 'no button that could only be refused');
    assert.equal(await page.isVisible('#checkout-note'), true);
    const orderId = (await page.textContent('#order-id')) ?? '';

    const service = await t.c.tokens.sign({ userId: 9n, admin: false, service: true }, 600);
    const paid = await t.app.inject({
      method: 'POST',
      url: `/api/orders/${orderId}/payments`,
      headers: { authorization: `Bearer ${service}` },
      payload: { paymentId: 'pi_store_page', amount: 1999, currency: 'eur', provider: 'stripe' },
    });
    assert.equal(paid.statusCode, 200, paid.body);
    await page.waitForSelector('#order-status:text-is("paid")', { timeout: 10_000 });
    assert.equal(await page.isVisible('#checkout-note'), false);

    await waitForDrain(t.c, voucher.id);
    const row = await t.c.db.selectFrom('orders').select(['status', 'amount', 'currency']).where('id', '=', orderId).executeTakeFirstOrThrow();
    assert.deepEqual({ ...row, amount: Number(row.amount) }, { status: 'paid', amount: 1999, currency: 'EUR' });
    const truth = await assertInvariants(t.c, voucher.id, [orderId]);
    assert.equal(truth.dbStock, 2);
    assert.equal(truth.redisStock, 2);
    await page.close();
  });
});
