// The migrations on the database of this pass (MariaDB, or PostgreSQL in scripts/test.sh's last
// pass): all of them down and up again, on a database of this file's own.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Migrator, NO_MIGRATIONS } from 'kysely';
import { createDb, dropDatabase, ensureDatabase, migrateToLatest } from '../../../src/infra/db/database.js';
import { migrations } from '../../../src/infra/db/migrations/index.js';
import { DATABASE_SERVER, uniqueName } from '../../support/helpers.js';

const url = `${DATABASE_SERVER}/${uniqueName('migrations')}`;
await ensureDatabase(url);
const db = createDb(url, 1);
after(async () => {
  await db.destroy();
  await dropDatabase(url);
});

describe('migrations', () => {
  it('apply all, undo all, and apply all again', async () => {
    assert.deepEqual(await migrateToLatest(db), Object.keys(migrations));
    const { error, results } = await new Migrator({ db, provider: { getMigrations: async () => migrations } }).migrateTo(NO_MIGRATIONS);
    assert.ifError(error);
    assert.deepEqual(results?.map((r) => [r.migrationName, r.direction, r.status]), Object.keys(migrations).reverse().map((m) => [m, 'Down', 'Success']));
    assert.deepEqual(await migrateToLatest(db), Object.keys(migrations));
    await db.insertInto('vouchers').values({ id: '1', title: 't', kind: 'seckill', initial_stock: 1, stock: 1, begin_at: new Date(), end_at: new Date(), per_user_limit: 1, payment_timeout_seconds: 60, waitlist: false, claim_token: false }).execute();
    assert.equal((await db.selectFrom('vouchers').select('stock').executeTakeFirstOrThrow()).stock, 1);
  });
});
