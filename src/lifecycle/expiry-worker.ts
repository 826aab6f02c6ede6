// The payment timer's loop in a worker process: every poll, expire what is due (repeating at once
// while batches come back full, so a minute with 100,000 deadlines is worked off at batch speed)
// and relay outbox rows a dead process left behind. Several workers may run it: rows are claimed
// with SKIP LOCKED.
import type { Logger } from 'pino';
import { PollLoop } from '../poll-loop.js';
import type { ReleaseRelay } from './release-relay.js';
import type { Releases } from './releases.js';

export interface ExpiryWorkerDeps {
  releases: Releases;
  releaseRelay: ReleaseRelay;
  log: Logger;
  pollMs: number;
  batch: number;
  onExpired?(count: number): void;
}

export class ExpiryWorker {
  private readonly loop: PollLoop;

  private constructor({ releases, releaseRelay, log, pollMs, batch, onExpired }: ExpiryWorkerDeps) {
    this.loop = PollLoop.start({
      name: 'expiry sweep',
      log,
      intervalMs: pollMs,
      round: async () => {
        const expired = await releases.expireDue({ limit: batch });
        if (expired) onExpired?.(expired);
        if (expired === batch) return true;
        await releaseRelay.drain();
        return false;
      },
    });
  }

  static start(deps: ExpiryWorkerDeps): ExpiryWorker {
    return new ExpiryWorker(deps);
  }

  /** Lets the current sweep finish, then stops. Idempotent. */
  close(): Promise<void> {
    return this.loop.close();
  }
}
