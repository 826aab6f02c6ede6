// Whether a place depends on when a buyer joined: 20,000 entrants of a real pre-queue, the last
// 1,000 of them in the last 10 ms before the start (as a script firing at the opening would), with
// user ids in join order (so an order that leaked the ids or the join times would show). The seed
// is fixed so the test decides the same way on every run.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { startTestApp, suiteScope } from '../support/helpers.js';
import { waitFor } from '../../support/wait.js';
import { createQueueVoucher, summary } from './support.js';

const t = await startTestApp(suiteScope(), 'queue-fairness');
await t.c.startQueue();

const ENTRANTS = 20_000;
const LAST_10_MS = 1_000;
const STOCK = 2_000;
const DECILES = 10;
/** chi-square with 9 degrees of freedom: P(X > 21.666) = 1 %. */
const CHI2_9_AT_1_PERCENT = 21.666;

/** P(X ≥ k) for X ~ Binomial(n, p), by summing the terms (n is small). */
function binomialTail(n: number, p: number, k: number): number {
  let term = (1 - p) ** n; // P(X = 0)
  let below = 0;
  for (let i = 0; i < k; i++) {
    below += term;
    term *= ((n - i) / (i + 1)) * (p / (1 - p));
  }
  return 1 - below;
}

describe('queue vouchers: fairness of the draw', () => {
  it('when 20,000 buyers join over a minute, the last 1,000 in the last 10 ms, then who gets a unit does not depend on when they joined', async () => {
    const beginAt = new Date(Date.now() + 3_000);
    const v = await createQueueVoucher(t, { opensAt: new Date(Date.now() - 120_000), beginAt, stock: STOCK });
    const id = BigInt(v.id);
    await t.c.db.updateTable('queue_draws').set({ seed: createHash('sha256').update('fairness test').digest('hex') }).where('voucher_id', '=', v.id).execute();
    // Join times (µs) in the pre-queue's own sorted set: a minute of steady joins, then the burst.
    const beginUs = beginAt.getTime() * 1000;
    const joins: (number | string)[] = [];
    for (let i = 0; i < ENTRANTS; i++) {
      const at = i < ENTRANTS - LAST_10_MS ? beginUs - 60_000_000 + Math.floor((i * 59_990_000) / (ENTRANTS - LAST_10_MS)) : beginUs - 10_000 + (i - (ENTRANTS - LAST_10_MS)) * 10;
      joins.push(at, String(1_000_000 + i));
    }
    for (let i = 0; i < joins.length; i += 2_000) await t.c.redis.zadd(t.c.keys.queueEntrants(id), ...joins.slice(i, i + 2_000));

    await waitFor('the draw published', async () => (await summary(t, v.id)).seed, 20_000);
    const winners = new Set(Object.keys(await t.c.redis.hgetall(t.c.keys.queueAdmitted(id))));
    assert.equal(winners.size, STOCK);

    // Winners per decile of join time, against the same share in each.
    const perDecile = Array.from({ length: DECILES }, () => 0);
    for (let i = 0; i < ENTRANTS; i++) if (winners.has(String(1_000_000 + i))) perDecile[Math.floor((i * DECILES) / ENTRANTS)]!++;
    const expected = STOCK / DECILES;
    const chi2 = perDecile.reduce((sum, o) => sum + (o - expected) ** 2 / expected, 0);
    assert.ok(chi2 < CHI2_9_AT_1_PERCENT, `chi-square ${chi2.toFixed(2)} over deciles ${perDecile.join(', ')}`);

    // The last 10 ms do no better: as many winners among them as chance gives (one-sided, 1 %).
    let lastWinners = 0;
    for (let i = ENTRANTS - LAST_10_MS; i < ENTRANTS; i++) if (winners.has(String(1_000_000 + i))) lastWinners++;
    const p = binomialTail(LAST_10_MS, STOCK / ENTRANTS, lastWinners);
    assert.ok(p > 0.01, `${lastWinners} of the last ${LAST_10_MS} joiners won (chance expects ${(LAST_10_MS * STOCK) / ENTRANTS}), P = ${p}`);
    console.log(`# fairness: chi-square ${chi2.toFixed(2)} (deciles ${perDecile.join(', ')}); last 10 ms: ${lastWinners} of ${LAST_10_MS} won, P(≥) = ${p.toFixed(3)}`);
  });
});
