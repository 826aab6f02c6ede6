// MariaDB/MySQL through mysql2.
import { CompiledQuery, Kysely, MysqlDialect, type MysqlPool } from 'kysely';
import { createPool, format, type Pool, type PoolConnection, type SqlValue } from 'mysql2';
import { createConnection } from 'mysql2/promise';
import type { Connector, DatabaseTarget } from './connector.js';
import { deadlineError } from './deadline.js';
import { ConnectionGenerations } from './demoted-server.js';
import type { Database } from './types.js';

const common = {
  // 64-bit ids stay exact: BIGINT comes back as a decimal string.
  supportBigNumbers: true,
  bigNumberStrings: true,
  timezone: 'Z',
  dateStrings: false,
} as const;

async function onServer(target: DatabaseTarget, statement: string): Promise<void> {
  const { database: _, ...server } = target;
  const conn = await createConnection(server);
  try {
    await conn.query(statement);
  } finally {
    await conn.end();
  }
}

type QueryCallback = (err: unknown, ...rest: unknown[]) => void;
const watched = new WeakSet<PoolConnection>();

/**
 * The pool as kysely sees it. With a deadline (deadline.ts) on every wait: for a connection, and
 * for each statement (mysql2's own `timeout` fails the statement but keeps the connection, so the
 * connection is destroyed here). And without connections to a demoted server (demoted-server.ts):
 * a stale connection is destroyed when taken, and another taken in its place.
 */
function watchedPool(pool: Pool, ms: number | undefined): MysqlPool {
  const generations = new ConnectionGenerations();
  const watchStatements = (connection: PoolConnection) => {
    if (watched.has(connection)) return;
    watched.add(connection);
    const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
    const options = (sql: string) => (ms === undefined ? { sql } : { sql, timeout: ms });
    (connection as unknown as { query: unknown }).query = (sql: string, values: unknown, callback?: QueryCallback) =>
      callback === undefined
        ? query(options(sql), values)
        : query(options(sql), values, (err: { code?: string } | null, ...rest: unknown[]) => {
            generations.sawError(err);
            if (err?.code !== 'PROTOCOL_SEQUENCE_TIMEOUT' || ms === undefined) return callback(err, ...rest);
            connection.destroy();
            callback(deadlineError(ms, 'a statement'));
          });
  };
  const take = (callback: (err: unknown, connection?: PoolConnection) => void) =>
    pool.getConnection((err, connection) => {
      if (!connection || !generations.stale(connection)) return callback(err, connection);
      connection.destroy(); // it talks to a server that is no longer the primary
      take(callback);
    });
  return {
    getConnection(callback) {
      let late = false;
      const timer =
        ms === undefined
          ? undefined
          : setTimeout(() => {
              late = true;
              callback(deadlineError(ms, 'a connection'), undefined as never);
            }, ms);
      take((err, connection) => {
        if (late) return connection?.release();
        clearTimeout(timer);
        if (connection) watchStatements(connection);
        callback(err as never, connection as never);
      });
    },
    end: (callback) => pool.end(callback),
  };
}

export const mysqlConnector: Connector = {
  defaultPort: 3306,
  defaultUser: 'root',
  connect(target, poolSize, { statementTimeoutMs, log }) {
    const pool = createPool({
      ...common,
      ...target,
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
        pool: watchedPool(pool, statementTimeoutMs),
        onCreateConnection: async (connection) => {
          // Dates are written and read as UTC (timezone 'Z'); NOW() must agree whatever the server's zone.
          await connection.executeQuery(CompiledQuery.raw("SET time_zone = '+00:00'"));
          // MariaDB turns an IN list of 1,000 values or more into a join with a temporary table,
          // which may scan the table: a locking read or a DELETE by such a list then locks (and
          // waits for) rows outside it, and two workers locking their own rows wait for each other
          // (test/infra/db/long-in-lists.test.ts). MySQL has no such conversion and no such variable.
          await connection.executeQuery(CompiledQuery.raw('SET SESSION in_predicate_conversion_threshold = 0')).catch(() => undefined);
        },
      }),
      log,
    });
  },
  ensureDatabase: (target) => onServer(target, `CREATE DATABASE IF NOT EXISTS \`${target.database}\` CHARACTER SET utf8mb4`),
  dropDatabase: (target) => onServer(target, `DROP DATABASE IF EXISTS \`${target.database}\``),
};
