// The console and the buyer's page in a real browser, against a real app (Redis and MariaDB):
// what the pages show and what the stores hold after the clicks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startBrowser } from '../support/browser.js';
import { claim, createVoucher, redisView, startTestApp, suiteScope } from '../support/helpers.js';

const t = await startTestApp(suiteScope(), 'web-pages');
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

describe('ids the pages take from their address', () => {
  it('when the console is opened from a link whose voucher is not an id, then it says so and sends no request outside the vouchers\' paths, "Run audit now" included', async () => {
    const v = await createVoucher(t);
    const admin = await t.admin();
    const allowed = new RegExp(`^(GET /console|GET /assets/[\\w./-]+|GET /api/vouchers|(GET|POST) /api/vouchers/${v.id}(/live|/audit)?)$`);
    for (const fragment of ['1/../../orders', '1%2F..', `${v.id}/../../orders`, '9223372036854775808', '01', '']) {
      const page = await browser.newPage();
      const asked: string[] = [];
      page.on('request', (r) => void asked.push(`${r.method()} ${new URL(r.url()).pathname}`));
      await page.goto(`${base}/console#voucher=${fragment}`);
      await page.fill('#token', admin);
      await page.click('#sign-in-form button');
      await page.waitForSelector('#voucher-rows tr');
      await page.evaluate(() => document.getElementById('run-audit')!.click()); // hidden, but wired
      await page.waitForTimeout(300);
      for (const request of asked) assert.match(request, allowed, `#voucher=${fragment} sent ${request}`);
      await page.waitForSelector('#link-message:has-text("is not a voucher id")');
      assert.equal(await page.isVisible('#voucher'), false, 'no voucher is open');
      await page.close();
    }

    // Opened from a good link, then the address changed: the actions name the voucher on screen.
    const page = await browser.newPage();
    const asked: string[] = [];
    page.on('request', (r) => void asked.push(`${r.method()} ${new URL(r.url()).pathname}`));
    await page.goto(`${base}/console#voucher=${v.id}`);
    await page.fill('#token', admin);
    await page.click('#sign-in-form button');
    await page.waitForSelector(`#voucher-title:has-text("(${v.id})")`);
    await page.evaluate(() => (location.hash = '#voucher=1/../../orders'));
    await page.click('#run-audit');
    await page.waitForSelector('#audit-verdict:has-text("Audit OK")');
    assert.ok(asked.includes(`POST /api/vouchers/${v.id}/audit`), asked.join(', '));
    for (const request of asked) assert.match(request, allowed);
    await page.close();
  });

  it('when the store page is served at an address whose last part is not an id, then it says so and calls no API', async () => {
    const good = await t.app.inject({ url: `/store/${(await createVoucher(t)).id}` });
    const page = await browser.newPage();
    const asked: string[] = [];
    page.on('request', (r) => void asked.push(new URL(r.url()).pathname));
    // The API refuses such a path itself (400); served from elsewhere, the page must not trust it.
    await page.route(`${base}/store/12ab`, (route) => route.fulfill({ status: 200, headers: { 'content-type': 'text/html' }, body: good.body }));
    await page.goto(`${base}/store/12ab`);
    await page.waitForTimeout(300);
    assert.deepEqual(asked.filter((p) => p.startsWith('/api/')), []);
    await page.waitForSelector('#sale-message:has-text("names no sale")');
    await page.close();
  });
});
