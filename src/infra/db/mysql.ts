// MariaDB/MySQL through mysql2.
import { CompiledQuery, Kysely, MysqlDialect, type MysqlPool } from 'kysely';
import { createPool, format, type Pool, type PoolConnection, type SqlValue } from 'mysql2';
import { createConnection } from 'mysql2/promise';
import type { Connector, DatabaseTarget } from './connector.js';
import { deadlineError } from './deadline.js';
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
const timed = new WeakSet<PoolConnection>();

/**
 * The pool as kysely sees it, with the deadline (deadline.ts) on every wait: for a connection, and
 * for each statement (mysql2's own `timeout` fails the statement but keeps the connection, so the
 * connection is destroyed here).
 */
function withDeadline(pool: Pool, ms: number): MysqlPool {
  const timeStatements = (connection: PoolConnection) => {
    if (timed.has(connection)) return;
    timed.add(connection);
    const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
    (connection as unknown as { query: unknown }).query = (sql: string, values: unknown, callback?: QueryCallback) =>
      callback === undefined
        ? query({ sql, timeout: ms }, values)
        : query({ sql, timeout: ms }, values, (err: { code?: string } | null, ...rest: unknown[]) => {
            if (err?.code !== 'PROTOCOL_SEQUENCE_TIMEOUT') return callback(err, ...rest);
            connection.destroy();
            callback(deadlineError(ms, 'a statement'));
          });
  };
  return {
    getConnection(callback) {
      let late = false;
      const timer = setTimeout(() => {
        late = true;
        callback(deadlineError(ms, 'a connection'), undefined as never);
      }, ms);
      pool.getConnection((err, connection) => {
        if (late) return connection?.release();
        clearTimeout(timer);
        if (connection) timeStatements(connection);
        callback(err, connection as never);
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
        pool: statementTimeoutMs === undefined ? pool : withDeadline(pool, statementTimeoutMs),
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
