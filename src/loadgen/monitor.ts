// Watches the voucher while the load runs and after it: units still available (what buyers see)
// and orders in flight (admitted, not stored yet), from the admin stats route. It also measures
// the drain lag: the time from the last order handed out until a poll that began after it saw
// nothing in flight, i.e. until the database held every admitted order. While orders are in
// flight it polls fast, so the lag is measured to a few tens of milliseconds even when the sale
// sells out long before the load ends.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Deployment } from './deployment.js';

export interface MonitorSample {
  /** Seconds since the load started. */
  t: number;
  available: number;
  inFlight: number;
  /** Orders in the database (every status). */
  stored: number;
}

const IDLE_POLL_MS = 250;
const BUSY_POLL_MS = 25;
/** Poll fast for this long after an order was handed out (it may not be in flight yet). */
const BUSY_AFTER_ORDER_MS = 1000;

export class VoucherMonitor {
  private readonly deployment: Deployment;
  private readonly voucherId: string;
  private readonly startedAt: number;
  private readonly lastOrderAt: () => number | null;
  readonly samples: MonitorSample[] = [];
  private stopped = false;
  private loop: Promise<void> | null = null;
  /** The first poll that found everything stored, for the order handed out last at `orderAt`. */
  private drained: { orderAt: number; at: number } | null = null;
  /** The last poll failed (the deployment is struggling or gone); shown on the progress line. */
  failing: Error | null = null;

  /** `lastOrderAt`: performance.now() of the last order handed out so far (null: none yet). */
  constructor(deployment: Deployment, voucherId: string, startedAt: number, lastOrderAt: () => number | null) {
    this.deployment = deployment;
    this.voucherId = voucherId;
    this.startedAt = startedAt;
    this.lastOrderAt = lastOrderAt;
  }

  get latest(): MonitorSample | undefined {
    return this.samples.at(-1);
  }

  private async poll(): Promise<MonitorSample> {
    const began = performance.now();
    const [voucher, stats] = await Promise.all([this.deployment.voucher(this.voucherId), this.deployment.stats(this.voucherId)]);
    const at = performance.now();
    const stored = Object.values(stats.orders).reduce((a, b) => a + b, 0);
    const sample = { t: (at - this.startedAt) / 1000, available: voucher.available, inFlight: stats.inFlight, stored };
    this.samples.push(sample);
    const last = this.lastOrderAt();
    if (last !== null && sample.inFlight === 0 && began >= last && this.drained?.orderAt !== last) this.drained = { orderAt: last, at };
    return sample;
  }

  private busy(sample: MonitorSample | undefined): boolean {
    const last = this.lastOrderAt();
    return (sample?.inFlight ?? 0) > 0 || (last !== null && performance.now() - last < BUSY_AFTER_ORDER_MS);
  }

  /** Polls in the background until stop(); a failed poll is retried at the next tick. */
  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        let sample: MonitorSample | undefined;
        try {
          sample = await this.poll();
          this.failing = null;
        } catch (err) {
          this.failing = err as Error;
        }
        await sleep(this.busy(sample) ? BUSY_POLL_MS : IDLE_POLL_MS);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  /** The drain lag in ms (0 with no orders), polling until drained; null if `timeoutMs` passed first. */
  async drainLag(timeoutMs: number): Promise<number | null> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const last = this.lastOrderAt();
      if (last === null) return 0;
      if (this.drained?.orderAt === last) return this.drained.at - last;
      if (performance.now() > deadline) return null;
      await this.poll();
      await sleep(BUSY_POLL_MS);
    }
  }
}
