// A background loop over a round of work: after a round it waits the interval, or not at all when
// the round left more work waiting, or less when woken ("rows were committed, look now"). A failed
// round is logged once per outage and waits the interval, or a back-off that a wake does not cut
// short (every commit would otherwise retry a store that is down).
import type { Logger } from 'pino';
import type { Backoff } from './retry-backoff.js';

export interface PollLoopOptions {
  /** What the loop does, in its log lines: "order-event relay". */
  name: string;
  log: Logger;
  intervalMs: number;
  /** One round; resolves true when it left more work waiting, so the next one starts at once. */
  round(): Promise<boolean>;
  /** The waits after failed rounds; without one, a failed round waits the interval. */
  backoff?: Backoff;
  onFailed?(err: unknown): void;
}

export class PollLoop {
  private readonly options: PollLoopOptions;
  private closing = false;
  /** Woken since the current round began: the wait after it is skipped. */
  private woken = false;
  /** Ends the wait in progress, if it may end early. */
  private interrupt: (() => void) | null = null;
  private readonly running: Promise<void>;

  private constructor(options: PollLoopOptions) {
    this.options = options;
    this.running = this.loop();
  }

  static start(options: PollLoopOptions): PollLoop {
    return new PollLoop(options);
  }

  /** Runs the next round now instead of after the interval (a back-off still runs out). */
  wake(): void {
    this.woken = true;
    this.interrupt?.();
  }

  /** Lets the round in flight finish (or fail), then stops. Idempotent. */
  async close(): Promise<void> {
    this.closing = true;
    this.interrupt?.();
    await this.running;
  }

  private async loop(): Promise<void> {
    const { name, log, intervalMs, round, backoff, onFailed } = this.options;
    let failing = false;
    while (!this.closing) {
      this.woken = false;
      try {
        const more = await round();
        if (failing) log.info(`${name}: working again`);
        failing = false;
        backoff?.reset();
        if (!more) await this.wait(intervalMs, true);
      } catch (err) {
        onFailed?.(err);
        if (!failing) log.warn({ err }, `${name} failed; retrying`);
        failing = true;
        await (backoff ? this.wait(backoff.next(), false) : this.wait(intervalMs, true));
      }
    }
  }

  /** Waits `ms`; closing ends the wait, and so does a wake when `wakeable`. */
  private wait(ms: number, wakeable: boolean): Promise<void> {
    if (this.closing || (wakeable && this.woken)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.interrupt = () => {
        if (wakeable || this.closing) done();
      };
    }).finally(() => {
      this.interrupt = null;
    });
  }
}
