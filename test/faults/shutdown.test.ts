// SIGTERM under load, on a real `seckill serve` process with keep-alive clients: every request
// that reached it is answered (a 202, or the contract's 503 with Retry-After and Connection:
// close), no connection with a request on its way is reset, the process exits 0, and every 202
// ends as a stored order once a worker has drained what the stopped process left in the stream.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createVoucher, startTestApp } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';
import { startSeckill } from '../../support/processes.js';
import { httpClaims } from '../../src/loadgen/http-claims.js';
import { startSale } from '../support/sale.js';
import { waitFor } from '../../support/wait.js';

const STOCK = 20_000;

describe('SIGTERM mid-load', () => {
  it('when serve is stopped under keep-alive load, then requests in flight are answered, none is reset, and every 202 is stored', { timeout: 120_000 }, async (ctx) => {
    const t = await startTestApp(ctx, 'sigterm');
    const v = await createVoucher(t, { stock: STOCK });
    const serve = startSeckill(['serve', '--no-migrate'], { env: { ...t.env, PORT: '0', LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '2000' } });
    ctx.after(() => serve.stop('SIGKILL'));
    const [, origin] = await serve.line(/listening at (http:\/\/127\.0\.0\.1:\d+)/);

    const client = httpClaims({ origins: [origin!], voucherId: v.id, token: (user: number) => t.token(user), connections: 100 });
    ctx.after(() => client.close());
    const sale = startSale({ send: client.send, firstUser: 1, buyers: STOCK, concurrency: 100 });
    await waitFor('claims to flow', () => sale.answers.filter((a) => a.status === 202).length >= 2_000, 60_000);

    const stoppedAt = performance.now();
    assert.equal(await serve.stop('SIGTERM'), 0, serve.lines.join('\n'));
    const exitedAt = performance.now();
    await sale.done;

    const answered = sale.answers.filter((a) => a.status !== 0);
    for (const a of answered) {
      if (a.status === 202) continue;
      assert.equal(a.status, 503, `unexpected ${a.status} ${a.code}`);
      assert.equal(a.code, 'UNAVAILABLE');
      assert.ok(a.retryAfter, '503 without Retry-After');
    }
    // Refused connections after the listener closed are expected; a reset is a request lost on its way.
    const resets = sale.answers.filter((a) => a.status === 0 && !/ECONNREFUSED/.test(a.error ?? ''));
    ctx.diagnostic(
      `${sale.admitted().length} admitted, ${answered.filter((a) => a.status === 503).length} answered 503 while closing, ` +
        `${resets.length} reset, closing took ${Math.round(exitedAt - stoppedAt)} ms`,
    );
    assert.deepEqual(resets.map((a) => a.error), [], 'no request was reset');

    // What the stopped process left in the stream is stored by the next worker.
    await t.c.startPipeline();
    await waitForDrain(t.c, v.id, 60_000);
    await assertInvariants(t.c, v.id, sale.admitted());
  });
});
