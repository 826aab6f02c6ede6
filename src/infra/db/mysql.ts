// MariaDB/MySQL through mysql2.
import { CompiledQuery, Kysely, MysqlDialect } from 'kysely';
import { createPool, format, type SqlValue } from 'mysql2';
import { createConnection } from 'mysql2/promise';
import type { Connector, DatabaseTarget } from './connector.js';
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

export const mysqlConnector: Connector = {
  defaultPort: 3306,
  defaultUser: 'root',
  connect(target, poolSize, log) {
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
        pool,
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
