// What a database error means, for both databases: MySQL/MariaDB name their errors (ER_*),
// PostgreSQL gives a five-character SQLSTATE; the two sets never collide, so one table holds both.
// Transient errors are worth retrying; anything else is a property of the data and will fail again
// (the pipeline isolates those orders and, after a bounded number of deliveries, fails them).

/** The server or the connection to it is gone, full, or shutting down. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
  '53300', // too_many_connections
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up)
  '08000', // connection_exception, and its kinds:
  '08001',
  '08003',
  '08004',
  '08006',
]);

/** A conflict with another transaction: retrying the same work succeeds. */
const CONFLICT_CODES = new Set([
  'ER_LOCK_DEADLOCK',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_QUERY_INTERRUPTED',
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  '57014', // query_canceled (statement timeout)
]);

const UNIQUE_VIOLATION_CODES = new Set(['ER_DUP_ENTRY', '23505']);

// Messages of drivers that lost the connection without a code (mysql2 pools, pg clients).
const UNREACHABLE_MESSAGES =
  /Pool is closed|connect ETIMEDOUT|Connection lost|Can't add new command when connection is in closed state|Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Client was closed and is not queryable/i;

type DbError = { code?: string; fatal?: boolean; message?: string };

/** The database cannot be reached now (a 503 for a request; a retry for the pipeline). */
export function isDatabaseUnreachable(err: unknown): boolean {
  const e = err as DbError;
  if (e?.code && UNREACHABLE_CODES.has(e.code)) return true;
  if (e?.fatal) return true; // mysql2 marks connection-level failures fatal
  return UNREACHABLE_MESSAGES.test(e?.message ?? '');
}

/** The same statement (or unique key) was stored by someone else first. */
export const isUniqueViolation = (err: unknown): boolean => UNIQUE_VIOLATION_CODES.has((err as DbError)?.code ?? '');

export function isTransientDbError(err: unknown): boolean {
  const code = (err as DbError)?.code ?? '';
  // A unique violation is transient for the pipeline: a racing consumer stored the same order
  // first, and the retry sees it as stored.
  return CONFLICT_CODES.has(code) || isUniqueViolation(err) || isDatabaseUnreachable(err);
}
