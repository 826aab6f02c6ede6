// PostgreSQL through pg. BIGINT (int8) comes back as a decimal string, as on MySQL; TIMESTAMPTZ
// as a Date. Sessions run in UTC, so that the hand-built timestamps (pipeline/bulk-sql.ts) mean
// UTC, and with standard_conforming_strings, which the hand-built text literals rely on
// (dialect.ts), whatever the server, database or role sets.
import { Kysely, PostgresDialect, type PostgresPool } from 'kysely';
import pg from 'pg';
import type { Connector, DatabaseTarget } from './connector.js';
import { deadlineError } from './deadline.js';
import { ConnectionGenerations } from './demoted-server.js';
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

const watched = new WeakSet<pg.PoolClient>();

/**
 * The pool as kysely sees it. With a deadline (deadline.ts) on each statement: past it the
 * client's socket is destroyed, which fails the statement and makes the pool drop the client on
 * release. (pg's own query_timeout fails the statement but leaves the client waiting for the
 * abandoned answer, unusable.) The wait for a connection is bounded by connectionTimeoutMillis.
 * And without connections to a demoted server (demoted-server.ts): a stale client is destroyed
 * when taken, and another taken in its place.
 */
function watchedPool(pool: pg.Pool, ms: number | undefined): PostgresPool {
  const generations = new ConnectionGenerations();
  const watchStatements = (client: pg.PoolClient) => {
    if (watched.has(client)) return;
    watched.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
    (client as unknown as { query: unknown }).query = (sql: unknown, values?: unknown) => {
      if (typeof sql !== 'string') return query(sql, values); // a cursor: kysely's streaming, not used here
      let missed = false;
      const timer =
        ms === undefined
          ? undefined
          : setTimeout(() => {
              missed = true;
              (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
            }, ms);
      return query(sql, values).then(
        (result) => (clearTimeout(timer), result),
        (err: unknown) => {
          clearTimeout(timer);
          generations.sawError(err);
          throw missed && ms !== undefined ? deadlineError(ms, 'a statement') : err;
        },
      );
    };
  };
  return {
    async connect() {
      for (;;) {
        const client = await pool.connect();
        watchStatements(client);
        if (!generations.stale(client)) return client as never;
        client.release(true); // destroyed: it talks to a server that is no longer the primary
      }
    },
    end: () => pool.end(),
  };
}

const quoted = (name: string) => `"${name}"`; // names are [A-Za-z0-9_] (database.ts)

export const postgresConnector: Connector = {
  defaultPort: 5432,
  defaultUser: 'postgres',
  connect(target, poolSize, { statementTimeoutMs, log }) {
    const config = clientConfig(target, target.database);
    const pool = new pg.Pool({
      ...config,
      max: poolSize,
      ...(statementTimeoutMs === undefined ? {} : { connectionTimeoutMillis: Math.min(statementTimeoutMs, CONNECT_TIMEOUT_MS) }),
    });
    // A connection the server (or the network) dropped emits 'error' on the pool when idle and on
    // the client when checked out: without listeners that would end the process. The query in
    // flight fails with the error (and is retried or answered 503); the next gets a fresh connection.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    return new Kysely<Database>({
      dialect: new PostgresDialect({ pool: watchedPool(pool, statementTimeoutMs) }),
      log,
    });
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
