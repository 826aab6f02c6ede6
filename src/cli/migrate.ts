import type { Config } from '../config.js';
import { migrateDatabase as migrateDatabaseAt } from '../infra/db/database.js';

/** Creates the database if missing and applies pending migrations; returns their names. */
export const migrateDatabase = (config: Config): Promise<string[]> => migrateDatabaseAt(config.databaseUrl);

/** `seckill migrate`. */
export async function migrate(config: Config): Promise<void> {
  const applied = await migrateDatabase(config);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
}
