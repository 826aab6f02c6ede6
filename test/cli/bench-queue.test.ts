// `seckill bench --queue` as a user runs it: a child process drives a queued drop on a real server
// (API + workers) that this test started; the result is judged against what Redis and the
// database hold afterwards, and the draw is recomputed here with node's own HMAC.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { benchOptions, type BenchFlags } from '../../src/cli/bench.js';
import type { BenchRun } from '../../src/loadgen/bench.js';
import { runBench } from '../../src/loadgen/bench.js';
import { mintCredentials } from '../../src/loadgen/credentials.js';
import { runQueueBench } from '../../src/loadgen/queue-drop.js';
import { readPublishedDraw, verifyDraw } from '../../src/queue/verify.js';
import { createVoucher, startTestApp, suiteScope } from '../support/helpers.js';
import { runSeckill } from '../../support/processes.js';
import { createQueueVoucher, publicGet } from '../queue/support.js';

interface Outcome {
  exitCode: number;
  report: { ok: boolean; runs: BenchRun[] };
}

async function bench(args: string[]): Promise<Outcome> {
  const { code, stdout, stderr } = await runSeckill(['bench', '--queue', ...args, '--json', '--no-progress']);
  if (code === null || (code !== 0 && !stdout)) throw new Error(`seckill bench --queue failed: ${stderr}`);
  return { exitCode: code, report: JSON.parse(stdout) };
}

/** The draw's places as the documented rule gives them: HMAC-SHA256(seed, userId), lowest first. */
function ranked(seed: string, userIds: string[]): string[] {
  const rank = (u: string) => createHmac('sha256', Buffer.from(seed, 'hex')).update(u).digest('hex');
  return [...userIds].sort((a, b) => (rank(a) < rank(b) ? -1 : 1));
}

describe('seckill bench --queue against a running deployment', { concurrency: true }, async () => {
  // No scheduled reconciliation: it would (rightly) bring Redis in line with a tampered stock.
  const t = await startTestApp(suiteScope(), 'bench-queue', { RECONCILE_INTERVAL_MS: '0' });
  await t.c.startWorkers();
  const url = await t.app.listen({ port: 0, host: '127.0.0.1' });
  const common = () => ['--url', url, '--secret', t.c.config.jwtSecret, '--connections', '16'];
  /** The command line's defaults, for runs in this process. */
  const flags: BenchFlags = {
    url, secret: t.c.config.jwtSecret, users: '5', kind: 'seckill', stock: '5', paymentTimeout: '900', firstUser: '8200000', repeat: '0.2',
    sameKey: '0.5', seed: '1', connections: '16', timeout: '30', pay: '0', payBy: 'buyers', price: '0', drainTimeout: '30', progress: false,
  };

  /** Orders of the voucher in the database, by status, and who holds them. */
  async function stored(voucherId: string) {
    const rows = await t.c.db.selectFrom('orders').select(['id', 'user_id', 'status']).where('voucher_id', '=', voucherId).execute();
    const voucher = await t.c.db.selectFrom('vouchers').select(['stock', 'initial_stock']).where('id', '=', voucherId).executeTakeFirstOrThrow();
    return { rows, voucher };
  }

  it('when 300 buyers join a drop of 50 units, then the 50 first places of the draw hold one order each, in both stores', async () => {
    const { exitCode, report } = await bench([...common(), '--users', '300', '--first-user', '8000000', '--stock', '50', '--draw-in', '3']);
    assert.equal(exitCode, 0, JSON.stringify(report.runs[0]?.verdict.checks.filter((c) => !c.ok)));
    const r = report.runs[0]!;
    assert.equal(r.load.sent, 300);
    assert.equal(r.queue!.entrants + r.queue!.appended, 300);
    assert.equal(r.queue!.standings.sent, 300);
    assert.equal(r.client.orders, 50);
    assert.deepEqual([r.verdict.oversold, r.verdict.lost, r.verdict.duplicated], [0, 0, 0]);
    assert.ok(r.verdict.checks.some((c) => c.name.startsWith('I7') && c.ok));

    // The database: 50 orders, one per admitted buyer, every unit sold once.
    const { rows, voucher } = await stored(r.voucherId);
    assert.equal(rows.length, 50);
    assert.ok(rows.every((o) => o.status === 'pending_payment'));
    assert.equal(new Set(rows.map((o) => o.user_id)).size, 50);
    assert.deepEqual([voucher.initial_stock, voucher.stock], [50, 0]);
    // Redis: no unit left, nothing in flight, and its admitted places are the stored orders.
    const id = BigInt(r.voucherId);
    assert.equal(Number(await t.c.redis.hget(t.c.keys.voucher(id), 'stock')), 0);
    assert.equal((await t.c.inflight.ofVoucher(id)).length, 0);
    const admitted = await t.c.redis.hgetall(t.c.keys.queueAdmitted(id));
    assert.deepEqual(admitted, Object.fromEntries(rows.map((o) => [o.user_id, o.id])));

    // The draw: the buyers holding orders are the 50 best ranks of the stored entrants under the published seed.
    const draw = await t.c.db.selectFrom('queue_draws').select(['seed', 'drawn_at']).where('voucher_id', '=', r.voucherId).executeTakeFirstOrThrow();
    assert.ok(draw.drawn_at);
    const entrants = await t.c.db.selectFrom('queue_entrants').select(['user_id', 'position']).where('voucher_id', '=', r.voucherId).orderBy('position').execute();
    assert.equal(entrants.length, r.queue!.entrants);
    const order = ranked(draw.seed, entrants.map((e) => e.user_id));
    assert.deepEqual(entrants.map((e) => e.user_id), order);
    assert.deepEqual(new Set(rows.map((o) => o.user_id)), new Set(order.slice(0, 50)));
    assert.equal(verifyDraw(await readPublishedDraw(publicGet(t), r.voucherId)).ok, true);
  });

  it('--voucher: an existing queue voucher is driven, and when its database stock was tampered with the verdict fails', async () => {
    // In this process (the command line is the test above): a child's start-up could outlast a short pre-queue.
    const voucher = await createQueueVoucher(t, { opensAt: new Date(Date.now() - 1000), beginAt: new Date(Date.now() + 3000), stock: 20 });
    await t.c.db.updateTable('vouchers').set({ stock: sql`stock + 7` }).where('id', '=', voucher.id).execute();
    const options = await benchOptions(t.c.config, { ...flags, queue: true, users: '60', firstUser: '8100000', voucher: voucher.id });
    const r = await runQueueBench(options);
    assert.equal(r.verdict.ok, false);
    const failed = r.verdict.checks.filter((c) => !c.ok).map((c) => c.name);
    assert.ok(failed.includes('I1 no oversell (after the sale)'), `failed checks: ${failed.join(', ')}`);
    assert.equal(r.audit.dbStock, 7);
    // The draw itself was right, and every admitted buyer was told their order.
    assert.equal(r.queue!.draw.ok, true);
    assert.ok(!failed.some((name) => /I7|draw|admitted place/.test(name)), `failed checks: ${failed.join(', ')}`);
    assert.equal(r.client.orders, 20);
    assert.equal((await stored(voucher.id)).rows.length, 20);
  });

  it('refuses what a queued drop cannot do, before any load', async () => {
    const refused = (extra: Partial<BenchFlags>) => benchOptions(t.c.config, { ...flags, ...extra });
    await assert.rejects(refused({ queue: true, compare: true }), /--queue .* cannot take --compare/);
    await assert.rejects(refused({ queue: true, pay: '0.5' }), /--pay cannot go with --queue/);
    await assert.rejects(refused({ queue: true, kind: 'limited' }), /queue vouchers are seckill vouchers/);
    await assert.rejects(refused({ queue: true, requests: '10' }), /every buyer joins once/);
    await assert.rejects(refused({ drawIn: '5' }), /--draw-in .* needs --queue/);
    await assert.rejects(refused({ queue: true, drawIn: '5', voucher: '123' }), /a --voucher keeps its own/);

    const options = await benchOptions(t.c.config, { ...flags, queue: true });
    const credentials = await mintCredentials({ secret: t.c.config.jwtSecret, buyers: 5, firstUserId: 8_200_000n, ttlSeconds: 600 });
    const plain = await createVoucher(t, { stock: 5 });
    const drawn = await createQueueVoucher(t, { opensAt: new Date(Date.now() - 2000), beginAt: new Date(Date.now() - 1000), stock: 5 });
    await assert.rejects(runQueueBench({ ...options, credentials, voucherId: plain.id }), /is not a queue voucher/);
    await assert.rejects(runQueueBench({ ...options, credentials, voucherId: drawn.id }), /pre-queue of voucher \d+ closed at its start/);
    await assert.rejects(runBench({ ...options, credentials, voucherId: drawn.id }), /is a queue voucher: bench it with --queue/);
    // Nobody joined, nothing was claimed.
    for (const v of [plain, drawn]) assert.equal((await stored(v.id)).rows.length, 0);
    assert.equal(await t.c.redis.zcard(t.c.keys.queueEntrants(BigInt(drawn.id))), 0);
  });
});
