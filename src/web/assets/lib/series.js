// Time series in fixed memory, so a console left open for a whole sale does not grow: the last
// 10 minutes second by second, the hour before in 10-second buckets, the 12 hours before in
// minutes (600 + 360 + 720 points); older is dropped. A bucket leaving a tier is folded into the
// next tier's bucket as a sum and a count per field, so sums and means survive the folding.

/** Each tier: bucket width (seconds) and how many buckets it keeps, newest tier first. */
export const TIERS = [
  { step: 1, size: 600 },
  { step: 10, size: 360 },
  { step: 60, size: 720 },
];

/**
 * @param {Record<string, 'mean' | 'sum'>} fields  'mean': a rate or a level, shown as its bucket's
 *   mean; 'sum': a count, shown per second (its bucket's sum over the bucket's width)
 * @param {{step: number, size: number}[]} [tiers]
 */
export function createSeries(fields, tiers = TIERS) {
  const names = Object.keys(fields);
  const rings = tiers.map(({ step, size }) => ({
    step,
    size,
    start: 0,
    length: 0,
    t: new Float64Array(size),
    sum: names.map(() => new Float64Array(size)),
    n: names.map(() => new Uint32Array(size)),
  }));

  /**
   * Adds per-field sums and counts into the bucket of time `t` (seconds) of tier `level`.
   * @param {number} level @param {number} t @param {number[]} sums @param {number[]} counts
   */
  function add(level, t, sums, counts) {
    const r = rings[level];
    const key = Math.floor(t / r.step) * r.step;
    let i = (r.start + r.length - 1) % r.size;
    // A time at or before the newest bucket (the clock stepped back) joins it: times stay ascending.
    if (r.length === 0 || key > r.t[i]) {
      if (r.length === r.size) {
        const old = r.start;
        if (level + 1 < rings.length) add(level + 1, r.t[old], r.sum.map((a) => a[old]), r.n.map((a) => a[old]));
        r.start = (old + 1) % r.size;
        r.length--;
      }
      i = (r.start + r.length) % r.size;
      r.length++;
      r.t[i] = key;
      r.sum.forEach((a) => (a[i] = 0));
      r.n.forEach((a) => (a[i] = 0));
    }
    r.sum.forEach((a, f) => (a[i] += sums[f]));
    r.n.forEach((a, f) => (a[i] += counts[f]));
  }

  /** Every bucket, oldest first, as [tier, slot]. */
  function* buckets() {
    for (const r of [...rings].reverse()) {
      for (let k = 0; k < r.length; k++) yield /** @type {const} */ ([r, (r.start + k) % r.size]);
    }
  }

  return {
    /** One reading at `t` (seconds); a field missing or null is a gap, not a zero. @param {number} t @param {Record<string, number | null | undefined>} values */
    push(t, values) {
      const known = names.map((name) => Number.isFinite(values[name]));
      add(0, t, names.map((name, f) => (known[f] ? Number(values[name]) : 0)), known.map(Number));
    },
    /** Buckets held: at most the sum of the tiers' sizes. */
    get length() {
      return rings.reduce((n, r) => n + r.length, 0);
    },
    /** The sum of every reading of a field still held (folding keeps it). @param {string} name */
    total(name) {
      const f = names.indexOf(name);
      let total = 0;
      for (const [r, i] of buckets()) total += r.sum[f][i];
      return total;
    },
    /** Bucket times (seconds) and each field's shown values, oldest first, as a chart takes them. */
    data() {
      /** @type {Record<string, (number | null)[]>} */
      const out = { t: [] };
      for (const name of names) out[name] = [];
      for (const [r, i] of buckets()) {
        out.t.push(r.t[i]);
        names.forEach((name, f) => {
          const n = r.n[f][i];
          out[name].push(n === 0 ? null : fields[name] === 'sum' ? r.sum[f][i] / r.step : r.sum[f][i] / n);
        });
      }
      return out;
    },
  };
}
