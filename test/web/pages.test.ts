// The console and the buyer's page in a real browser, against a real app (Redis and MariaDB):
// what the pages show and what the stores hold after the clicks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startBrowser } from '../support/browser.js';
import { claim, redisView, startTestApp } from '../support/helpers.js';
import { waitFor } from '../support/wait.js';

const t = await startTestApp('web-pages');
await t.c.startWorkers();
const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
const browser = await startBrowser();
let voucherId = '';

describe('the operator console (GET /console)', () => {
  it('says so when the token is wrong, and never shows the app', async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/console`);
    await page.fill('#token', 'not-a-token');
    await page.click('#sign-in-form button');
    await page.waitForSelector('#sign-in-message:has-text("refused")');
    assert.match(await page.textContent('#sign-in-message') ?? '', /That token was refused .*seckill token --user 1 --admin/);
    assert.equal(await page.isVisible('#app'), false);
    // A user's token is not an admin's.
    await page.fill('#token', await t.token(42));
    await page.click('#sign-in-form button');
    await page.waitForSelector('#sign-in-message:has-text("may not do this")');
    await page.close();
  });

  it('creates a voucher through the form and shows its stock change live', async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/console`);
    await page.fill('#token', await t.admin());
    await page.click('#sign-in-form button');
    await page.waitForSelector('#app:not([hidden])');
    await page.waitForSelector('#vouchers-message:has-text("No vouchers yet")');

    // The API's validation message appears beside the form.
    await page.fill('#create-form [name=title]', 'Browser sale');
    await page.fill('#create-form [name=stock]', '0');
    await page.click('#create-form button[type=submit]');
    await page.waitForSelector('#create-message:has-text("stock")');
    assert.match(await page.textContent('#create-message') ?? '', /^Not created: body: \/stock must be >= 1/);

    await page.fill('#create-form [name=stock]', '5');
    await page.fill('#create-form [name=perUserLimit]', '3');
    await page.click('#create-form button[type=submit]');
    await page.waitForSelector('#voucher-title:has-text("Browser sale")');
    voucherId = /voucher=(\d+)/.exec(page.url())?.[1] ?? '';
    assert.ok(voucherId, `the voucher is open in the URL: ${page.url()}`);
    assert.equal(await page.textContent('#create-message'), '');
    await page.waitForSelector(`#voucher-rows tr[data-id="${voucherId}"]`);
    await page.waitForSelector('[data-stat=redisStock] td:text-is("5")');
    await page.waitForSelector('#audit-verdict:has-text("Audit OK")');

    // Two buyers claim from outside the page; the stream shows the stock fall.
    for (const user of [101, 102]) assert.equal((await claim(t, voucherId, user)).statusCode, 202);
    await page.waitForSelector('[data-stat=redisStock] td:text-is("3")', { timeout: 5_000 });
    assert.equal((await redisView(t, voucherId)).stock, 3);
    // The stock's chart moved with it: its line is no longer flat.
    await page.waitForFunction(() => {
      const points = document.querySelector('[data-stat=redisStock] svg polyline')?.getAttribute('points') ?? '';
      return new Set(points.split(' ').map((p) => p.split(',')[1])).size > 1;
    }, undefined, { timeout: 5_000 });
    await page.waitForSelector('[data-stat=orders] td:has-text("pending_payment 2")', { timeout: 5_000 });

    await page.click('#run-reconcile');
    await page.waitForSelector('#action-result:has-text("Reconcile: verified")');
    // The live view shows that reconciliation (kept in Redis for every instance) and the claims' latency.
    await page.waitForSelector('[data-stat=lastReconciliation] td:has-text("no drift")', { timeout: 5_000 });
    assert.match((await page.textContent('[data-stat=claimLatency] td')) ?? '', /≤ [\d.]+ ms \/ ≤ [\d.]+ ms|no claims this second/);
    assert.match((await page.textContent('[data-stat=pipelineLag] td')) ?? '', /^\d+\.\d\d s$/);
    await page.close();
  });
});

describe('the buyer page (GET /store/:voucherId)', () => {
  it('turns a double click into one order, follows it to pending_payment, and pays it', async () => {
    assert.ok(voucherId, 'the console test created the voucher');
    const page = await browser.newPage();
    await page.goto(`${base}/store/${voucherId}`);
    await page.waitForSelector('#phase:text-is("on sale")');
    await page.waitForSelector('#units:text-is("3")');
    assert.match(await page.textContent('#countdown') ?? '', /^ends in \d\d:\d\d/);
    await page.fill('#token', await t.token(200));
    await page.click('#sign-in-form button');
    await page.waitForSelector('#buyer:not([hidden])');

    await page.dblclick('#buy');
    await page.waitForSelector('#order-status:text-is("pending_payment")');
    const orders = await t.c.db.selectFrom('orders').select(['id', 'status']).where('voucher_id', '=', voucherId).where('user_id', '=', '200').execute();
    assert.equal(orders.length, 1, 'one order for the double click');
    assert.equal(await page.textContent('#order-id'), orders[0]!.id);
    await page.waitForSelector('#units:text-is("2")');

    await page.click('#pay');
    await page.waitForSelector('#order-status:text-is("paid")');
    const paid = await t.c.db.selectFrom('orders').select('status').where('id', '=', orders[0]!.id).executeTakeFirstOrThrow();
    assert.equal(paid.status, 'paid');
    await page.close();
  });

  it('answers an id that is not one with 400, and serves only its own assets', async () => {
    assert.equal((await t.app.inject({ url: '/store/abc' })).statusCode, 400);
    const js = await t.app.inject({ url: '/assets/store.js' });
    assert.equal(js.statusCode, 200);
    assert.match(js.headers['content-type'] as string, /^text\/javascript/);
    assert.equal((await t.app.inject({ url: '/assets/../routes.ts' })).statusCode, 404);
    assert.equal((await t.app.inject({ url: '/assets/console.html' })).statusCode, 404);
    const html = await t.app.inject({ url: '/console' });
    assert.match(html.headers['content-security-policy'] as string, /default-src 'self'/);
  });
});
