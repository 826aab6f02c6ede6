// The error classification (src/infra/db/errors.ts) against the real errors of the database this
// pass runs on (MariaDB, or PostgreSQL in scripts/test.sh's last pass): what the pipeline retries
// and what a request answers 503 must not depend on which database it is.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { createDb } from '../../../src/infra/db/database.js';
import { isDatabaseUnreachable, isTransientDbError, isUniqueViolation } from '../../../src/infra/db/errors.js';
import { createVoucher, databaseServerVia, startTestApp } from '../../support/helpers.js';

const t = await startTestApp('db_errors');
const db = t.c.db;

const rejection = async (work: Promise<unknown>) => {
  try {
    await work;
  } catch (err) {
    return err;
  }
  throw new Error('expected the statement to fail');
};

describe('database errors, classified the same on either database', () => {
  it('a duplicate key is a unique violation, which the pipeline retries (a racing consumer stored it first)', async () => {
    const v = await createVoucher(t);
    const row = await db.selectFrom('vouchers').selectAll().where('id', '=', v.id).executeTakeFirstOrThrow();
    const err = await rejection(db.insertInto('vouchers').values(row).execute());
    assert.ok(isUniqueViolation(err), String(err));
    assert.ok(isTransientDbError(err));
    assert.ok(!isDatabaseUnreachable(err));
  });

  it('a broken statement or a violated check is permanent', async () => {
    for (const work of [sql`select no_such_column from vouchers`.execute(db), db.updateTable('vouchers').set({ stock: -1 }).execute()]) {
      const err = await rejection(work);
      assert.ok(!isTransientDbError(err), String(err));
      assert.ok(!isUniqueViolation(err));
    }
  });

  it('when two transactions lock two rows in opposite orders, then the deadlock victim is told to retry', async () => {
    const a = await createVoucher(t);
    const b = await createVoucher(t);
    // Each takes its first row, waits until the other has its own, then asks for the other's.
    let arrived = 0;
    let bothLocked!: () => void;
    const gate = new Promise<void>((resolve) => (bothLocked = resolve));
    const crossing = (first: string, second: string) =>
      db.transaction().execute(async (trx) => {
        await trx.selectFrom('vouchers').select('id').where('id', '=', first).forUpdate().execute();
        if (++arrived === 2) bothLocked();
        await gate;
        await trx.selectFrom('vouchers').select('id').where('id', '=', second).forUpdate().execute();
      });
    const results = await Promise.allSettled([crossing(a.id, b.id), crossing(b.id, a.id)]);
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.equal(failed.length, 1, 'one transaction is chosen as the victim, the other commits');
    assert.ok(isTransientDbError(failed[0]!.reason), String(failed[0]!.reason));
  });

  it('when nothing listens where the database should be, then it is unreachable (a 503, a retry)', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const nowhere = createDb(`${databaseServerVia(port)}/nowhere`, 1);
    try {
      const err = await rejection(sql`select 1`.execute(nowhere));
      assert.ok(isDatabaseUnreachable(err), String(err));
      assert.ok(isTransientDbError(err));
    } finally {
      await nowhere.destroy();
    }
  });
});
