// PostgreSQL through pg. BIGINT (int8) comes back as a decimal string, as on MySQL; TIMESTAMPTZ
// as a Date. Sessions run in UTC, so that the hand-built timestamps (pipeline/bulk-sql.ts) mean
// UTC, and with standard_conforming_strings, which the hand-built text literals rely on
// (dialect.ts), whatever the server, database or role sets.
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Connector, DatabaseTarget } from './connector.js';
import type { Database } from './types.js';

const CONNECT_TIMEOUT_MS = 10_000;
/** Codes of CREATE DATABASE losing a race with another process: duplicate_database, unique_violation. */
const ALREADY_CREATED = new Set(['42P04', '23505']);

const clientConfig = (target: DatabaseTarget, database: string): pg.ClientConfig => ({
  ...target,
  database,
  connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  keepAlive: true,
  options: '-c TimeZone=UTC -c standard_conforming_strings=on',
});

/** Runs `statement` connected to the server's maintenance database `postgres`. */
async function onServer(target: DatabaseTarget, statement: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client(clientConfig(target, 'postgres'));
  await client.connect();
  try {
    return await client.query(statement, values);
  } finally {
    await client.end();
  }
}

const quoted = (name: string) => `"${name}"`; // names are [A-Za-z0-9_] (database.ts)

export const postgresConnector: Connector = {
  defaultPort: 5432,
  defaultUser: 'postgres',
  connect(target, poolSize, log) {
    const pool = new pg.Pool({ ...clientConfig(target, target.database), max: poolSize });
    // A connection the server (or the network) dropped emits 'error' on the pool when idle and on
    // the client when checked out: without listeners that would end the process. The query in
    // flight fails with the error (and is retried or answered 503); the next gets a fresh connection.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    return new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log });
  },
  async ensureDatabase(target) {
    const found = await onServer(target, 'select 1 from pg_database where datname = $1', [target.database]);
    if (found.rowCount) return;
    await onServer(target, `create database ${quoted(target.database)}`).catch((err: { code?: string }) => {
      if (!ALREADY_CREATED.has(err.code ?? '')) throw err;
    });
  },
  // WITH (FORCE): a test's leftover connections must not keep its database alive.
  dropDatabase: async (target) => void (await onServer(target, `drop database if exists ${quoted(target.database)} with (force)`)),
};
