// The database from DATABASE_URL: mysql:// (or mariadb://) is MariaDB/MySQL, postgres:// (or
// postgresql://) is PostgreSQL. Each connector (connector.ts; mysql.ts, postgres.ts) makes the pool
// and creates or drops the database; what the SQL itself spells differently is in dialect.ts.
import { Kysely, Migrator } from 'kysely';
import type { Connector, DatabaseTarget, PoolOptions } from './connector.js';
import type { Database } from './types.js';
import { migrations } from './migrations/index.js';
import { mysqlConnector } from './mysql.js';
import { postgresConnector } from './postgres.js';

export type Db = Kysely<Database>;

const CONNECTORS: Record<string, Connector> = {
  'mysql:': mysqlConnector,
  'mariadb:': mysqlConnector,
  'postgres:': postgresConnector,
  'postgresql:': postgresConnector,
};

function parseDatabaseUrl(url: string): { connector: Connector; target: DatabaseTarget } {
  const u = new URL(url);
  const connector = CONNECTORS[u.protocol];
  if (!connector) throw new Error(`DATABASE_URL must start with ${Object.keys(CONNECTORS).map((s) => `${s}//`).join(', ')}; got ${u.protocol}//`);
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]{1,63}$/.test(database)) throw new Error(`DATABASE_URL must name a database ([A-Za-z0-9_], at most 63), got "${database}"`);
  return {
    connector,
    target: {
      host: u.hostname,
      port: Number(u.port || connector.defaultPort),
      user: decodeURIComponent(u.username || connector.defaultUser),
      password: decodeURIComponent(u.password),
      database,
    },
  };
}

export function createDb(url: string, poolSize = 10, options: PoolOptions = {}): Db {
  const { connector, target } = parseDatabaseUrl(url);
  return connector.connect(target, poolSize, options);
}

/** Creates the database named in the URL when it does not exist. */
export async function ensureDatabase(url: string): Promise<void> {
  const { connector, target } = parseDatabaseUrl(url);
  await connector.ensureDatabase(target);
}

/** Drops the database named in the URL (tests and benchmarks). */
export async function dropDatabase(url: string): Promise<void> {
  const { connector, target } = parseDatabaseUrl(url);
  await connector.dropDatabase(target);
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Creates the database if missing and applies pending migrations on a connection of their own,
 * without DB_STATEMENT_TIMEOUT_MS (a migration over a large table may take minutes); returns the
 * names applied.
 */
export async function migrateDatabase(url: string): Promise<string[]> {
  await ensureDatabase(url);
  const db = createDb(url, 1);
  try {
    return await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
}
