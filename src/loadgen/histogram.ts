// Latency histograms (HDR): exact enough at every percentile, constant memory, mergeable. Values
// are recorded in microseconds, so sub-millisecond answers keep their resolution.
import * as hdr from 'hdr-histogram-js';

/** Longer answers are recorded as this (a request times out well before). */
const HIGHEST_US = 600_000_000;

export interface LatencySummary {
  count: number;
  meanMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
}

/** Percentiles drawn on the latency distribution chart (HDR's classic x axis). */
const DISTRIBUTION_PERCENTILES = [0, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 100];

export class LatencyHistogram {
  private readonly h: hdr.Histogram;

  /** `digits`: significant digits kept (3 for a whole run, 2 for the many small per-interval ones). */
  constructor(digits: 2 | 3 = 3) {
    this.h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: HIGHEST_US, numberOfSignificantValueDigits: digits, useWebAssembly: false });
  }

  recordMs(ms: number): void {
    this.h.recordValue(Math.min(HIGHEST_US, Math.max(1, Math.round(ms * 1000))));
  }

  add(other: LatencyHistogram): void {
    this.h.add(other.h);
  }

  get count(): number {
    return this.h.totalCount;
  }

  atMs(percentile: number): number {
    return this.h.totalCount ? this.h.getValueAtPercentile(percentile) / 1000 : 0;
  }

  summary(): LatencySummary {
    return {
      count: this.h.totalCount,
      meanMs: this.h.totalCount ? this.h.mean / 1000 : 0,
      p50Ms: this.atMs(50),
      p90Ms: this.atMs(90),
      p99Ms: this.atMs(99),
      p999Ms: this.atMs(99.9),
      maxMs: this.h.totalCount ? this.h.maxValue / 1000 : 0,
    };
  }

  distribution(): { percentile: number; ms: number }[] {
    return DISTRIBUTION_PERCENTILES.map((percentile) => ({ percentile, ms: this.atMs(percentile) }));
  }
}
