import { CompiledQuery, Kysely, Migrator, MysqlDialect } from 'kysely';
import { createPool, format, type SqlValue } from 'mysql2';
import { createConnection as createPromiseConnection } from 'mysql2/promise';
import type { Database } from './types.js';
import { migrations } from './migrations/index.js';

export type Db = Kysely<Database>;

interface ParsedUrl {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

function parseDatabaseUrl(url: string): ParsedUrl {
  const u = new URL(url);
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]{1,64}$/.test(database)) throw new Error(`DATABASE_URL must name a database ([A-Za-z0-9_]), got "${database}"`);
  return {
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password),
    database,
  };
}

const common = {
  // 64-bit ids stay exact: BIGINT comes back as a decimal string.
  supportBigNumbers: true,
  bigNumberStrings: true,
  timezone: 'Z',
  dateStrings: false,
} as const;

export function createDb(url: string, poolSize = 10): Db {
  const p = parseDatabaseUrl(url);
  const pool = createPool({
    ...common,
    ...p,
    connectionLimit: poolSize,
    enableKeepAlive: true,
    // mysql2's own formatting, except that a statement without parameters is sent as it is: the
    // default scans it for placeholders anyway, which costs the order pipeline's ~60 kB bulk
    // statements (pipeline/bulk-sql.ts) more than building them.
    queryFormat: (sql: string, values?: SqlValue | SqlValue[]) =>
      values === undefined || (Array.isArray(values) && values.length === 0) ? sql : format(sql, values, false, common.timezone),
  });
  return new Kysely<Database>({
    dialect: new MysqlDialect({
      pool,
      // Dates are written and read as UTC (timezone 'Z'); NOW() must agree whatever the server's zone.
      onCreateConnection: async (connection) => {
        await connection.executeQuery(CompiledQuery.raw("SET time_zone = '+00:00'"));
      },
    }),
  });
}

/** Creates the database named in the URL when it does not exist. */
export async function ensureDatabase(url: string): Promise<void> {
  const { database, ...server } = parseDatabaseUrl(url);
  const conn = await createPromiseConnection({ ...server });
  try {
    await conn.query(`CREATE DATABASE IF NOT EXISTS \`${database}\` CHARACTER SET utf8mb4`);
  } finally {
    await conn.end();
  }
}

/** Drops the database named in the URL (tests only). */
export async function dropDatabase(url: string): Promise<void> {
  const { database, ...server } = parseDatabaseUrl(url);
  const conn = await createPromiseConnection({ ...server });
  try {
    await conn.query(`DROP DATABASE IF EXISTS \`${database}\``);
  } finally {
    await conn.end();
  }
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
