// Answers over time, for the rate and latency charts: fixed-width bins that double in width
// whenever there are too many, so a 2-second demo and a 10-minute run both end with at most
// MAX_BINS bins and no per-request memory.
import { LatencyHistogram } from './histogram.js';

const FIRST_BIN_MS = 100;
const MAX_BINS = 240;

interface Bin {
  answers: number;
  newOrders: number;
  failures: number;
  latency: LatencyHistogram;
}

export interface TimelinePoint {
  /** Seconds since the load started (start of the bin). */
  t: number;
  /** Answers per second in this bin. */
  rate: number;
  /** New orders per second in this bin. */
  orderRate: number;
  /** Transport failures (no HTTP answer) per second. */
  failureRate: number;
  p50Ms: number;
  p99Ms: number;
}

const emptyBin = (): Bin => ({ answers: 0, newOrders: 0, failures: 0, latency: new LatencyHistogram(2) });

export class Timeline {
  private readonly startedAt: number;
  private binMs = FIRST_BIN_MS;
  private bins: Bin[] = [];

  constructor(startedAt: number) {
    this.startedAt = startedAt;
  }

  private binAt(now: number): Bin {
    let index = Math.floor((now - this.startedAt) / this.binMs);
    while (index >= MAX_BINS) {
      this.coarsen();
      index = Math.floor((now - this.startedAt) / this.binMs);
    }
    while (this.bins.length <= index) this.bins.push(emptyBin());
    return this.bins[index]!;
  }

  /** Merges neighbouring bins pairwise: twice the width, half the bins. */
  private coarsen(): void {
    const merged: Bin[] = [];
    for (let i = 0; i < this.bins.length; i += 2) {
      const a = this.bins[i]!;
      const b = this.bins[i + 1];
      if (b) {
        a.answers += b.answers;
        a.newOrders += b.newOrders;
        a.failures += b.failures;
        a.latency.add(b.latency);
      }
      merged.push(a);
    }
    this.bins = merged;
    this.binMs *= 2;
  }

  answer(now: number, ms: number, newOrder: boolean): void {
    const bin = this.binAt(now);
    bin.answers++;
    if (newOrder) bin.newOrders++;
    bin.latency.recordMs(ms);
  }

  failure(now: number): void {
    this.binAt(now).failures++;
  }

  /** `endedAt`: when the load ended, so the last (partial) bin's rate is not understated. */
  points(endedAt: number): TimelinePoint[] {
    return this.bins.map((bin, i) => {
      const from = i * this.binMs;
      const seconds = Math.max(1, Math.min(this.binMs, endedAt - this.startedAt - from)) / 1000;
      return {
        t: from / 1000,
        rate: bin.answers / seconds,
        orderRate: bin.newOrders / seconds,
        failureRate: bin.failures / seconds,
        p50Ms: bin.latency.atMs(50),
        p99Ms: bin.latency.atMs(99),
      };
    });
  }
}
