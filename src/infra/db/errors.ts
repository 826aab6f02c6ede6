// What a database error means, for both databases: MariaDB/MySQL name their errors (mysql2's
// `code`, ER_*), PostgreSQL gives a five-character SQLSTATE, Node a socket error (ECONNREFUSED,
// ENOTFOUND, … with a `syscall`). One table per source; the names never collide.
// Transient errors are worth retrying; anything else is a property of the data and will fail again
// (the pipeline isolates those orders and, after a bounded number of deliveries, fails them). So an
// error of the environment (server gone, full, read-only after a failover, access or database
// missing) is "unreachable": retried, never a reason to fail an order. A value the database cannot
// store (out of range, too long, a character its encoding lacks) is "invalid": bad input that the
// route schemas missed, never worth a retry.
type Kind = 'unreachable' | 'conflict' | 'unique' | 'invalid';

const MYSQL_ERRORS: Record<string, Kind> = {
  PROTOCOL_CONNECTION_LOST: 'unreachable',
  PROTOCOL_SEQUENCE_TIMEOUT: 'unreachable',
  ER_CON_COUNT_ERROR: 'unreachable',
  ER_SERVER_SHUTDOWN: 'unreachable',
  ER_CONNECTION_KILLED: 'unreachable',
  ER_OPTION_PREVENTS_STATEMENT: 'unreachable', // read_only: a replica, or a failover under way
  ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION: 'unreachable',
  ER_ACCESS_DENIED_ERROR: 'unreachable',
  ER_BAD_DB_ERROR: 'unreachable',
  ER_UNKNOWN_COM_ERROR: 'unreachable', // Galera: "WSREP has not yet prepared node for application use" (a node out of the primary component)
  ER_LOCK_DEADLOCK: 'conflict',
  ER_LOCK_WAIT_TIMEOUT: 'conflict',
  ER_QUERY_INTERRUPTED: 'conflict',
  ER_DUP_ENTRY: 'unique',
  ER_WARN_DATA_OUT_OF_RANGE: 'invalid', // a number past its column's type (strict mode)
  ER_DATA_OUT_OF_RANGE: 'invalid', // arithmetic past BIGINT
  ER_DATA_TOO_LONG: 'invalid',
  ER_TRUNCATED_WRONG_VALUE: 'invalid', // a date-time past DATETIME's range
  ER_TRUNCATED_WRONG_VALUE_FOR_FIELD: 'invalid', // incorrect string value: bytes the column's character set lacks
  ER_INVALID_CHARACTER_STRING: 'invalid',
};

/** PostgreSQL: whole SQLSTATE classes (the first two characters), then single codes. */
const SQLSTATE_CLASSES: Record<string, Kind> = {
  '08': 'unreachable', // connection exception
  '53': 'unreachable', // insufficient resources (too many connections, disk full, out of memory)
  '57': 'unreachable', // operator intervention (shutdown, cannot connect now, query canceled)
  '58': 'unreachable', // system error (I/O)
};
const SQLSTATES: Record<string, Kind> = {
  '25006': 'unreachable', // read_only_sql_transaction: a standby, or a failover under way
  '28000': 'unreachable', // invalid authorization
  '28P01': 'unreachable', // invalid password
  '3D000': 'unreachable', // the database does not exist
  '40001': 'conflict', // serialization failure
  '40003': 'conflict', // statement completion unknown
  '40P01': 'conflict', // deadlock detected
  '55P03': 'conflict', // lock not available
  '23505': 'unique',
  '22001': 'invalid', // string data right truncation: too long
  '22003': 'invalid', // numeric value out of range (an id past 2^63 − 1)
  '22008': 'invalid', // datetime field overflow
  '22021': 'invalid', // character not in repertoire (NUL in text)
  '22P02': 'invalid', // invalid text representation ('1e3' as a bigint)
  '22P05': 'invalid', // untranslatable character
};

// Drivers that lost the connection say so without a code (mysql2 pools, pg clients).
const UNREACHABLE_MESSAGES =
  /Pool is closed|connect ETIMEDOUT|Connection lost|Can't add new command when connection is in closed state|Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Client was closed and is not queryable/i;

type DbError = { code?: string; syscall?: string; fatal?: boolean; message?: string };

function kindOf(err: unknown): Kind | null {
  const e = err as DbError | undefined;
  const code = e?.code ?? '';
  const named = MYSQL_ERRORS[code] ?? SQLSTATES[code] ?? (/^[0-9A-Z]{5}$/.test(code) ? SQLSTATE_CLASSES[code.slice(0, 2)] : undefined);
  if (named) return named;
  // A socket or DNS error of Node's (ECONNREFUSED, ECONNRESET, ENOTFOUND, EAI_AGAIN, …), or one
  // that mysql2 marks fatal (connection-level).
  if (typeof e?.syscall === 'string' || e?.fatal) return 'unreachable';
  return UNREACHABLE_MESSAGES.test(e?.message ?? '') ? 'unreachable' : null;
}

/** The database cannot be reached or used now (a 503 for a request; a retry for the pipeline). */
export const isDatabaseUnreachable = (err: unknown): boolean => kindOf(err) === 'unreachable';

/** The transaction lost a deadlock or a lock wait and was rolled back: nothing changed, the same request may be sent again (a 503 for a request). */
export const isLockConflict = (err: unknown): boolean => kindOf(err) === 'conflict';

/** The same statement (or unique key) was stored by someone else first. */
export const isUniqueViolation = (err: unknown): boolean => kindOf(err) === 'unique';

/** A value of the statement cannot be stored: bad input, a 400 for a request. */
export const isInvalidData = (err: unknown): boolean => kindOf(err) === 'invalid';

/**
 * The server refused a write because it is not (or no longer) the primary: read-only (a standby, a
 * demoted primary), or a Galera node outside the primary component. Its connections are of no use
 * for writing until they reach another server (demoted-server.ts).
 */
export const isNotPrimary = (err: unknown): boolean =>
  ['25006', 'ER_OPTION_PREVENTS_STATEMENT', 'ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION', 'ER_UNKNOWN_COM_ERROR'].includes((err as DbError | undefined)?.code ?? '');

/**
 * Worth retrying. A unique violation is, for the pipeline: a racing consumer stored the same order
 * first, and the retry sees it as stored.
 */
export const isTransientDbError = (err: unknown): boolean => {
  const kind = kindOf(err);
  return kind !== null && kind !== 'invalid';
};
