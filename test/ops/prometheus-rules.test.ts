// The Prometheus rules (ops/prometheus/seckill-rules.yml): promtool checks them and runs their
// unit tests; then a real Prometheus scrapes a live engine whose database goes silent (a stalled
// proxy; the shared MariaDB is never touched) and the database alert fires, then clears once the
// database answers again.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createMetrics } from '../../src/metrics.js';
import { freePorts } from '../../support/free-ports.js';
import { ROOT, run, start, type Running } from '../../support/processes.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { waitFor } from '../../support/wait.js';
import { claim, createVoucher, DATABASE_PORT, databaseServerVia, range, startTestApp, suiteScope, type TestApp } from '../support/helpers.js';

const RULES = path.join(ROOT, 'ops/prometheus/seckill-rules.yml');
const RULE_TESTS = path.join(ROOT, 'ops/prometheus/seckill-rules.test.yml');
const INSTALL = path.join(ROOT, 'scripts/install-prometheus.sh');
const RUNBOOK = path.join(ROOT, 'docs/alerts.md');

/** The alert a silent database raises first; its `for:` is shortened in the live run's copy. */
const ALERT = 'SeckillDatabaseUnreachable';
const TEST_FOR = '2s';

/** A command's exit code, with its output in the message when it is not 0. */
async function assertSucceeds(command: string, args: string[], timeoutMs = 60_000): Promise<string> {
  const done = await run(command, args, { timeoutMs });
  assert.equal(done.code, 0, `${command} ${args.join(' ')} exited ${done.code}:\n${done.stdout}${done.stderr}`);
  return done.stdout;
}

// promtool and prometheus, from Debian's package, with its service kept stopped.
before(() => assertSucceeds('bash', [INSTALL], 600_000));

describe('the Prometheus rules under promtool', () => {
  it('when promtool checks the rules file, then it is valid', async () => {
    assert.match(await assertSucceeds('promtool', ['check', 'rules', RULES]), /SUCCESS/);
  });

  it('when promtool runs the unit tests, then every alert fires on its failure and stays silent when healthy', async () => {
    assert.match(await assertSucceeds('promtool', ['test', 'rules', RULE_TESTS]), /SUCCESS/);
  });

  it('when the rules are read, then every seckill_ metric they name is in the app registry and every alert has a runbook section and a unit test', async () => {
    const rules = await readFile(RULES, 'utf8');
    const exported = new Set((await createMetrics().registry.getMetricsAsJSON()).map((m) => m.name));
    const named = new Set([...rules.matchAll(/\bseckill_[a-z0-9_]+/g)].map(([name]) => name));
    assert.deepEqual([...named].filter((name) => !exported.has(name)), []);
    const sections = new Set([...(await readFile(RUNBOOK, 'utf8')).matchAll(/^## (\S+)$/gm)].map(([, title]) => title!.toLowerCase()));
    const alerts = [...rules.matchAll(/- alert: (\S+)/g)].map(([, name]) => name!);
    const runbooks = [...rules.matchAll(/runbook: docs\/alerts\.md#(\S+)/g)].map(([, anchor]) => anchor!);
    assert.deepEqual(runbooks, alerts.map((name) => name.toLowerCase()));
    assert.deepEqual(runbooks.filter((anchor) => !sections.has(anchor)), []);
    const tested = new Set([...(await readFile(RULE_TESTS, 'utf8')).matchAll(/alertname: (\S+)/g)].map(([, name]) => name));
    assert.deepEqual(alerts.filter((name) => !tested.has(name)), [], 'alerts without a promtool test');
  });
});

interface ActiveAlert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
}

/** The rules with only ALERT's `for:` shortened, so a test outage need not last its real duration. */
function withShortFor(rules: string): string {
  const pattern = new RegExp(`(- alert: ${ALERT}\\n(?:(?!\\s+- alert:).*\\n)*?\\s+for: )\\S+`);
  assert.match(rules, pattern, `${ALERT} has no for: to shorten`);
  return rules.replace(pattern, `$1${TEST_FOR}`);
}

/** Prometheus on a free port, scraping `target` every second with the test copy of the rules. */
async function startPrometheus(dir: string, target: string): Promise<{ url: string; server: Running }> {
  await writeFile(path.join(dir, 'rules.yml'), withShortFor(await readFile(RULES, 'utf8')));
  await writeFile(
    path.join(dir, 'prometheus.yml'),
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      'rule_files: [rules.yml]',
      'scrape_configs:',
      `  - { job_name: seckill, static_configs: [{ targets: ['${target}'] }] }`,
    ].join('\n'),
  );
  const port = await freePorts(1);
  const server = start('prometheus', [
    `--config.file=${path.join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
  ]);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(() => `Prometheus ready on ${url}:\n${server.lines.join('\n')}`, async () => {
    if (server.exited) throw new Error(`prometheus exited:\n${server.lines.join('\n')}`);
    return (await fetch(`${url}/-/ready`).catch(() => null))?.ok;
  }, 20_000, 200);
  return { url, server };
}

async function activeAlerts(prometheus: string): Promise<ActiveAlert[]> {
  const answer = (await (await fetch(`${prometheus}/api/v1/alerts`)).json()) as { data: { alerts: ActiveAlert[] } };
  return answer.data.alerts.filter((a) => a.labels.alertname === ALERT);
}

/** One instant query's first value, null when it has none (the target not scraped yet). */
async function queryValue(prometheus: string, expr: string): Promise<number | null> {
  const answer = (await (await fetch(`${prometheus}/api/v1/query?query=${encodeURIComponent(expr)}`)).json()) as { data: { result: { value: [number, string] }[] } };
  const first = answer.data.result[0];
  return first ? Number(first.value[1]) : null;
}

/** Claims by `users` (one unit each); they are admitted from Redis, the database aside. */
async function claimAll(t: TestApp, voucherId: string, users: number[]): Promise<void> {
  const answers = await Promise.all(users.map((u) => claim(t, voucherId, u)));
  assert.deepEqual([...new Set(answers.map((a) => a.statusCode))], [202]);
}

describe('a live Prometheus watching an engine whose database goes silent', async () => {
  // after() hooks run in the order they are registered.
  const proxy = new TcpProxy('127.0.0.1', DATABASE_PORT);
  const proxyPort = await proxy.start();
  after(() => proxy.resume()); // before the app closes its database connections through the proxy
  let prometheus: Running | null = null;
  after(() => prometheus?.stop());
  const dir = await mkdtemp(path.join(tmpdir(), 'seckill-prometheus-'));
  after(() => rm(dir, { recursive: true, force: true }));
  const t = await startTestApp(suiteScope(), 'promalert', {}, databaseServerVia(proxyPort));
  after(() => proxy.stop());

  it(`when the database stops answering, then ${ALERT} fires, and it clears once the database answers again`, { timeout: 90_000 }, async (ctx) => {
    await t.c.startWorkers();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as { port: number };
    const started = await startPrometheus(dir, `127.0.0.1:${port}`);
    prometheus = started.server;
    const url = started.url;

    // A sale stored as usual: Prometheus sees orders stored, and no alert.
    const v = await createVoucher(t, { stock: 1_000 });
    await claimAll(t, v.id, range(1, 100));
    await waitFor('Prometheus to see the 100 orders stored', async () => (await queryValue(url, 'seckill_orders_stored_total')) === 100, 20_000, 250);
    assert.deepEqual(await activeAlerts(url), []);

    // The database goes silent (no RST, no FIN) while buyers keep coming: a lane takes their
    // orders and waits for the database with them.
    const cutAt = performance.now();
    proxy.stall();
    await claimAll(t, v.id, range(1_000, 100));
    const firing = await waitFor(
      `${ALERT} firing`,
      async () => (await activeAlerts(url)).find((a) => a.state === 'firing'),
      45_000,
      250,
    );
    const firedAfter = performance.now() - cutAt;

    const healedAt = performance.now();
    proxy.resume();
    await waitFor(`${ALERT} cleared`, async () => (await activeAlerts(url)).length === 0, 20_000, 250);
    const clearedAfter = performance.now() - healedAt;
    await waitFor('the 200 orders stored', async () => (await queryValue(url, 'seckill_orders_stored_total')) === 200, 20_000, 250);

    ctx.diagnostic(`${ALERT} firing ${(firedAfter / 1000).toFixed(1)} s after the database went silent (active since ${firing.activeAt}), cleared ${(clearedAfter / 1000).toFixed(1)} s after it answered again`);
    assert.equal(firing.labels.severity, 'critical');
    // The threshold holds: a lag over 15 s takes 15 s of silence, however short the test's for:.
    assert.ok(firedAfter > 15_000, `fired after ${firedAfter} ms`);
  });
});
