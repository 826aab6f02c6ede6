// Shutdown in one place: steps run in the reverse order of their registration (what was built
// last stops first), every step runs even when an earlier one throws, and every caller of close()
// awaits the same promise (BullMQ's worker.close() works the same way).
import type { Logger } from 'pino';

const SLOW_STEP_MS = 10_000;

export class Closer {
  private readonly log: Logger;
  private readonly steps: { name: string; run: () => unknown }[] = [];
  private closing: Promise<void> | null = null;

  constructor(log: Logger) {
    this.log = log;
  }

  /** Registers a cleanup step; `name` says what failed if it throws. Added while closing: runs at once. */
  add(name: string, run: () => unknown): void {
    if (this.closing) {
      void Promise.resolve()
        .then(run)
        .catch((err: unknown) => this.log.error({ err, step: name }, 'a shutdown step failed'));
      return;
    }
    this.steps.push({ name, run });
  }

  close(): Promise<void> {
    this.closing ??= this.runAll();
    return this.closing;
  }

  private async runAll(): Promise<void> {
    const failed: Error[] = [];
    for (const { name, run } of [...this.steps].reverse()) {
      // A shutdown that hangs says where.
      const slow = setTimeout(() => this.log.warn({ step: name }, `a shutdown step is still running after ${SLOW_STEP_MS / 1000} s`), SLOW_STEP_MS);
      slow.unref();
      try {
        await run();
      } catch (err) {
        this.log.error({ err, step: name }, 'a shutdown step failed; continuing with the others');
        failed.push(new Error(`${name}: ${(err as Error).message}`, { cause: err }));
      } finally {
        clearTimeout(slow);
      }
    }
    if (failed.length) throw new AggregateError(failed, `shutdown: ${failed.map((e) => e.message).join('; ')}`);
  }
}
