// Which database errors are worth retrying. Anything else is a property of the data and will fail
// again: those orders are isolated and, after a bounded number of deliveries, failed.
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_LOCK_DEADLOCK',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_SERVER_SHUTDOWN',
  'ER_QUERY_INTERRUPTED',
  'ER_CONNECTION_KILLED',
  'ER_DUP_ENTRY', // a racing consumer stored the same order first: the retry sees it as stored
]);

export function isTransientDbError(err: unknown): boolean {
  const e = err as { code?: string; fatal?: boolean; message?: string };
  if (e?.code && TRANSIENT_CODES.has(e.code)) return true;
  if (e?.fatal) return true; // mysql2 marks connection-level failures fatal
  return /Pool is closed|connect ETIMEDOUT|Connection lost|Can't add new command when connection is in closed state/i.test(e?.message ?? '');
}
