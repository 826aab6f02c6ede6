import type { Config } from '../config.js';
import { createDb, ensureDatabase, migrateToLatest } from '../infra/db/database.js';

/** Creates the database if missing and applies pending migrations; returns their names. */
export async function migrateDatabase(config: Config): Promise<string[]> {
  await ensureDatabase(config.databaseUrl);
  const db = createDb(config.databaseUrl, 1);
  try {
    return await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
}

/** `seckill migrate`. */
export async function migrate(config: Config): Promise<void> {
  const applied = await migrateDatabase(config);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
}
