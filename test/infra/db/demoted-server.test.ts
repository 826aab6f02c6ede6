// Connections to a server that is no longer the primary are dropped at once (demoted-server.ts).
// A demoted primary answers writes with a read-only error; here every pooled connection is made
// read-only by a session setting (the database server itself is not touched), which the server
// answers with the same errors: 25006 on PostgreSQL, ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION on
// MariaDB. The first write finds out; the writes after it go on fresh connections.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { ConnectionGenerations } from '../../../src/infra/db/demoted-server.js';
import { createDb } from '../../../src/infra/db/database.js';
import { dialectOf } from '../../../src/infra/db/dialect.js';
import { isNotPrimary, isTransientDbError } from '../../../src/infra/db/errors.js';
import { range, startTestApp, suiteScope } from '../../support/helpers.js';

const t = await startTestApp(suiteScope(), 'demoted');
const POOL = 4;

describe('connections to a demoted server', () => {
  for (const statementTimeoutMs of [5_000, undefined]) {
    it(`when every pooled connection reaches a read-only server, then the first write fails (transient) and every later one goes on a fresh connection (${statementTimeoutMs === undefined ? 'no deadline' : 'with the statement deadline'})`, async () => {
      const db = createDb(t.c.config.databaseUrl, POOL, { statementTimeoutMs });
      try {
        const table = `demoted_${statementTimeoutMs ?? 0}`;
        await sql.raw(`create table ${table} (n integer)`).execute(db);
        const readOnly = dialectOf(db).name === 'postgres' ? 'SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY' : 'SET SESSION TRANSACTION READ ONLY';
        // Every connection of the pool at once (each held until all are), each made read-only.
        let all!: () => void;
        const together = new Promise<void>((resolve) => (all = resolve));
        let held = 0;
        await Promise.all(
          range(0, POOL).map(() =>
            db.connection().execute(async (c) => {
              await sql.raw(readOnly).execute(c);
              if (++held === POOL) all();
              await together;
            }),
          ),
        );
        const outcomes: string[] = [];
        for (const n of range(0, POOL + 2)) {
          outcomes.push(
            await sql.raw(`insert into ${table} values (${n})`).execute(db).then(
              () => 'stored',
              (err: unknown) => (assert.ok(isNotPrimary(err) && isTransientDbError(err), String(err)), 'read-only'),
            ),
          );
        }
        assert.deepEqual(outcomes, ['read-only', ...range(0, POOL + 1).map(() => 'stored')]);
        assert.equal(Number((await sql<{ n: number }>`select count(*) as n from ${sql.raw(table)}`.execute(db)).rows[0]!.n), POOL + 1);
      } finally {
        await db.destroy();
      }
    });
  }

  it('a connection is stale once a "not the primary" error was seen after it was first taken; other errors change nothing', () => {
    const g = new ConnectionGenerations();
    const [a, b] = [{}, {}];
    assert.equal(g.stale(a), false);
    g.sawError(Object.assign(new Error('deadlock'), { code: '40P01' }));
    assert.equal(g.stale(a), false);
    g.sawError(Object.assign(new Error('read-only'), { code: 'ER_OPTION_PREVENTS_STATEMENT' }));
    assert.equal(g.stale(a), true);
    assert.equal(g.stale(b), false, 'first seen now: current');
  });
});
