// Statements that lock rows by a long id list (the event relay's claim and delete, the release of
// expired orders, reconciliation's sweeps) must lock those rows and no others, or two workers doing
// the same with their own rows wait for each other and deadlock. MariaDB turns an IN list of 1,000
// values or more into a join that may scan the table (in_predicate_conversion_threshold; the
// connector turns that off, src/infra/db/mysql.ts); PostgreSQL never locks rows it only reads.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { createDb } from '../../../src/infra/db/database.js';
import { dialectOf } from '../../../src/infra/db/dialect.js';
import { range, startTestApp, suiteScope } from '../../support/helpers.js';

const t = await startTestApp(suiteScope(), 'long_in_lists');
const db = t.c.db;
const LOCK_WAIT = {
  mysql: sql`set session innodb_lock_wait_timeout = 2`,
  postgres: sql`set lock_timeout = '2s'`,
}[dialectOf(db).name];

describe('locking by long id lists', () => {
  it('when two transactions lock their own interleaved 2,000 rows, then neither waits for the other', async () => {
    const ids = range(1, 4_000);
    for (let i = 0; i < ids.length; i += 1_000) {
      await db
        .insertInto('order_events')
        .values(ids.slice(i, i + 1_000).map((n) => ({ order_id: String(n), voucher_id: '1', user_id: String(n), type: 'stored' as const, quantity: 1, status: 'pending_payment' })))
        .execute();
    }
    const eventIds = (await db.selectFrom('order_events').select('event_id').orderBy('event_id').execute()).map((r) => r.event_id);
    const odd = eventIds.filter((_, i) => i % 2 === 0);
    const even = eventIds.filter((_, i) => i % 2 === 1);
    const [a, b] = [createDb(t.c.config.databaseUrl, 1), createDb(t.c.config.databaseUrl, 1)];
    try {
      for (const one of [a, b]) await LOCK_WAIT.execute(one);
      let releaseFirst!: () => void;
      const firstHolds = new Promise<void>((resolve) => (releaseFirst = resolve));
      let firstLocked!: () => void;
      const locked = new Promise<void>((resolve) => (firstLocked = resolve));
      const first = a.transaction().execute(async (trx) => {
        await trx.selectFrom('order_events').select('event_id').where('event_id', 'in', odd).forUpdate().execute();
        firstLocked();
        await firstHolds;
      });
      await locked;
      try {
        await b.transaction().execute(async (trx) => {
          const rows = await trx.selectFrom('order_events').select('event_id').where('event_id', 'in', even).forUpdate().execute();
          assert.equal(rows.length, even.length);
          await trx.deleteFrom('order_events').where('event_id', 'in', even).execute();
        });
      } finally {
        releaseFirst();
        await first;
      }
      assert.equal((await db.selectFrom('order_events').select('event_id').execute()).length, odd.length, 'the second deleted its own rows, and only those');
    } finally {
      await Promise.all([a.destroy(), b.destroy()]);
    }
  });
});
