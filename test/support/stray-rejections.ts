// node:test fails the running test on any unhandled rejection. A server process logs the stray
// ones ioredis leaves while a master dies or slots move (src/infra/redis/stray-rejections.ts) and
// lives on; a test that kills masters holds its in-process clients to that same rule, and to no
// looser one: every other unhandled rejection still fails the test.
import { isStrayRedisRejection } from '../../src/infra/redis/stray-rejections.js';

/** Call in a describe body or a hook, where the runner's own listener is in place. */
export function tolerateStrayRedisRejections(): void {
  for (const listener of process.listeners('unhandledRejection')) {
    process.off('unhandledRejection', listener);
    process.on('unhandledRejection', (reason, promise) => {
      if (!isStrayRedisRejection(reason)) listener(reason, promise);
    });
  }
}
