// The wait between attempts at something that keeps failing: doubled after each failure, so an
// outage is not hammered, and capped, so a recovery is noticed within the cap.

export class Backoff {
  private readonly firstMs: number;
  private readonly maxMs: number;
  private wait: number;

  constructor(firstMs: number, maxMs: number) {
    this.firstMs = firstMs;
    this.maxMs = maxMs;
    this.wait = firstMs;
  }

  /** The wait before the next attempt, without lengthening it. */
  get current(): number {
    return this.wait;
  }

  /** An attempt failed: returns the wait before the next one, and doubles the one after. */
  next(): number {
    const ms = this.wait;
    this.wait = Math.min(ms * 2, this.maxMs);
    return ms;
  }

  /** An attempt succeeded: the next failure waits the first wait again. */
  reset(): void {
    this.wait = this.firstMs;
  }
}
