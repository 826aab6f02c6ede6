// The console's charts in a real browser, against a real app (Redis and MariaDB): a small sale
// opened before its start, and what the charts drew against what the stores hold afterwards.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { startBrowser } from '../support/browser.js';
import { burst, createVoucher, range, redisView, startTestApp, suiteScope } from '../support/helpers.js';

const t = await startTestApp(suiteScope(), 'web-charts');
await t.c.startWorkers();
const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
const browser = await startBrowser();

type Shown = { t: number[]; [field: string]: (number | null)[] };
type Marker = { t: number; label: string };
declare const window: { consoleCharts: { series(): Shown | null; markers(): Marker[] | null } };

/** Polls what the charts show until `done` holds (page.waitForFunction evals a string: the page's CSP refuses it). */
async function shownWhen(page: Page, done: (series: Shown, markers: Marker[]) => boolean, timeoutMs: number) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [series, markers] = await page.evaluate(() => [window.consoleCharts.series(), window.consoleCharts.markers()] as const);
    if (series && markers && done(series, markers)) return { series, markers };
    if (Date.now() > until) throw new Error(`the charts never showed it: ${JSON.stringify({ series, markers })}`);
    await page.waitForTimeout(200);
  }
}
const sum = (values: (number | null)[] | undefined) => (values ?? []).reduce<number>((n, a) => n + (a ?? 0), 0);

describe('the console charts', () => {
  it('draw the sale from its start to its sell-out with the numbers the stores hold, and mark the start, the sell-out and the server changes', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
    page.on('pageerror', (e) => void errors.push(e.message));
    // Signed in first (the token stays in the tab), so that the voucher's short wait for its start
    // is spent drawing it, not on sign-in: the start marker shows only if a point precedes it.
    await page.goto(`${base}/console`);
    await page.fill('#token', await t.admin());
    await page.click('#sign-in-form button');
    await page.waitForSelector('#app:not([hidden])');
    const beginAt = new Date(Date.now() + 3_000);
    const v = await createVoucher(t, { stock: 5, beginAt });
    await page.goto(`${base}/console#voucher=${v.id}`);
    await page.reload();
    await shownWhen(page, (s) => (s.t?.length ?? 0) >= 2, 10_000);
    assert.ok(Date.now() < beginAt.getTime(), 'the charts drew two points before the sale started');
    assert.equal(await page.locator('#charts .uplot canvas').count(), 6, 'six charts');

    // The sale starts; 8 buyers for 5 units, then both stores' servers change (as the watchers count them).
    await new Promise((resolve) => setTimeout(resolve, beginAt.getTime() - Date.now() + 300));
    assert.equal((await burst(t, v.id, range(300, 8))).length, 5);
    await shownWhen(page, (s) => s.redisStock?.at(-1) === 0 && s.dbStock?.at(-1) === 0 && sum(s.admissions) === 5, 15_000);
    t.c.metrics.redisMasterChanges.inc();
    t.c.metrics.databaseServerChanges.inc();
    const { series: shown, markers } = await shownWhen(page, (_s, m) => m.length >= 4, 5_000);
    const stored = await t.c.db.selectFrom('vouchers').select('stock').where('id', '=', v.id).executeTakeFirstOrThrow();
    const orders = await t.c.db.selectFrom('orders').select('id').where('voucher_id', '=', v.id).execute();
    assert.equal(shown.redisStock!.at(-1), (await redisView(t, v.id)).stock);
    assert.equal(shown.dbStock!.at(-1), stored.stock);
    assert.equal(sum(shown.admissions), orders.length);
    // Before the start the stock stood at 5 in both stores; claims/s drew the admissions and the sold-out answers.
    assert.equal(shown.redisStock![0], 5);
    assert.ok(shown.admitted!.some((r) => (r ?? 0) > 0) && shown.soldOut!.some((r) => (r ?? 0) > 0), JSON.stringify(shown));
    assert.deepEqual(markers.map((m) => m.label), ['sale start', 'sold out', 'Redis master change', 'database server change']);
    assert.equal(markers[0]!.t, beginAt.getTime() / 1000);
    assert.ok(markers.every((m) => m.t >= shown.t[0]! && m.t <= shown.t.at(-1)!), 'every marker is within the time drawn');
    assert.deepEqual(errors, [], 'no script error nor refused resource (CSP)');
    await page.close();
  });

  it('serves the chart library by exact names only', async () => {
    const js = await t.app.inject({ url: '/assets/vendor/uplot.esm.js' });
    assert.equal(js.statusCode, 200);
    assert.match(js.headers['content-type'] as string, /^text\/javascript/);
    assert.match(js.body, /export \{ uPlot as default \}/);
    const css = await t.app.inject({ url: '/assets/vendor/uPlot.min.css' });
    assert.equal(css.statusCode, 200);
    assert.match(css.headers['content-type'] as string, /^text\/css/);
    for (const url of ['/assets/vendor/', '/assets/vendor/uPlot.cjs.js', '/assets/vendor/../../package.json']) assert.equal((await t.app.inject({ url })).statusCode, 404, url);
  });
});
