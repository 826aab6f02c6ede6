// The store page when an admitted claim is lost before it is stored (ADMIT_DURABILITY=memory and
// Redis loses its data): the page says so plainly and lets the buyer claim again, in a real
// browser against a real app, with the stores checked after the second claim. And when a claim is
// answered 503 (in `replica` mode the admission may have stood): the page tries again with the
// same key, so the buyer gets that one order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startBrowser } from '../support/browser.js';
import { createVoucher, startTestApp, suiteScope } from '../support/helpers.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';

// No pipeline yet: the admission stays `processing` until the test loses it.
const t = await startTestApp(suiteScope(), 'web-store-lost', { ADMIT_DURABILITY: 'memory' });
const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
const browser = await startBrowser();

describe('the buyer page when a claim is lost', () => {
  it('when an order it showed as processing is gone before it was stored, then it says the claim was not kept and nothing was charged, and Buy claims anew', async () => {
    const voucher = await createVoucher(t, { stock: 5 });
    const buyer = 300;
    const page = await browser.newPage();
    await page.goto(`${base}/store/${voucher.id}`);
    await page.fill('#token', await t.token(buyer));
    await page.click('#sign-in-form button');
    await page.waitForSelector('#buyer:not([hidden])');

    await page.click('#buy');
    await page.waitForSelector('#order-status:text-is("processing")');
    const lostId = (await page.textContent('#order-id')) ?? '';
    assert.equal(await page.isDisabled('#buy'), true, 'nothing to buy while the order is on its way');

    // Redis loses its data (a restart without persistence): the admission, its in-flight record
    // and its stream entry are gone, and no row was written.
    await deleteKeys(t.c.redis, t.c.keys.pattern());
    const gone = await t.app.inject({ url: `/api/orders/${lostId}`, headers: { authorization: `Bearer ${await t.token(buyer)}` } });
    assert.equal(gone.statusCode, 404);
    assert.equal(gone.json().code, 'ORDER_NOT_FOUND');

    await page.waitForSelector('#buy-message:has-text("not kept")', { timeout: 10_000 });
    assert.equal(
      await page.textContent('#buy-message'),
      'Your claim was not kept: the service lost it before storing it, and nothing was charged. Press Buy to claim again.',
    );
    assert.equal(await page.textContent('#order-status'), 'not kept');
    assert.equal(await page.isDisabled('#buy'), false);
    assert.equal(await page.isVisible('#pay'), false);

    // A new claim (a new Idempotency-Key: the lost one's record is gone with it) is admitted and stored.
    await t.c.startWorkers();
    await page.click('#buy');
    await page
      .waitForSelector('#order-status:text-is("pending_payment")', { timeout: 10_000 })
      .catch(async (err: Error) => assert.fail(`${err.message}; the page says: ${await page.textContent('#buy-message')}`));
    const newId = (await page.textContent('#order-id')) ?? '';
    assert.notEqual(newId, lostId);
    await waitForDrain(t.c, voucher.id);
    const stored = await t.c.db.selectFrom('orders').select(['id', 'user_id']).where('voucher_id', '=', voucher.id).execute();
    assert.deepEqual(stored, [{ id: newId, user_id: String(buyer) }]);
    const truth = await assertInvariants(t.c, voucher.id, [newId]);
    assert.equal(truth.dbStock, 4);
    assert.equal(truth.redisStock, 4);
    await page.close();
  });
});

describe('the buyer page when the service is busy', () => {
  it('when the claim is answered 503 after its admission stood, then the page tries again after Retry-After with the same key and shows that one order', async () => {
    const voucher = await createVoucher(t, { stock: 5 });
    const buyer = 301;
    const page = await browser.newPage();
    // The first claim reaches the server and is admitted; its answer is replaced by the 503 a
    // replica that did not confirm in time gives.
    const keys: string[] = [];
    await page.route(`**/api/vouchers/${voucher.id}/orders`, async (route) => {
      keys.push(route.request().headers()['idempotency-key'] ?? '');
      if (keys.length > 1) return route.continue();
      await route.fetch();
      await route.fulfill({
        status: 503,
        headers: { 'retry-after': '1', 'content-type': 'application/json' },
        body: JSON.stringify({ code: 'UNAVAILABLE', message: 'the replicas did not confirm the admission in time' }),
      });
    });
    await page.goto(`${base}/store/${voucher.id}`);
    await page.fill('#token', await t.token(buyer));
    await page.click('#sign-in-form button');
    await page.waitForSelector('#buyer:not([hidden])');

    await page.click('#buy');
    await page.waitForSelector('#buy-message:has-text("trying again")');
    await page.waitForSelector('#order-status:text-is("pending_payment")', { timeout: 10_000 });
    assert.equal(keys.length, 2);
    assert.equal(keys[1], keys[0], 'the retry is the same purchase');
    const orderId = (await page.textContent('#order-id')) ?? '';
    await waitForDrain(t.c, voucher.id);
    const stored = await t.c.db.selectFrom('orders').select(['id', 'user_id']).where('voucher_id', '=', voucher.id).execute();
    assert.deepEqual(stored, [{ id: orderId, user_id: String(buyer) }]);
    const truth = await assertInvariants(t.c, voucher.id, [orderId]);
    assert.equal(truth.dbStock, 4);
    await page.close();
  });
});
