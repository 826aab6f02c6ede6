// DB_STATEMENT_TIMEOUT_MS on both databases, through a proxy of this test's own that stops
// forwarding bytes while keeping every socket open (a silent database): each wait, for a statement
// or for a connection, ends at the deadline with an error classified unreachable, the stuck
// connection is destroyed, and once the database answers again the pool serves from fresh ones.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { sql } from 'kysely';
import { createDb } from '../../../src/infra/db/database.js';
import { isDatabaseUnreachable } from '../../../src/infra/db/errors.js';
import { createVoucher, DATABASE_PORT, databaseServerVia, startTestApp, suiteScope } from '../../support/helpers.js';
import { TcpProxy } from '../../../support/tcp-proxy.js';

const DEADLINE_MS = 400;

/** How long `work` took to settle, and the error it failed with (if it did). */
async function timed(work: Promise<unknown>): Promise<{ ms: number; err: unknown }> {
  const started = performance.now();
  const err = await work.then(() => null, (e: unknown) => e);
  return { ms: performance.now() - started, err };
}

describe('a database that stops answering without closing', async () => {
  const proxy = new TcpProxy('127.0.0.1', DATABASE_PORT);
  const port = await proxy.start();
  after(() => proxy.resume()); // before the app drops its database through the proxy
  const t = await startTestApp(suiteScope(), 'stmtdeadline', { DB_STATEMENT_TIMEOUT_MS: String(DEADLINE_MS) }, databaseServerVia(port));
  after(() => proxy.stop());

  it('when a statement gets no answer, then it fails at the deadline as unreachable, and the next statements run on fresh connections', async () => {
    const db = createDb(t.c.config.databaseUrl, 2, { statementTimeoutMs: DEADLINE_MS });
    after(() => db.destroy());
    await sql`select 1`.execute(db);
    proxy.stall();
    // Two statements on the two connections, and a third waiting for one of them.
    const waits = await Promise.all([1, 2, 3].map(() => timed(sql`select 1`.execute(db))));
    proxy.resume();
    for (const { ms, err } of waits) {
      assert.ok(isDatabaseUnreachable(err), `classified unreachable: ${String(err)}`);
      assert.match(String((err as Error).message), /did not answer|timeout exceeded/);
      assert.ok(ms < DEADLINE_MS + 300, `failed after ${Math.round(ms)} ms, deadline ${DEADLINE_MS} ms`);
    }
    // The stuck connections were destroyed, not pooled: every one of these gets an answer.
    for (let i = 0; i < 4; i++) assert.deepEqual((await sql<{ one: number }>`select 1 as one`.execute(db)).rows.map((r) => Number(r.one)), [1]);
  });

  it('when a claim needs the silent database, then it is answered 503 within the deadline and takes nothing', async () => {
    const v = await createVoucher(t, { kind: 'common', stock: 5 });
    const token = await t.token(77);
    proxy.stall();
    const started = performance.now();
    const answer = await t.app.inject({ method: 'POST', url: `/api/vouchers/${v.id}/orders`, headers: { authorization: `Bearer ${token}` }, payload: {} });
    const ms = performance.now() - started;
    proxy.resume();
    assert.equal(answer.statusCode, 503, answer.body);
    assert.equal(answer.json().code, 'UNAVAILABLE');
    assert.ok(ms < DEADLINE_MS * 2 + 300, `answered after ${Math.round(ms)} ms`);
    // Nothing was taken: the stock and the orders are as before, and the pool serves again.
    const row = await t.c.db.selectFrom('vouchers').select('stock').where('id', '=', v.id).executeTakeFirstOrThrow();
    assert.equal(Number(row.stock), 5);
    const orders = await t.c.db.selectFrom('orders').select('id').where('voucher_id', '=', v.id).execute();
    assert.equal(orders.length, 0);
  });
});
