// A value the database cannot store, as the database of this pass says it (MariaDB, or PostgreSQL
// in scripts/test.sh's last pass): classified as invalid data (a 400 for a request, where the
// route schemas missed it), never as worth a retry or as the database being away.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { dialectOf } from '../../../src/infra/db/dialect.js';
import { isDatabaseUnreachable, isInvalidData, isTransientDbError, isUniqueViolation } from '../../../src/infra/db/errors.js';
import { startTestApp } from '../../support/helpers.js';

const t = await startTestApp('db_data_errors');
const db = t.c.db;

const rejection = async (work: Promise<unknown>) => {
  try {
    await work;
  } catch (err) {
    return err;
  }
  throw new Error('expected the statement to fail');
};

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
