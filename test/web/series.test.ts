// The console's chart series (src/web/assets/lib/series.js, a browser module that runs in node as
// it is): a sale of many hours fits in a fixed number of points, and folding old seconds into
// 10-second and minute buckets keeps the sums of counts and the means of rates.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

type Values = Record<string, number | null | undefined>;
interface Series {
  push(t: number, values: Values): void;
  readonly length: number;
  total(name: string): number;
  data(): { t: number[]; [field: string]: (number | null)[] };
}
interface SeriesModule {
  TIERS: { step: number; size: number }[];
  createSeries(fields: Record<string, 'mean' | 'sum'>, tiers?: { step: number; size: number }[]): Series;
}
const { createSeries, TIERS }: SeriesModule = await import(new URL('../../src/web/assets/lib/series.js', import.meta.url).href);

const T0 = 1_699_999_980; // a whole minute, so buckets start at T0 + k·step
const BOUND = TIERS.reduce((n, tier) => n + tier.size, 0);
/** The reading of second s: admissions are a count, the stock a level, the lag a rate. */
const reading = (s: number) => ({ admissions: (s * 7) % 5, stock: 100_000 - s, lag: (s % 13) / 10 });
const fields = { admissions: 'sum', stock: 'mean', lag: 'mean' } as const;
const mean = (from: number, count: number, pick: (s: number) => number) => Array.from({ length: count }, (_, k) => pick(from + k)).reduce((a, b) => a + b, 0) / count;

describe('the console chart series', () => {
  it('holds at most 600 + 360 + 720 points over a whole day of one reading a second', () => {
    assert.equal(BOUND, 1680);
    const series = createSeries(fields);
    let most = 0;
    for (let s = 0; s < 86_400; s++) {
      series.push(T0 + s, reading(s));
      most = Math.max(most, series.length);
    }
    assert.equal(most, BOUND);
    assert.equal(series.length, BOUND);
    const { t } = series.data();
    assert.equal(t.length, BOUND);
    for (let k = 1; k < t.length; k++) assert.ok(t[k]! > t[k - 1]!, `times ascend at ${k}`);
    // The newest 10 minutes are seconds; the oldest points are minutes (the 12 hours before the last 1h10m).
    assert.equal(t.at(-1), T0 + 86_399);
    assert.equal(t.at(-600), T0 + 86_400 - 600);
    assert.equal(t.at(-601), T0 + 86_400 - 610);
    assert.equal(t[0], T0 + 86_400 - 600 - 3_600 - 720 * 60);
  });

  it('keeps the sum of the counts and the means of the buckets when it folds seconds into 10 s and minutes', () => {
    const series = createSeries(fields);
    let admitted = 0;
    for (let s = 0; s < 7_200; s++) {
      series.push(T0 + s, reading(s));
      admitted += reading(s).admissions;
    }
    // 2 hours: the last 600 s as seconds, the hour before as 10 s buckets, the rest as 50 minutes.
    assert.equal(series.length, 600 + 360 + 50);
    assert.equal(series.total('admissions'), admitted);
    const data = series.data();
    const at = (t: number) => data.t.indexOf(t);
    const steps = data.t.map((t, k) => (k + 1 < data.t.length ? data.t[k + 1]! - t : 1));
    // A count is shown per second: times its bucket's width, it adds up to every admission.
    assert.equal(Math.round(data.admissions!.reduce<number>((n, v, k) => n + v! * steps[k]!, 0)), admitted);
    // A minute bucket, a 10-second bucket and a second: each the mean of its readings.
    for (const [from, width] of [[120, 60], [5_000, 10], [7_000, 1]] as const) {
      const k = at(T0 + from);
      assert.ok(k >= 0, `a bucket at T0+${from}`);
      assert.equal(data.stock![k], mean(from, width, (s) => reading(s).stock));
      assert.ok(Math.abs(data.lag![k]! - mean(from, width, (s) => reading(s).lag)) < 1e-9);
      assert.ok(Math.abs(data.admissions![k]! - mean(from, width, (s) => reading(s).admissions)) < 1e-9);
    }
  });

  it('leaves a missing reading a gap, not a zero, and keeps times ascending when the clock steps back', () => {
    const series = createSeries({ stock: 'mean' }, [{ step: 1, size: 3 }, { step: 10, size: 2 }]);
    series.push(T0, { stock: 10 });
    series.push(T0 + 1, { stock: null });
    series.push(T0 + 2, {});
    series.push(T0 + 1.5, { stock: 6 }); // back in time: joins the newest bucket
    assert.deepEqual(series.data(), { t: [T0, T0 + 1, T0 + 2], stock: [10, null, 6] });
    for (let s = 3; s < 40; s++) series.push(T0 + s, { stock: 1 });
    // Tiers of 3 + 2 points: the oldest 10-second buckets are dropped, the rest is bounded.
    assert.equal(series.length, 5);
    assert.deepEqual(series.data().t, [T0 + 20, T0 + 30, T0 + 37, T0 + 38, T0 + 39]);
  });
});
