// The dashboard is only useful if its queries name metrics the app really exports, or series the
// recording rules of ops/prometheus make of them: a renamed metric would leave a panel silently empty.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createMetrics } from '../../src/metrics.js';

const DASHBOARD = new URL('../../ops/grafana/seckill-dashboard.json', import.meta.url);
const RULES = new URL('../../ops/prometheus/seckill-rules.yml', import.meta.url);

/** The recording rules: each recorded series' name and the expression it records. */
function recorded(): Map<string, string> {
  const rules = readFileSync(RULES, 'utf8');
  return new Map([...rules.matchAll(/- record: (\S+)\n\s+expr: (.+)/g)].map(([, name, expr]) => [name!, expr!]));
}

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/** Every PromQL expression of the dashboard, rows' nested panels included. */
function expressions(panels: Panel[]): { panel: string; expr: string }[] {
  return panels.flatMap((p) => [
    ...(p.targets ?? []).flatMap((t) => (t.expr ? [{ panel: p.title ?? '?', expr: t.expr }] : [])),
    ...expressions(p.panels ?? []),
  ]);
}

/** The series names Prometheus stores for the app's registry: histograms add _bucket, _sum and _count. */
async function exportedSeries(): Promise<Map<string, string>> {
  const series = new Map<string, string>();
  for (const m of await createMetrics().registry.getMetricsAsJSON()) {
    series.set(m.name, String(m.type));
    if (String(m.type) === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) series.set(m.name + suffix, 'histogram series');
  }
  return series;
}

describe('Grafana dashboard (ops/grafana/seckill-dashboard.json)', () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[]; uid: string };
  const exprs = expressions(dashboard.panels);
  const rules = recorded();
  /** An expression with each recorded series it names written out as its rule's expression. */
  const expanded = (expr: string) => expr.replace(/\bseckill:[a-z0-9_:]+/g, (name) => `(${rules.get(name) ?? name})`);

  it('when its queries are read, then every seckill_ metric they name is in the app registry, and every seckill: series a recording rule', async () => {
    const series = await exportedSeries();
    const missing = exprs.flatMap(({ panel, expr }) => [
      ...[...expanded(expr).matchAll(/\bseckill_[a-z0-9_]+/g)].map(([name]) => name).filter((name) => !series.has(name)).map((name) => `${panel}: ${name}`),
      ...[...expr.matchAll(/\bseckill:[a-z0-9_:]+/g)].map(([name]) => name).filter((name) => !rules.has(name)).map((name) => `${panel}: ${name} (no recording rule)`),
    ]);
    assert.deepEqual(missing, []);
    assert.ok(exprs.some(({ expr }) => expr.includes('seckill:')), 'the dashboard charts the recording rules');
  });

  it('when its panels are listed, then each has a query and the sale figures are all charted', () => {
    assert.ok(dashboard.panels.every((p) => (p.targets ?? []).some((t) => t.expr)), 'a panel without a query');
    const all = exprs.map((e) => expanded(e.expr)).join('\n');
    for (const name of [
      'seckill_claims_total',
      'seckill_orders_stored_total',
      'seckill_pipeline_lag_seconds',
      'seckill_claim_duration_seconds_bucket',
      'seckill_reconcile_repairs_total',
    ]) {
      assert.ok(all.includes(name), `${name} is not charted`);
    }
    assert.match(all, /histogram_quantile\(0\.99, sum by \(le\) \(rate\(seckill_claim_duration_seconds_bucket/);
  });

  it('when a query takes a rate, then it is of a counter or a histogram series, never of a gauge', async () => {
    const series = await exportedSeries();
    const rated = exprs.flatMap(({ expr }) => [...expanded(expr).matchAll(/(?:rate|increase)\((seckill_[a-z0-9_]+)/g)].map((m) => m[1]!));
    assert.ok(rated.length > 0);
    assert.deepEqual(rated.filter((name) => series.get(name) === 'gauge'), []);
  });
});
