import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KyselyPlugin } from 'kysely';
import { type VoucherStats, voucherStatsUseCase } from '../../src/console/stats.js';
import { createDb } from '../../src/infra/db/database.js';
import { burst, createVoucher, range, startTestApp, suiteScope } from '../support/helpers.js';
import { waitForDrain } from '../support/invariants.js';

// Small batches: many commits for the polling test to fall between.
const t = await startTestApp(suiteScope(), 'stats-snapshot', { RECONCILE_INTERVAL_MS: '0', PIPELINE_BATCH: '10' });
await t.c.startWorkers();

/** The units the answer accounts for: every order here is of one unit, so counts are units. */
const accounted = (s: VoucherStats) => s.dbStock + s.orders.pending_payment + s.orders.paid;
const figures = (s: VoucherStats) => `dbStock ${s.dbStock}, orders ${JSON.stringify(s.orders)}`;

describe('voucher stats read the database from one snapshot', () => {
  it('when a batch of orders commits right after the stats read the voucher, then the stock and the orders still add up', async () => {
    const v = await createVoucher(t, { stock: 3 });
    let between: (() => Promise<void>) | null = async () => {
      await burst(t, v.id, [1, 2]);
      await waitForDrain(t.c, v.id);
    };
    // On a pool of one connection, the statement after the first waits while the first's result
    // is transformed: the batch is stored and committed right there.
    const commitAfterFirstRead: KyselyPlugin = {
      transformQuery: ({ node }) => node,
      transformResult: async ({ result }) => {
        const commit = between;
        between = null;
        await commit?.();
        return result;
      },
    };
    const db = createDb(t.env.DATABASE_URL!, 1).withPlugin(commitAfterFirstRead);
    try {
      const stats = voucherStatsUseCase({ db, redis: t.c.redis, keys: t.c.keys, directory: t.c.directory });
      const during = await stats(BigInt(v.id));
      assert.equal(between, null, 'the batch was stored during the stats');
      assert.equal(accounted(during), 3, figures(during));
      const afterwards = await stats(BigInt(v.id));
      assert.deepEqual([afterwards.dbStock, afterwards.orders.pending_payment], [1, 2], figures(afterwards));
    } finally {
      await db.destroy();
    }
  });

  it('when GET /stats is polled while claims flow through the pipeline, then every answer adds up to the initial stock', async () => {
    const stock = 300;
    const v = await createVoucher(t, { stock });
    const headers = { authorization: `Bearer ${await t.admin()}` };
    const answers: VoucherStats[] = [];
    let selling = true;
    const poll = async () => {
      while (selling) {
        const res = await t.app.inject({ method: 'GET', url: `/api/vouchers/${v.id}/stats`, headers });
        assert.equal(res.statusCode, 200, res.body);
        answers.push(res.json());
      }
    };
    const pollers = [poll(), poll()];
    try {
      for (let from = 1; from <= stock; from += 30) await burst(t, v.id, range(from, 30));
      await waitForDrain(t.c, v.id);
    } finally {
      selling = false;
      await Promise.all(pollers);
    }
    const torn = answers.filter((s) => accounted(s) !== stock);
    assert.deepEqual(torn.map(figures), [], `${torn.length} of ${answers.length} answers do not add up to ${stock}`);
    assert.ok(answers.some((s) => s.dbStock < stock && s.dbStock > 0), 'some answers were taken mid-sale');
  });
});
