// Line charts as inline SVG, so the HTML report is one self-contained file (no script, no CDN).

export interface Series {
  name: string;
  color: string;
  points: [x: number, y: number][];
}

export interface Tick {
  value: number;
  label: string;
}

export interface ChartSpec {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  /** Custom x ticks (e.g. percentiles on a log scale); default: evenly spaced round numbers. */
  xTicks?: Tick[];
}

const WIDTH = 720;
const HEIGHT = 300;
const PAD = { left: 64, right: 16, top: 32, bottom: 64 };

export const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** Round tick values from 0 (or min) to max: steps of 1, 2 or 5 × 10^k. */
function niceTicks(min: number, max: number, count = 5): Tick[] {
  if (!(max > min)) max = min + 1;
  const raw = (max - min) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!;
  const ticks: Tick[] = [];
  // From the round value at or below min to the first one at or above max, so every point is inside.
  const first = Math.floor(min / step);
  const last = Math.ceil(max / step - 1e-9);
  for (let k = first; k <= last; k++) {
    const value = Number((k * step).toPrecision(12));
    ticks.push({ value, label: value.toLocaleString('en-US', { maximumFractionDigits: 3 }) });
  }
  return ticks;
}

export function lineChart(spec: ChartSpec): string {
  const all = spec.series.flatMap((s) => s.points);
  const xTicks = spec.xTicks ?? niceTicks(Math.min(0, ...all.map((p) => p[0])), Math.max(1e-9, ...all.map((p) => p[0])));
  const yTicks = niceTicks(0, Math.max(1e-9, ...all.map((p) => p[1])));
  const [x0, x1] = [xTicks[0]!.value, xTicks.at(-1)!.value];
  const [y0, y1] = [yTicks[0]!.value, yTicks.at(-1)!.value];
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const sx = (x: number) => PAD.left + ((x - x0) / (x1 - x0 || 1)) * plotW;
  const sy = (y: number) => PAD.top + plotH - ((y - y0) / (y1 - y0 || 1)) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${escapeHtml(spec.title)}">`,
    `<text x="${PAD.left}" y="18" class="title">${escapeHtml(spec.title)}</text>`,
  ];
  for (const t of yTicks) {
    parts.push(`<line x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${sy(t.value)}" y2="${sy(t.value)}" class="grid"/>`);
    parts.push(`<text x="${PAD.left - 6}" y="${sy(t.value) + 4}" text-anchor="end">${escapeHtml(t.label)}</text>`);
  }
  for (const t of xTicks) {
    parts.push(`<line x1="${sx(t.value)}" x2="${sx(t.value)}" y1="${PAD.top}" y2="${PAD.top + plotH}" class="grid"/>`);
    parts.push(`<text x="${sx(t.value)}" y="${PAD.top + plotH + 16}" text-anchor="middle">${escapeHtml(t.label)}</text>`);
  }
  parts.push(`<text x="${PAD.left + plotW / 2}" y="${HEIGHT - 28}" text-anchor="middle" class="axis">${escapeHtml(spec.xLabel)}</text>`);
  parts.push(`<text transform="translate(14 ${PAD.top + plotH / 2}) rotate(-90)" text-anchor="middle" class="axis">${escapeHtml(spec.yLabel)}</text>`);
  spec.series.forEach((s, i) => {
    if (s.points.length) {
      const d = s.points.map(([x, y], j) => `${j ? 'L' : 'M'}${sx(x).toFixed(1)} ${sy(y).toFixed(1)}`).join('');
      parts.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.8"/>`);
    }
    const lx = PAD.left + i * 170;
    parts.push(`<rect x="${lx}" y="${HEIGHT - 14}" width="12" height="4" fill="${s.color}"/>`);
    parts.push(`<text x="${lx + 16}" y="${HEIGHT - 9}">${escapeHtml(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('');
}
