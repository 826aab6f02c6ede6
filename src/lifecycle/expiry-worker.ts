// The payment timer's loop in a worker process: every poll, expire what is due (repeating at once
// while batches come back full, so a minute with 100,000 deadlines is worked off at batch speed)
// and relay outbox rows a dead process left behind. Several workers may run it: rows are claimed
// with SKIP LOCKED.
import type { Logger } from 'pino';
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
  private closing = false;
  private wake: (() => void) | null = null;
  private readonly running: Promise<void>;

  private constructor(private readonly deps: ExpiryWorkerDeps) {
    this.running = this.loop();
  }

  static start(deps: ExpiryWorkerDeps): ExpiryWorker {
    return new ExpiryWorker(deps);
  }

  private async loop(): Promise<void> {
    const { releases, releaseRelay: relay, log, pollMs, batch, onExpired } = this.deps;
    while (!this.closing) {
      try {
        const expired = await releases.expireDue({ limit: batch });
        if (expired) onExpired?.(expired);
        if (expired === batch) continue;
        await relay.drain();
      } catch (err) {
        log.warn({ err }, 'expiry sweep failed; retrying');
      }
      await this.pause(pollMs);
    }
  }

  private pause(ms: number): Promise<void> {
    if (this.closing) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Lets the current sweep finish, then stops. Idempotent. */
  async close(): Promise<void> {
    this.closing = true;
    this.wake?.();
    await this.running;
  }
}
