// A cancellation that only the old primary committed, its unit sold again before the failover. On
// the new primary the cancelled order is unpaid again and holds its unit, so the order that took the
// unit cannot be stored again: it fails DB_SOLD_OUT, Redis is compensated, and its buyer reads why.
// What docs/operations.md (The database fails over) says a failover does not make good.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { queryOnce, startPostgresPair } from '../../../support/private-postgres.js';
import { waitFor } from '../../../support/wait.js';
import { burst, createVoucher, orderAction, range, startTestApp, suiteScope } from '../../support/helpers.js';
import { assertInvariants, waitForDrain } from '../../support/invariants.js';

const scope = suiteScope();
const pair = await startPostgresPair();
const t = await startTestApp(scope, 'db-lost-cancel', { CLAIM_IDLE_MS: '1000' }, pair.url.replace(/\/postgres$/, ''));
scope.after(() => pair.stop());
await t.c.startWorkers();

/** Status and failure code of `ids` on the server on `port`, asked directly (not through the proxy). */
async function statusOn(port: number, ids: string[]): Promise<string[]> {
  const url = `postgres://postgres@127.0.0.1:${port}/${new URL(t.env.DATABASE_URL!).pathname.slice(1)}`;
  const { rows } = await queryOnce(url, `select status || coalesce(' ' || split_part(failure_reason, ':', 1), '') as s from orders where id = any($1::bigint[]) order by id`, [ids]);
  return rows.map((r) => r.s as string);
}

it('when a cancellation is lost in a failover after its unit was sold again, then the order that took the unit fails DB_SOLD_OUT and both stores agree', async () => {
  const v = await createVoucher(t, { stock: 20, perUserLimit: 1 });
  const first = await burst(t, v.id, range(1, 20));
  assert.equal(first.length, 20, 'the sale sold out');
  await waitForDrain(t.c, v.id);
  await pair.caughtUp();

  pair.pauseReplication();
  const cancelled = first.slice(0, 5);
  for (const [i, id] of cancelled.entries()) assert.equal((await orderAction(t, 'cancel', id, 1 + i)).statusCode, 200);
  const stock = () => t.c.redis.hget(t.c.keys.voucher(BigInt(v.id)), 'stock');
  await waitFor('the cancelled units back on sale', async () => (await stock()) === '5', 10_000, 50);
  const resold = await burst(t, v.id, range(101, 5));
  assert.equal(resold.length, 5, 'the units given back were sold again');
  await waitForDrain(t.c, v.id); // stored on the old primary alone
  assert.deepEqual(await statusOn(pair.primaryPort, resold), Array(5).fill('pending_payment'));
  assert.ok((await pair.lagBytes()) > 0, 'the standby is behind');
  await new Promise((r) => setTimeout(r, 1_500)); // a few trims of the streams

  await pair.failover();
  await waitFor('the resold orders decided on the new primary', async () => (await statusOn(pair.standbyPort, resold)).length === 5, 20_000, 100);
  await waitForDrain(t.c, v.id);
  await t.c.reconciler.reconcileVoucher(BigInt(v.id), { allBuyers: true });

  const { audit } = await assertInvariants(t.c, v.id, [...first, ...resold]);
  assert.equal(audit.sold, 20, 'the 20 first orders hold every unit: their cancellations were lost');
  assert.deepEqual(await statusOn(pair.standbyPort, cancelled), Array(5).fill('pending_payment'));
  assert.deepEqual(await statusOn(pair.standbyPort, resold), Array(5).fill('failed DB_SOLD_OUT'));
  assert.equal(await stock(), '0');
  // The buyer told 202 reads why their order did not stand.
  const read = await t.app.inject({ method: 'GET', url: `/api/orders/${resold[0]}`, headers: { authorization: `Bearer ${await t.token(101)}` } });
  assert.equal(read.statusCode, 200);
  assert.equal(read.json().status, 'failed');
  assert.match(read.json().failureReason, /^DB_SOLD_OUT: /);
});
