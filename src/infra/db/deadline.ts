// DB_STATEMENT_TIMEOUT_MS: the longest a caller waits for the database, whether for a connection
// from the pool or for one statement's answer. A database that stops answering without closing its
// sockets (a network partition, a hung server) would otherwise hold every request and every pooled
// connection for as long as TCP keeps the socket open: minutes. Past the deadline the connection
// is destroyed, not returned to the pool, since its protocol state is unknown (an answer may still
// arrive for the abandoned statement); the next caller gets a fresh one. Each connector applies it
// with its driver's means (mysql.ts, postgres.ts).

/** The error of a missed deadline: a socket-level timeout, so it is classified unreachable (errors.ts, app.ts: 503). */
export function deadlineError(ms: number, waitingFor: 'a statement' | 'a connection'): Error {
  return Object.assign(new Error(`the database did not answer ${waitingFor} within ${ms} ms (DB_STATEMENT_TIMEOUT_MS)`), {
    code: 'ETIMEDOUT',
    syscall: 'query',
  });
}
