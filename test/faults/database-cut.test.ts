// The database cut for more than ten seconds while the pipeline is draining a sale (through a TCP
// proxy of this test's own; the shared MariaDB is never stopped): admissions go on from Redis,
// the pipeline retries without acknowledging anything, and when the database is back every 202
// is stored once.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createVoucher, DATABASE_PORT, databaseServerVia, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';
import { assertContractAnswers, injectClaims, startSale } from '../support/sale.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { waitFor } from '../../support/wait.js';

const STOCK = 4_000;
const CUT_MS = 10_500;

describe('the database cut mid-drain', async () => {
  const proxy = new TcpProxy('127.0.0.1', DATABASE_PORT);
  const port = await proxy.start();
  after(() => proxy.restore()); // before the app drops its database through the proxy
  const t = await startTestApp(suiteScope(), 'dbcut', {}, databaseServerVia(port));
  after(() => proxy.stop());

  it('when the database is unreachable for over 10 s, then admissions go on, nothing is acknowledged unstored, and every 202 is stored once', { timeout: 120_000 }, async (ctx) => {
    await t.c.startWorkers();
    const v = await createVoucher(t, { stock: STOCK });
    const storedCount = async () =>
      Number((await t.c.db.selectFrom('orders').select((eb) => eb.fn.countAll().as('n')).where('voucher_id', '=', v.id).executeTakeFirstOrThrow()).n);
    // The first buyers, then the cut while their orders are being stored, then the rest of the sale
    // while the database is away.
    const early = startSale({ send: injectClaims(t, v.id), firstUser: 1, buyers: 1_500, concurrency: 100 });
    await waitFor('the drain under way', async () => (await storedCount()) >= 500, 60_000);
    await proxy.cut();
    const late = startSale({ send: injectClaims(t, v.id), firstUser: 10_000, buyers: STOCK, concurrency: 100 });
    // The length of the outage is what is tested: the sale goes on against a database away this long.
    await new Promise((r) => setTimeout(r, CUT_MS));
    const admittedDuringCut = late.admitted().length;
    await proxy.restore();
    await Promise.all([early.done, late.done]);
    const admitted = [...early.admitted(), ...late.admitted()];

    await waitForDrain(t.c, v.id, 60_000);
    const truth = await assertInvariants(t.c, v.id, admitted);
    assertContractAnswers(early);
    assertContractAnswers(late);
    ctx.diagnostic(`${admitted.length} admitted, ${admittedDuringCut} while the database was cut, ${truth.orders.length} stored`);
    assert.ok(admittedDuringCut > 0, 'admission does not need the database');
    assert.equal(truth.orders.length, admitted.length);
    assert.equal(truth.dbStock, STOCK - truth.orders.length);
  });
});
