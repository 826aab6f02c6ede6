// `seckill bench` as a user runs it: a child process against a real server (API + workers) that
// this test started, judged against what Redis and MariaDB really hold afterwards.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { sql } from 'kysely';
import type { BenchRun } from '../../src/loadgen/bench.js';
import { createVoucher, startTestApp, suiteScope } from '../support/helpers.js';
import { runSeckill } from '../../support/processes.js';

interface Outcome {
  exitCode: number;
  report: { ok: boolean; runs: BenchRun[] };
}

/** Runs `seckill bench … --json` and parses its report, whatever the exit code. */
async function bench(args: string[]): Promise<Outcome> {
  const { code, stdout, stderr } = await runSeckill(['bench', ...args, '--json', '--no-progress']);
  if (code === null || (code !== 0 && !stdout)) throw new Error(`seckill bench failed: ${stderr}`);
  return { exitCode: code, report: JSON.parse(stdout) };
}

describe('seckill bench against a running deployment', async () => {
  // No scheduled reconciliation: it would (rightly) bring Redis in line with the tampered stock.
  const t = await startTestApp(suiteScope(), 'bench-cli', { RECONCILE_INTERVAL_MS: '0' });
  await t.c.startWorkers();
  const url = await t.app.listen({ port: 0, host: '127.0.0.1' });
  const workdir = await mkdtemp(join(tmpdir(), 'bench-cli-'));
  after(() => rm(workdir, { recursive: true, force: true }));
  const common = () => ['--url', url, '--secret', t.c.config.jwtSecret, '--connections', '16'];

  it('when 400 buyers race for 150 units and 40% pay, then its counts are what Redis and MariaDB hold', async () => {
    const html = join(workdir, 'report.html');
    const { exitCode, report } = await bench([
      ...common(),
      ...['--users', '400', '--stock', '150', '--repeat', '0.5', '--same-key', '0.5'],
      ...['--pay', '0.4', '--payment-timeout', '2', '--report', html],
    ]);
    assert.equal(exitCode, 0);
    assert.equal(report.ok, true);
    const r = report.runs[0]!;
    const payments = r.payments!;
    const voucherId = r.voucherId;

    // Every request was answered and every answer counted: 400 first requests + 200 repeats.
    assert.equal(r.load.sent, 600);
    assert.equal(Object.values(r.load.outcomes).reduce((a, b) => a + b, 0), 600);
    assert.equal(r.client.unanswered, 0);
    // Demand above supply: every unit sold; one whose order expired (2 s) while buyers still claimed is sold again.
    const newOrders = r.load.outcomes['202 new order']!;
    assert.ok(newOrders >= 150, `every unit sold: ${newOrders} new orders`);
    assert.deepEqual([r.verdict.oversold, r.verdict.lost, r.verdict.duplicated], [0, 0, 0]);

    // The stores: one order per unit handed out, the paid ones paid, the rest expired and given back.
    const orders = await t.c.db.selectFrom('orders').select(['status', sql<number>`count(*)`.as('n')]).where('voucher_id', '=', voucherId).groupBy('status').execute();
    const byStatus = Object.fromEntries(orders.map((o) => [o.status, Number(o.n)]));
    assert.equal(Object.values(byStatus).reduce((a, b) => a + b, 0), r.client.orders);
    assert.equal(byStatus.paid ?? 0, payments.paid);
    assert.equal(byStatus.expired ?? 0, r.client.orders - payments.paid);
    assert.ok(newOrders - 150 <= (byStatus.expired ?? 0), 'a unit is sold again only after its order expired');
    const voucher = await t.c.db.selectFrom('vouchers').select(['stock', 'initial_stock']).where('id', '=', voucherId).executeTakeFirstOrThrow();
    assert.equal(voucher.initial_stock, 150);
    assert.equal(voucher.stock, 150 - payments.paid);
    assert.equal(Number(await t.c.redis.hget(t.c.keys.voucher(BigInt(voucherId)), 'stock')), voucher.stock);
    assert.equal((await t.c.inflight.ofVoucher(BigInt(voucherId))).length, 0);
    // … and the audit the bench reported says the same.
    assert.equal(payments.audit.dbStock, voucher.stock);
    assert.equal(payments.audit.redisStock, voucher.stock);
    assert.deepEqual(payments.audit.orders, { pending_payment: 0, paid: 0, cancelled: 0, expired: 0, failed: 0, refunded: 0, ...byStatus });

    const page = await readFile(html, 'utf8');
    assert.match(page, /<svg[^>]*>.*Latency by percentile/s);
    assert.doesNotMatch(page, /<script|<link|\ssrc=|\shref=/, 'self-contained: no script, nothing fetched');
  });

  it('when the database stock was tampered with, then the verdict fails and the exit code is 1', async () => {
    const voucher = await createVoucher(t, { stock: 60 });
    await t.c.db.updateTable('vouchers').set({ stock: sql`stock + 7` }).where('id', '=', voucher.id).execute();
    const { exitCode, report } = await bench([...common(), '--voucher', voucher.id, '--users', '100']);
    assert.equal(exitCode, 1);
    assert.equal(report.ok, false);
    const r = report.runs[0]!;
    const failed = r.verdict.checks.filter((c) => !c.ok).map((c) => c.name);
    assert.ok(failed.some((name) => name.startsWith('I1 no oversell')), `failed checks: ${failed.join(', ')}`);
    assert.equal(r.audit.dbStock, 7);
  });

  it('--token-file: the admin and the buyers come from a file of tokens made elsewhere', async () => {
    const file = join(workdir, 'tokens.txt');
    const buyers = await Promise.all(Array.from({ length: 50 }, (_, i) => t.token(7_000_000 + i)));
    await writeFile(file, ['# made by the test', await t.admin(), ...buyers].join('\n'));
    const { exitCode, report } = await bench(['--url', url, '--token-file', file, '--stock', '10', '--repeat', '0']);
    assert.equal(exitCode, 0);
    const r = report.runs[0]!;
    assert.equal(r.setup.buyers, 50);
    assert.equal(r.load.sent, 50);
    assert.equal(r.client.orders, 10);
    const owners = await t.c.db.selectFrom('orders').select('user_id').where('voucher_id', '=', r.voucherId).execute();
    assert.equal(owners.length, 10);
    assert.ok(owners.every((o) => Number(o.user_id) >= 7_000_000 && Number(o.user_id) < 7_000_050));
  });

  it('--compare runs the same buyers against a seckill, a limited and a common voucher', async () => {
    const { exitCode, report } = await bench([...common(), '--compare', '--users', '120', '--stock', '40']);
    assert.equal(exitCode, 0);
    assert.deepEqual(report.runs.map((r) => r.kind), ['seckill', 'limited', 'common']);
    for (const r of report.runs) {
      assert.equal(r.load.sent, 144);
      assert.equal(r.client.orders, 40);
      assert.equal(r.audit.sold, 40);
      assert.equal(r.load.outcomes[r.kind === 'seckill' ? '202 new order' : '201 new order'], 40);
    }
  });
});
