// How evenly a sale's admissions fell over the shard streams, and, for context, how evenly V
// vouchers fall over S shards when each lands on a shard at random (a voucher's shard is a hash of
// its id: src/infra/redis/keys.ts).
import type { VoucherOrders } from './stores.js';
import { median, percentile } from '../support/stats.js';

export interface ShardSpread {
  /** Vouchers on each shard. */
  vouchers: number[];
  /** Share of the admissions on each shard (0..1). */
  shares: number[];
  maxShare: number;
  minShare: number;
  /** Infinity when a shard got none. */
  maxOverMin: number;
  /** Largest share against an even 1/S. */
  maxOverEven: number;
  /** The same per pipeline reader: reader i reads the shards s with s mod lanes = i (src/pipeline/consumer.ts). */
  laneShares: number[];
}

export function shardSpread(perVoucher: VoucherOrders[], shardOf: (id: bigint) => number, shards: number, lanes: number): ShardSpread {
  const vouchers = new Array<number>(shards).fill(0);
  const orders = new Array<number>(shards).fill(0);
  for (const v of perVoucher) {
    const s = shardOf(BigInt(v.id));
    vouchers[s]! += 1;
    orders[s]! += v.orders;
  }
  const total = orders.reduce((a, b) => a + b, 0) || 1;
  const shares = orders.map((n) => n / total);
  const maxShare = Math.max(...shares);
  const minShare = Math.min(...shares);
  const laneShares = Array.from({ length: Math.min(lanes, shards) }, (_, i) => shares.filter((_, s) => s % Math.min(lanes, shards) === i).reduce((a, b) => a + b, 0));
  return { vouchers, shares, maxShare, minShare, maxOverMin: minShare > 0 ? maxShare / minShare : Infinity, maxOverEven: maxShare * shards, laneShares };
}

export interface ExpectedSpread {
  trials: number;
  /** Vouchers on the fullest shard: mean, 5th and 95th percentile. */
  max: { mean: number; p5: number; p95: number };
  /** Vouchers on the emptiest shard. */
  min: { mean: number; p5: number; p95: number };
  medianMaxOverMin: number;
  /** Chance that some shard gets no voucher at all. */
  emptyShard: number;
}

const stats = (xs: number[]) => ({ mean: xs.reduce((a, b) => a + b, 0) / xs.length, p5: percentile(xs, 5), p95: percentile(xs, 95), median: median(xs) });

/** Monte Carlo: `vouchers` each on a uniformly random one of `shards`, `trials` times. */
export function expectedSpread(vouchers: number, shards: number, trials = 20_000): ExpectedSpread {
  const maxes: number[] = [];
  const mins: number[] = [];
  const ratios: number[] = [];
  const counts = new Array<number>(shards);
  for (let t = 0; t < trials; t++) {
    counts.fill(0);
    for (let v = 0; v < vouchers; v++) counts[Math.floor(Math.random() * shards)]! += 1;
    const max = Math.max(...counts);
    const min = Math.min(...counts);
    maxes.push(max);
    mins.push(min);
    ratios.push(min > 0 ? max / min : Infinity);
  }
  const { mean: maxMean, p5: maxP5, p95: maxP95 } = stats(maxes);
  const { mean: minMean, p5: minP5, p95: minP95 } = stats(mins);
  return {
    trials,
    max: { mean: maxMean, p5: maxP5, p95: maxP95 },
    min: { mean: minMean, p5: minP5, p95: minP95 },
    medianMaxOverMin: stats(ratios).median,
    emptyShard: mins.filter((m) => m === 0).length / trials,
  };
}
