// ioredis can reject a promise that no caller holds when a command meets a connection that is not
// writable (redis/ioredis#1511: an auto-pipelined script with the offline queue off). The caller's
// own promise is rejected too and answered 503, so the stray one carries no news; but Node ends
// the process on any unhandled rejection, and a paused Sentinel master being replaced killed an API
// process this way. Auto-pipelining on a cluster leaves one more kind while slots move after a
// failover: the batch's own MOVED reply (redis/ioredis#2075; each command's caller is told too).
// Those rejections, and only those, are logged instead; any other unhandled rejection still ends
// the process, as it should.
import type { Logger } from 'pino';

const CONNECTION_STATE = /Stream isn't writeable|Connection is closed|Command timed out|^MOVED \d+ /;
const LOG_EVERY_MS = 1_000;

/** An ioredis rejection about the connection's state or a slot in motion: nothing for the process to act on. */
export function isStrayRedisRejection(reason: unknown): boolean {
  return reason instanceof Error && CONNECTION_STATE.test(reason.message) && /node_modules[\\/]ioredis[\\/]/.test(reason.stack ?? '');
}

let installed = false;

/** Installs the process's handler once (every Redis client of the process shares it). */
export function absorbStrayRedisRejections(log: Logger): void {
  if (installed) return;
  installed = true;
  let lastLogged = 0;
  let absorbed = 0;
  process.on('unhandledRejection', (reason) => {
    if (!isStrayRedisRejection(reason)) throw reason;
    absorbed++;
    if (Date.now() - lastLogged < LOG_EVERY_MS) return;
    lastLogged = Date.now();
    log.warn({ err: reason, absorbed }, 'a Redis command was rejected with no caller left to tell (connection not usable); ignored');
  });
}
