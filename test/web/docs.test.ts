// The pages under their content security policies, in a real browser: the OpenAPI UI (/docs) has
// a policy of its own that lets its scripts and styles run, the console and the store page keep
// theirs, and none of them meets a refusal of its policy.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { startBrowser } from '../support/browser.js';
import { createVoucher, startTestApp, suiteScope } from '../support/helpers.js';

const t = await startTestApp(suiteScope(), 'web-docs');
const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
const browser = await startBrowser();
const voucher = await createVoucher(t);

/** Every refusal of the page's policy, as the page itself and its console report them. */
async function watchPolicy(page: Page): Promise<string[]> {
  const refusals: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) refusals.push(message.text());
  });
  await page.exposeFunction('reportRefusal', (text: string) => refusals.push(text));
  await page.addInitScript(() =>
    document.addEventListener('securitypolicyviolation', (e) => (window as unknown as { reportRefusal(t: string): void }).reportRefusal(`${e.violatedDirective} ${e.blockedURI}`)),
  );
  return refusals;
}

describe('pages under their content security policies', () => {
  it('when /docs is opened, then the OpenAPI UI renders and its "Try it out" calls the API, with no refusal of its policy', async () => {
    const page = await browser.newPage();
    const refusals = await watchPolicy(page);
    const res = await page.goto(`${base}/docs`);
    assert.equal(res?.status(), 200);
    const csp = res?.headers()['content-security-policy'] ?? '';
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    await page.waitForSelector('.swagger-ui .info .title:has-text("seckill engine")', { timeout: 15_000 });
    // "Try it out" calls this origin from the page.
    await page.click('.opblock-get .opblock-summary-path[data-path="/api/vouchers/{id}"]');
    await page.click('.opblock.is-open .try-out__btn');
    await page.fill('.opblock.is-open input[placeholder="id"]', voucher.id);
    await page.click('.opblock.is-open .execute');
    await page.waitForSelector('.opblock.is-open .live-responses-table .response-col_status:has-text("200")');
    assert.deepEqual(refusals, []);
    await page.close();
  });

  it('when the console and the store page are opened, then they run under their own policy with no refusal', async () => {
    for (const path of ['/console', `/store/${voucher.id}`]) {
      const page = await browser.newPage();
      const refusals = await watchPolicy(page);
      const res = await page.goto(`${base}${path}`);
      assert.equal(res?.status(), 200);
      assert.doesNotMatch(res?.headers()['content-security-policy'] ?? '', /unsafe-inline|unsafe-eval/);
      await page.waitForSelector('#sign-in:not([hidden])');
      assert.deepEqual(refusals, [], path);
      await page.close();
    }
  });
});
