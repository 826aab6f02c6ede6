// The live view's time-series charts (uPlot, served by the API under /assets/vendor/): claims/s by
// outcome, admissions/s, claim latency, pipeline lag, stock in both stores and the waitlist, from the moment the
// voucher was opened, in the bounded series of series.js. Vertical markers show the sale's start,
// its sell-out and the stores' server changes where the snapshots show them.
import uPlot from '../vendor/uplot.esm.js';
import { h } from './dom.js';
import { createSeries } from './series.js';

/** Claim outcomes (seckill_claims_total) in a few lines; any other outcome counts as "other". */
const OUTCOME_LINE = {
  admitted: 'admitted',
  replayed: 'replayed',
  sold_out: 'soldOut',
  sold_out_cached: 'soldOut',
  limit_exceeded: 'refused',
  rate_limited: 'refused',
  key_reused: 'refused',
};

/** Each chart: its title and its lines as [field, label, colour]. */
const CHARTS = [
  { id: 'claims', title: 'Claims/s by outcome (all vouchers)', lines: [['admitted', 'admitted', '#0a7d32'], ['replayed', 'replayed', '#2962ff'], ['soldOut', 'sold out', '#b00020'], ['refused', 'refused (limit, rate, key)', '#ff8f00'], ['other', 'other', '#757575']] },
  { id: 'admissions', title: 'Admissions/s (this voucher, from the stores)', lines: [['admissions', 'admitted units/s', '#0a7d32']] },
  { id: 'stock', title: 'Stock', lines: [['redisStock', 'Redis', '#d32f2f'], ['dbStock', 'database', '#2962ff']] },
  { id: 'latency', title: 'Claim latency (ms, upper bound of its histogram bucket)', lines: [['p50', 'p50', '#2962ff'], ['p99', 'p99', '#b00020']] },
  { id: 'lag', title: 'Pipeline lag (s)', lines: [['lag', 'drain lag, s', '#6a1b9a']] },
  { id: 'waitlist', title: 'Waitlist', lines: [['waitlist', 'waiting', '#00897b']] },
];
/** Admissions are counted (stored orders plus in flight, between two snapshots); the rest are rates or levels. */
const FIELDS = { admitted: 'mean', replayed: 'mean', soldOut: 'mean', refused: 'mean', other: 'mean', admissions: 'sum', p50: 'mean', p99: 'mean', redisStock: 'mean', dbStock: 'mean', lag: 'mean', waitlist: 'mean' };
const MARKER = { start: ['sale start', '#0a7d32'], soldOut: ['sold out', '#b00020'], redisMaster: ['Redis master change', '#ff6f00'], databaseServer: ['database server change', '#6a1b9a'] };
/** Markers kept: they too must not grow with the sale. */
const MAX_MARKERS = 50;
const HEIGHT = 170;
/** 30K rather than 30,000: a y axis is too narrow for the long form. */
const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 2 }).format;

/** @param {any} s a snapshot */
const admittedOf = (s) => Object.values(/** @type {Record<string, number>} */ (s.stats.orders)).reduce((a, b) => a + b, 0) + s.stats.inFlight;

/**
 * Charts in `el` for the voucher `voucher` (its beginAt is the start marker).
 * @param {HTMLElement} el @param {{beginAt: string}} voucher
 */
export function createCharts(el, voucher) {
  const series = createSeries(/** @type {Record<string, 'mean' | 'sum'>} */ (FIELDS));
  /** @type {{t: number, kind: keyof typeof MARKER}[]} */
  const markers = [{ t: Date.parse(voucher.beginAt) / 1000, kind: 'start' }];
  /** The previous snapshot's admitted units and stock: admissions and the sell-out are changes. @type {{admitted: number, stock: number | null} | null} */
  let previous = null;

  const width = () => Math.max(320, el.clientWidth);
  const plots = CHARTS.map(({ id, title, lines }) => {
    const box = h('div', { class: 'chart', 'data-chart': id });
    el.append(box);
    return new uPlot(
      {
        title,
        width: width(),
        height: HEIGHT,
        cursor: { sync: { key: 'live' } },
        // From zero, with headroom over the highest point (uPlot's own range would hide a flat line's level).
        scales: { y: { range: (_u, min, max) => [Math.min(0, min ?? 0), max > 0 ? max * 1.1 : 1] } },
        axes: [{}, { values: (_u, splits) => splits.map(compact) }],
        series: [{}, ...lines.map(([, label, stroke]) => ({ label, stroke, width: 1.5, spanGaps: false }))],
        hooks: { draw: [drawMarkers] },
      },
      [[], ...lines.map(() => [])],
      box,
    );
  });
  const onResize = () => plots.forEach((u) => u.setSize({ width: width(), height: HEIGHT }));
  window.addEventListener('resize', onResize);

  /** Dashed vertical lines with their labels, over the plot, where a marker falls in the time shown. @param {uPlot} u */
  function drawMarkers(u) {
    const { ctx, bbox } = u;
    const { min, max } = u.scales.x;
    if (min === undefined || max === undefined) return;
    ctx.save();
    ctx.setLineDash([5, 4]);
    ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
    /** Labels already at each x: markers of the same second stack their labels. @type {Map<number, number>} */
    const rows = new Map();
    for (const { t, kind } of markers) {
      if (t < min || t > max) continue;
      const [label, colour] = MARKER[kind];
      const x = Math.round(u.valToPos(t, 'x', true));
      const row = rows.get(x) ?? 0;
      rows.set(x, row + 1);
      ctx.strokeStyle = ctx.fillStyle = colour;
      ctx.beginPath();
      ctx.moveTo(x, bbox.top);
      ctx.lineTo(x, bbox.top + bbox.height);
      ctx.stroke();
      // Right of the line, or left of it near the right edge.
      const left = x + ctx.measureText(label).width + 3 * devicePixelRatio > bbox.left + bbox.width;
      ctx.textAlign = left ? 'right' : 'left';
      ctx.fillText(label, x + (left ? -3 : 3) * devicePixelRatio, bbox.top + (12 + 13 * row) * devicePixelRatio);
    }
    ctx.restore();
  }

  /** @param {any} s a snapshot of GET /api/vouchers/:id/live */
  function update(s) {
    const t = Date.parse(s.at) / 1000;
    const admitted = admittedOf(s);
    const stock = s.stats.redisStock ?? s.stats.dbStock;
    /** @type {Record<string, number | null>} */
    const values = { admitted: 0, replayed: 0, soldOut: 0, refused: 0, other: 0 };
    for (const [outcome, rate] of Object.entries(/** @type {Record<string, number>} */ (s.claimsPerSecond))) {
      const line = /** @type {Record<string, string>} */ (OUTCOME_LINE)[outcome] ?? 'other';
      values[line] = /** @type {number} */ (values[line]) + rate;
    }
    series.push(t, {
      ...values,
      admissions: previous ? Math.max(0, admitted - previous.admitted) : 0,
      // null: no claim that second (or one past the last bucket), a gap rather than a zero.
      p50: s.claimLatencyMs?.p50 ?? null,
      p99: s.claimLatencyMs?.p99 ?? null,
      redisStock: s.stats.redisStock,
      dbStock: s.stats.dbStock,
      lag: s.pipelineLagSeconds,
      waitlist: s.stats.waitlist,
    });
    // On the second of the snapshot that saw it, as its point is drawn.
    const second = Math.floor(t);
    if (previous && stock === 0 && previous.stock !== null && previous.stock > 0) markers.push({ t: second, kind: 'soldOut' });
    if (s.changes?.redisMaster > 0) markers.push({ t: second, kind: 'redisMaster' });
    if (s.changes?.databaseServer > 0) markers.push({ t: second, kind: 'databaseServer' });
    previous = { admitted, stock };

    const data = series.data();
    // Markers older than the oldest point can never show again.
    while (markers.length > MAX_MARKERS || (markers.length && /** @type {any} */ (markers[0]).t < /** @type {number} */ (data.t[0]))) markers.shift();
    CHARTS.forEach(({ lines }, k) => plots[k]?.setData([data.t, ...lines.map(([field]) => data[/** @type {string} */ (field)])]));
  }

  return {
    update,
    /** What the charts draw, by field, and the markers (for the browser tests). */
    shown() {
      /** @type {Record<string, (number | null)[]>} */
      const out = { t: [...(plots[0]?.data[0] ?? [])] };
      CHARTS.forEach(({ lines }, k) => lines.forEach(([field], j) => (out[/** @type {string} */ (field)] = [...(plots[k]?.data[j + 1] ?? [])])));
      return { series: out, markers: markers.map(({ t, kind }) => ({ t, label: MARKER[kind][0] })) };
    },
    destroy() {
      window.removeEventListener('resize', onResize);
      plots.forEach((u) => u.destroy());
      el.replaceChildren();
    },
  };
}
