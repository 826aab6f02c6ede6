// The per-user lock of limited claims: a redis-semaphore Mutex that its watchdog renews while the
// claim runs, so a slow claim keeps it and a dead process lets it go after one lifetime.
import type { RedisClient } from '../infra/redis/client.js';
import { RefreshSafeMutex } from '../infra/redis/mutex.js';
import { AppError } from '../errors.js';

/**
 * Runs `work` holding the lock on `key`. A second claim for the same key is turned away at once
 * (the seed's tryLock), not queued. `work` receives `lockLost()`: true once the lock may belong to
 * someone else (expired, taken over, or Redis unreachable at a renewal).
 */
export async function withClaimLock<T>(redis: RedisClient, key: string, ttlMs: number, work: (lockLost: () => boolean) => Promise<T>): Promise<T> {
  let lost = false;
  const markLost = () => {
    lost = true;
  };
  const mutex = new RefreshSafeMutex(redis, key, {
    lockTimeout: ttlMs,
    // Renewed every third of its life (like worker leases), not the default 0.8: one late timer
    // tick on a busy event loop must not let it expire.
    refreshInterval: Math.round(ttlMs / 3),
    acquireAttemptsLimit: 1,
    // The default throws from a timer; the claim checks the flag instead.
    onLockLost: markLost,
  });
  // redis-semaphore 5.8 renews from a timer without catching: a renewal that cannot reach Redis
  // would be an unhandled rejection and end the process. We cannot tell whether we still hold the
  // lock then, so it counts as lost. (Read by tryAcquire when it starts the watchdog.)
  const watchdog = mutex as unknown as { _processRefresh: () => Promise<void> };
  const renew = watchdog._processRefresh;
  watchdog._processRefresh = () => renew().catch(markLost);

  if (!(await mutex.tryAcquire())) {
    throw new AppError('CLAIM_IN_PROGRESS', 'another claim of yours on this voucher is in progress; retry shortly');
  }
  try {
    return await work(() => lost);
  } finally {
    // If Redis does not answer, the lock expires by itself; a committed claim must not become an error.
    await mutex.release().catch(() => undefined);
  }
}
