// Connections to a server that is no longer the primary are dropped at once. After a failover the
// proxy in front of the database (HAProxy, a managed endpoint) routes new connections to the new
// primary, but a pooled connection stays with the server it was opened to: a demoted primary
// still answers, read-only, and each kept connection would fail its next write in turn, a retry
// each, for as long as the pool keeps it. So the first "not the primary" error (errors.ts,
// isNotPrimary) starts a new generation of connections: every connection of an older one is
// destroyed when it is next taken from the pool, and the pool opens a fresh one in its place.
import { isNotPrimary } from './errors.js';

export class ConnectionGenerations {
  private current = 0;
  private readonly born = new WeakMap<object, number>();

  /** Whether `connection` was opened before the last "not the primary" error (first sight: it is current). */
  stale(connection: object): boolean {
    const born = this.born.get(connection);
    if (born === undefined) this.born.set(connection, this.current);
    return born !== undefined && born < this.current;
  }

  /** Looks at a statement's error: one saying the server is not the primary retires every connection open now. */
  sawError(err: unknown): void {
    if (isNotPrimary(err)) this.current++;
  }
}
