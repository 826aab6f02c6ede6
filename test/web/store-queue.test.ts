// The store page of a queue voucher in a real browser, against a real app with its workers: join
// before the start, the place and the wait after the draw, the order once a unit comes back; and
// the console's view of the queue.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startBrowser } from '../support/browser.js';
import { orderAction, startTestApp, suiteScope } from '../support/helpers.js';
import { waitFor } from '../../support/wait.js';
import { drawOrder } from '../../src/queue/draw-order.js';
import { createQueueVoucher, join } from '../queue/support.js';

declare const sessionStorage: { setItem(name: string, value: string): void };

const t = await startTestApp(suiteScope(), 'web-store-queue');
await t.c.startWorkers();
const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
const browser = await startBrowser();

describe('the buyer page of a queue voucher', () => {
  it('when the buyer joins before the start, then it shows the pre-queue, then the place and the wait after the draw, then the order when a unit comes back', async () => {
    const page = await browser.newPage();
    const beginAt = new Date(Date.now() + 5_000);
    const v = await createQueueVoucher(t, { opensAt: new Date(Date.now() - 1000), beginAt, stock: 1 });
    // The page's buyer is the one the (stored, secret) seed puts second of the two.
    const { seed } = await t.c.db.selectFrom('queue_draws').select('seed').where('voucher_id', '=', v.id).executeTakeFirstOrThrow();
    const [first, second] = drawOrder(seed, ['501', '502']).map(Number) as [number, number];

    // Signed in as the form leaves the tab (the form itself: pages.test.ts), so that the wait for
    // the start is not spent on sign-in on a loaded machine.
    const token = await t.token(second);
    await page.addInitScript((saved) => sessionStorage.setItem('seckill.store.token', saved), token);
    await page.goto(`${base}/store/${v.id}`);
    await page.waitForSelector('#queue:not([hidden])');
    assert.ok(Date.now() < beginAt.getTime() - 500, 'the page was up before the start');
    assert.equal(await page.isHidden('#buy'), true, 'no Buy button: the queue sells this voucher');
    await page.click('#join');
    await page.waitForSelector('#queue-message:has-text("You are in the queue")');
    assert.equal(await page.isHidden('#queue-place'), true, 'no place before the draw');
    assert.equal((await join(t, v.id, first)).statusCode, 202);

    // The draw: the other buyer has the unit, the page's buyer waits first in line.
    await page.waitForSelector('#queue-message:has-text("waiting for your turn")', { timeout: 15_000 });
    assert.equal(await page.textContent('#queue-position'), '2');
    assert.equal(await page.textContent('#queue-ahead'), '0');

    // The other buyer cancels: the page's buyer is admitted and pays.
    const theirs = await waitFor('the first place stored', async () =>
      t.c.db.selectFrom('orders').select('id').where('voucher_id', '=', v.id).where('user_id', '=', String(first)).where('status', '=', 'pending_payment').executeTakeFirst(),
    );
    assert.equal((await orderAction(t, 'cancel', theirs.id, first)).statusCode, 200);
    await page.waitForSelector('#queue-message:has-text("Your turn")');
    await page.waitForSelector('#order-status:text-is("pending_payment")');
    await page.click('#pay');
    await page.waitForSelector('#order-status:text-is("paid")');
    const mine = await t.c.db.selectFrom('orders').select(['id', 'status']).where('voucher_id', '=', v.id).where('user_id', '=', String(second)).execute();
    assert.deepEqual(mine.map((o) => o.status), ['paid']);
    assert.equal(await page.textContent('#order-id'), mine[0]!.id);
    await page.close();

    // The console shows the queue's size, its draw and how far admissions got.
    const console_ = await browser.newPage();
    await console_.goto(`${base}/console#voucher=${v.id}`);
    await console_.fill('#token', await t.admin());
    await console_.click('#sign-in-form button');
    await console_.waitForSelector('[data-stat="queue"]:has-text("2 admitted (1 by the draw)")', { timeout: 10_000 });
    assert.match((await console_.textContent('[data-stat="queue"]')) ?? '', /2 in the pre-queue · drawn /);
    await console_.close();
  });
});
