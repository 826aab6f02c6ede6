// What each database driver (mysql.ts, postgres.ts) provides; database.ts picks one by the URL's
// scheme. Kept apart from database.ts so that the connectors need nothing from what composes them.
import type { Kysely, LogConfig } from 'kysely';
import type { Database } from './types.js';

/** The parts of a DATABASE_URL a connector needs. */
export interface DatabaseTarget {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

export interface PoolOptions {
  /** Longest wait for a connection or a statement, in ms (deadline.ts); none when absent (migrations). */
  statementTimeoutMs?: number;
  log?: LogConfig;
}

export interface Connector {
  readonly defaultPort: number;
  readonly defaultUser: string;
  /** A kysely instance on a pool of `poolSize` connections, sessions in UTC. */
  connect(target: DatabaseTarget, poolSize: number, options: PoolOptions): Kysely<Database>;
  /** Creates the database when it does not exist (several processes may race to). */
  ensureDatabase(target: DatabaseTarget): Promise<void>;
  dropDatabase(target: DatabaseTarget): Promise<void>;
}
