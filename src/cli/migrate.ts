import type { Config } from '../config.js';
import { createDb, ensureDatabase, migrateToLatest } from '../infra/db/database.js';

/** `seckill migrate`: creates the database if missing and applies pending migrations. */
export async function migrate(config: Config): Promise<void> {
  await ensureDatabase(config.databaseUrl);
  const db = createDb(config.databaseUrl, 1);
  try {
    const applied = await migrateToLatest(db);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
  } finally {
    await db.destroy();
  }
}
