// `--report FILE`: one self-contained HTML page (inline CSS and SVG, nothing fetched) with the
// figures, the verdict and the rate, stock and latency charts of each run.
import type { BenchRun } from './bench.js';
import type { MachineInfo } from './machine.js';
import { escapeHtml as esc, lineChart, type Series, type Tick } from './svg-chart.js';
import { compareRows, cpuLine, drawRows, machineLine, setupLine, verdictLines } from './text-report.js';

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd'];

/** Percentile p on HDR's log axis: 90% → 1, 99% → 2, 99.9% → 3, …; the maximum half a step past the last. */
const PERCENTILE_TICKS: Tick[] = [
  ...[0, 1, 2, 3, 4, 5].map((value) => ({ value, label: `${(100 - 100 / 10 ** value).toPrecision(value + 2).replace(/\.?0+$/, '')}%` })),
  { value: 5.5, label: 'max' },
];
function percentileX(percentile: number): number {
  return percentile >= 100 ? 5.5 : Math.min(5, -Math.log10(1 - percentile / 100));
}

function distributionSeries(run: BenchRun, color: string, name = 'latency'): Series {
  return { name, color, points: run.charts.distribution.map((d) => [percentileX(d.percentile), d.ms]) };
}

/** The first row is the header; figures (every column but the first) are right-aligned. */
function htmlTable([head = [], ...body]: string[][]): string {
  const cells = (r: string[], tag: string) => `<tr>${r.map((c, i) => `<${tag}${i ? ' class="num"' : ''}>${esc(c)}</${tag}>`).join('')}</tr>`;
  return `<table><thead>${cells(head, 'th')}</thead><tbody>${body.map((r) => cells(r, 'td')).join('')}</tbody></table>`;
}

function runSection(run: BenchRun): string {
  const t = run.charts.timeline;
  const rateSeries: Series[] = [
    { name: 'answers/s', color: COLORS[0]!, points: t.map((p) => [p.t, p.rate]) },
    { name: 'new orders/s', color: COLORS[2]!, points: t.map((p) => [p.t, p.orderRate]) },
  ];
  if (t.some((p) => p.failureRate > 0)) rateSeries.push({ name: 'no answer/s', color: COLORS[1]!, points: t.map((p) => [p.t, p.failureRate]) });
  const verdict = verdictLines(run);
  return `<section>
<h2>${esc(run.kind)} voucher ${esc(run.voucherId)}${run.queue ? ' (queued drop)' : ''} — <span class="${run.verdict.ok ? 'pass' : 'fail'}">${run.verdict.ok ? 'PASS' : 'FAIL'}</span></h2>
<p>${esc(setupLine(run))}<br>${esc(cpuLine(run))}</p>
<div class="cols">
<div><h3>Figures</h3>${htmlTable(compareRows([run]))}</div>
<div><h3>Answers</h3>${htmlTable([['answer', 'count'], ...Object.entries(run.load.outcomes).map(([k, n]) => [k, n.toLocaleString('en-US')])])}</div>
${run.queue ? `<div><h3>Draw</h3>${htmlTable([['', ''], ...drawRows(run, run.queue)])}</div>` : ''}
</div>
<h3>Verdict</h3>
<pre>${esc(verdict.join('\n'))}</pre>
${lineChart({ title: 'Throughput', xLabel: 'seconds since the start of the load', yLabel: 'per second', series: rateSeries })}
${lineChart({
  title: 'Units left and orders in flight (polled)',
  xLabel: 'seconds since the start of the load',
  yLabel: 'units / orders',
  series: [
    { name: 'units left', color: COLORS[0]!, points: run.charts.stock.map((s) => [s.t, s.available]) },
    { name: 'orders in flight', color: COLORS[3]!, points: run.charts.stock.map((s) => [s.t, s.inFlight]) },
  ],
})}
${lineChart({
  title: 'Latency over time',
  xLabel: 'seconds since the start of the load',
  yLabel: 'ms',
  series: [
    { name: 'p50', color: COLORS[0]!, points: t.map((p) => [p.t, p.p50Ms]) },
    { name: 'p99', color: COLORS[1]!, points: t.map((p) => [p.t, p.p99Ms]) },
  ],
})}
${lineChart({ title: 'Latency by percentile (HDR histogram)', xLabel: 'percentile', yLabel: 'ms', series: [distributionSeries(run, COLORS[0]!)], xTicks: PERCENTILE_TICKS })}
</section>`;
}

function comparison(runs: BenchRun[]): string {
  return `<section><h2>Side by side</h2>${htmlTable(compareRows(runs))}
${lineChart({
  title: 'Throughput by kind',
  xLabel: 'seconds since the start of each load',
  yLabel: 'answers per second',
  series: runs.map((r, i) => ({ name: r.kind, color: COLORS[i % COLORS.length]!, points: r.charts.timeline.map((p) => [p.t, p.rate]) })),
})}
${lineChart({
  title: 'Latency by percentile, by kind',
  xLabel: 'percentile',
  yLabel: 'ms',
  series: runs.map((r, i) => distributionSeries(r, COLORS[i % COLORS.length]!, r.kind)),
  xTicks: PERCENTILE_TICKS,
})}</section>`;
}

export interface HtmlReportInput {
  runs: BenchRun[];
  machine: MachineInfo;
  /** The command line that produced the runs. */
  command: string;
  createdAt: Date;
}

export function htmlReport({ runs, machine, command, createdAt }: HtmlReportInput): string {
  const ok = runs.every((r) => r.verdict.ok);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>seckill bench — ${ok ? 'PASS' : 'FAIL'}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1180px;color:#222;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-top:1px solid #ddd;padding-top:16px}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{border-bottom:1px solid #eee;padding:3px 10px;text-align:left}.num{text-align:right}
pre{background:#f6f8fa;padding:10px;overflow-x:auto}.pass{color:#1a7f37}.fail{color:#cf222e}
.cols{display:flex;gap:32px;flex-wrap:wrap}svg{display:block;margin:12px 0;max-width:100%;height:auto}
svg text{font:11px system-ui,sans-serif;fill:#444}svg .title{font-size:13px;font-weight:600;fill:#222}svg .axis{font-size:12px}svg .grid{stroke:#e5e5e5}
code{background:#f6f8fa;padding:1px 4px}
</style></head><body>
<h1>seckill bench — <span class="${ok ? 'pass' : 'fail'}">${ok ? 'PASS' : 'FAIL'}</span></h1>
<p><code>${esc(command)}</code><br>${esc(createdAt.toISOString())} · ${esc(machineLine(machine))} · target ${esc(runs[0]?.url ?? '')}</p>
${runs.length > 1 ? comparison(runs) : ''}
${runs.map(runSection).join('\n')}
</body></html>
`;
}
