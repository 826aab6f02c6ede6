// Orders the database acknowledged and then lost, as a failover to a standby that had not received
// the last commits leaves them: the rows gone, the stock and the buyers' quantities as before them.
// Here the loss is made by hand on one server and the failover told by the server identity Redis
// keeps; test/infra/db/database-failover.test.ts makes both for real.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { waitFor } from '../../support/wait.js';
import { burst, createVoucher, range, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';

const t = await startTestApp(suiteScope(), 'lost-orders', { RECONCILE_INTERVAL_MS: '0' });
await t.c.startWorkers();

/** Takes orders out of the database as if their commits had never reached it. */
async function loseOrders(voucherId: string, orderIds: string[]): Promise<void> {
  await t.c.db.transaction().execute(async (trx) => {
    const rows = await trx.selectFrom('orders').select(['user_id', 'quantity']).where('id', 'in', orderIds).execute();
    await trx.deleteFrom('orders').where('id', 'in', orderIds).execute();
    for (const { user_id, quantity } of rows) {
      await trx.updateTable('user_quantities').set({ quantity: sql`quantity - ${quantity}` }).where('voucher_id', '=', voucherId).where('user_id', '=', user_id).execute();
    }
    const units = rows.reduce((n, r) => n + r.quantity, 0);
    await trx.updateTable('vouchers').set({ stock: sql`stock + ${units}` }).where('id', '=', voucherId).execute();
  });
}

const storedOf = async (ids: string[]) => (await t.c.db.selectFrom('orders').select('id').where('id', 'in', ids).execute()).length;
const i3 = async (voucherId: string) => (await t.c.audit(BigInt(voucherId)))!.checks.find((c) => c.id === 'I3')!;

describe('acknowledged orders the database lost', () => {
  it('when another database server answers without them, then they are stored again; the audit reports them until then', async () => {
    const v = await createVoucher(t, { stock: 10, perUserLimit: 1 });
    const admitted = await burst(t, v.id, range(1, 8));
    await waitForDrain(t.c, v.id);
    const lost = admitted.slice(0, 3);
    await loseOrders(v.id, lost);

    // The same server still answers: nothing is restored (the watch runs every second), and the audit says what is missing.
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(await storedOf(lost), 0);
    const before = await i3(v.id);
    assert.equal(before.ok, false);
    assert.match(before.problems.join('\n'), /3 acknowledged order\(s\) no longer in the database/);

    // The server Redis remembers is another one: the workers' watch restores what the one answering lacks.
    await t.c.redis.set(t.c.keys.databaseServer(), JSON.stringify({ server: 'old-primary:3306:1', startedMs: 0 }));
    await waitFor('the lost orders to be stored again', async () => (await storedOf(lost)) === lost.length, 10_000);
    // Said by /readyz for a minute: the database failed over.
    const ready = (await t.app.inject({ method: 'GET', url: '/readyz' })).json();
    assert.equal(ready.database.state, 'degraded');
    assert.ok(Date.now() - Date.parse(ready.database.serverChangedAt) < 10_000, JSON.stringify(ready));
    await waitForDrain(t.c, v.id);
    const { audit } = await assertInvariants(t.c, v.id, admitted);
    assert.equal(audit.sold, 8);
    assert.equal((await t.c.metrics.ordersRestored.get()).values[0]?.value, 3);
  });

  it('restores an order once however often it is asked, with the trace its entry carried, and an order stored already takes nothing again', async () => {
    const v = await createVoucher(t, { stock: 5, perUserLimit: 1 });
    const admitted = await burst(t, v.id, range(1, 4));
    await waitForDrain(t.c, v.id);
    await loseOrders(v.id, admitted.slice(0, 1));
    const missing = await t.c.lostOrders.missing(BigInt(v.id));
    assert.deepEqual(missing.map((o) => o.orderId), admitted.slice(0, 1));
    // Twice at once, as two workers would; the order's traced claim (its entry's t field) still traced.
    const traceParent = `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-01`;
    const traced = { ...missing[0]!, traceParent };
    assert.equal((await Promise.all([1, 2].map(() => t.c.scripts.restore(traced)))).filter(Boolean).length, 1);
    const [[, fields]] = (await t.c.redis.xrevrange(t.c.keys.orders(traced.shard), '+', '-', 'COUNT', 1)) as [string, string[]][] as [[string, string[]]];
    assert.deepEqual(fields.slice(2), ['t', traceParent], JSON.stringify(fields));
    await waitForDrain(t.c, v.id);
    assert.deepEqual(await t.c.lostOrders.missing(BigInt(v.id)), []);
    assert.equal(await t.c.scripts.restore(missing[0]!), true, 'a stored order, asked by hand, is admitted again');
    await waitForDrain(t.c, v.id);
    // The pipeline finds it stored already: the second entry takes nothing.
    await assertInvariants(t.c, v.id, admitted);
  });
});
