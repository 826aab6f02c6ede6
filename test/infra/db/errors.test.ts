// The error classification (src/infra/db/errors.ts) against the real errors of the database this
// pass runs on (MariaDB, or PostgreSQL in scripts/test.sh's last pass): what the pipeline retries
// and what a request answers 503 must not depend on which database it is; and a value the database
// cannot store is invalid data (a 400 for a request, where the route schemas missed it), never
// worth a retry or taken for the database being away.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { createDb } from '../../../src/infra/db/database.js';
import { dialectOf } from '../../../src/infra/db/dialect.js';
import { isDatabaseUnreachable, isInvalidData, isLockConflict, isTransientDbError, isUniqueViolation } from '../../../src/infra/db/errors.js';
import { createVoucher, DATABASE_SERVER, databaseServerVia, startTestApp, suiteScope } from '../../support/helpers.js';

const t = await startTestApp(suiteScope(), 'db_errors');
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
    // One at a time: started together, the second's rejection would arrive unhandled while the first is awaited.
    for (const work of [() => sql`select no_such_column from vouchers`.execute(db), () => db.updateTable('vouchers').set({ stock: -1 }).execute()]) {
      const err = await rejection(work());
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
    // A request that loses it is answered 503 (retry), not 500.
    assert.ok(isLockConflict(failed[0]!.reason));
  });

  it('when the host name does not resolve, then it is unreachable', async () => {
    const server = new URL(DATABASE_SERVER);
    server.hostname = 'no-such-host.invalid';
    const nowhere = createDb(`${server.toString().replace(/\/$/, '')}/nowhere`, 1);
    try {
      const err = await rejection(sql`select 1`.execute(nowhere));
      assert.ok(isDatabaseUnreachable(err), String(err));
    } finally {
      await nowhere.destroy();
    }
  });

  // Per database: how a session ends another one, and makes its own transactions read-only (what
  // a failover onto a replica or standby looks like to the statements).
  const SESSION = {
    mysql: { id: sql<{ id: string }>`select connection_id() as id`, kill: (id: string) => sql`kill ${sql.raw(String(Number(id)))}`, readOnly: sql`set session transaction read only` },
    postgres: { id: sql<{ id: string }>`select pg_backend_pid() as id`, kill: (id: string) => sql`select pg_terminate_backend(${Number(id)})`, readOnly: sql`set default_transaction_read_only = on` },
  }[dialectOf(db).name];

  it('when the server ends the session in the middle of a transaction, then the statement is told to retry', async () => {
    const one = createDb(t.c.config.databaseUrl, 1);
    try {
      const err = await rejection(
        one.transaction().execute(async (trx) => {
          const { rows } = await SESSION.id.execute(trx);
          await SESSION.kill(rows[0]!.id).execute(db);
          await trx.selectFrom('vouchers').select('id').execute();
        }),
      );
      assert.ok(isDatabaseUnreachable(err), String(err));
      assert.ok(isTransientDbError(err));
    } finally {
      await one.destroy();
    }
  });

  it('when the database refuses writes (read-only), then a write waits for it rather than failing an order', async () => {
    const one = createDb(t.c.config.databaseUrl, 1);
    try {
      await SESSION.readOnly.execute(one);
      const err = await rejection(one.transaction().execute((trx) => trx.updateTable('vouchers').set({ stock: 1 }).execute()));
      assert.ok(isDatabaseUnreachable(err), String(err));
    } finally {
      await one.destroy();
    }
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

let nextId = 1;
const voucher = (changes: Record<string, unknown>) =>
  db
    .insertInto('vouchers')
    .values({ id: String(nextId++), title: 't', kind: 'common', initial_stock: 1, stock: 1, begin_at: new Date(), end_at: new Date(), per_user_limit: 1, payment_timeout_seconds: 60, waitlist: false, claim_token: false, ...changes })
    .execute();

// Per database: what only it refuses (PostgreSQL: NUL, a bigint spelt otherwise, a character another
// encoding lacks; MariaDB: bytes that are no UTF-8, a time past year 9999).
type Statements = Record<string, () => Promise<unknown>>;
const OWN: Record<'mysql' | 'postgres', Statements> = {
  mysql: {
    'bytes that are no UTF-8 in a text column': () => sql`insert into vouchers (id, title, kind, initial_stock, stock, begin_at, end_at, per_user_limit, payment_timeout_seconds) values (900, _binary 0xff, 'common', 1, 1, now(), now(), 1, 1)`.execute(db),
    'a time past year 9999': () => voucher({ end_at: new Date('+010000-01-01T00:00:00Z') }),
  },
  postgres: {
    'an id past 2^63 − 1 in a WHERE': () => db.selectFrom('orders').select('id').where('id', '=', '9223372036854775808').execute(),
    'NUL in text': () => voucher({ title: 'a\u0000b' }),
    'a bigint written 1e3': () => db.selectFrom('orders').select('id').where('id', '=', '1e3').execute(),
    'a character the target encoding lacks': () => sql`select convert_to('€', 'LATIN1')`.execute(db),
  },
};

describe('values the database cannot store', () => {
  const cases: Statements = {
    'an id past the column type': () => voucher({ id: '18446744073709551616' }),
    'a count past integer': () => voucher({ stock: 2 ** 40 }),
    'a title past varchar(200)': () => voucher({ title: 'x'.repeat(201) }),
    ...OWN[dialectOf(db).name],
  };
  for (const [what, work] of Object.entries(cases)) {
    it(`when a statement holds ${what}, then it is invalid data: no retry, not unreachable`, async () => {
      const err = await rejection(work());
      assert.ok(isInvalidData(err), String(err));
      assert.ok(!isTransientDbError(err), String(err));
      assert.ok(!isDatabaseUnreachable(err));
      assert.ok(!isUniqueViolation(err));
    });
  }

  it('a duplicate key or a broken statement is not invalid data', async () => {
    await voucher({ id: '500' });
    assert.ok(!isInvalidData(await rejection(voucher({ id: '500' }))));
    assert.ok(!isInvalidData(await rejection(sql`select no_such_column from vouchers`.execute(db))));
  });
});
