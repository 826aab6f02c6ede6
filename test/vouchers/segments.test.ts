// Stock segments on a real Redis Cluster (three masters): a hot voucher's stock spread over three
// masters sells exactly its stock, the last unit included, to a burst of 20x as many buyers; the
// per-user limit and Idempotency-Key hold across segments; a move of units that dies half-way
// neither loses nor doubles a unit; the waitlist, expiry and a lost segment are handled.
import assert from 'node:assert/strict';
import type { Cluster } from 'ioredis';
import { describe, it } from 'node:test';
import { shardMasters } from '../../src/infra/redis/client.js';
import { homeShard, segmentShards } from '../../src/vouchers/segments.js';
import { startClusterApp } from '../support/cluster-app.js';
import { claim, createVoucher, orderAction, startSecondInstance, suiteScope } from '../support/helpers.js';
import { assertInvariants, readTruth, waitForDrain } from '../support/invariants.js';
import { injectClaims, startSale } from '../support/sale.js';
import { waitFor } from '../../support/wait.js';

describe('stock segments on a Redis Cluster', async () => {
  // Reconciliation takes over a move after 3 command timeouts and a second: 4 s here.
  const { t, cluster } = await startClusterApp(suiteScope(), 'segments', 12, { REDIS_COMMAND_TIMEOUT_MS: '1000' });
  const voucherOf = async (id: string) => (await t.c.directory.get(BigInt(id)))!;

  it('when a voucher is created with segments: 3, then its stock is on three masters and a 20x burst buys exactly all of it', { timeout: 60_000 }, async () => {
    const v = await createVoucher(t, { stock: 150, segments: 3 });
    assert.equal(v.segments, 3);
    const voucher = await voucherOf(v.id);
    const masterOf = shardMasters(t.c.redis, t.c.keys)!;
    const shards = segmentShards(voucher, t.c.keys);
    assert.equal(new Set(shards.map(masterOf)).size, 3, 'one segment per master');
    // Nearly every buyer lives in one segment: it runs dry first and borrows the others' units
    // (their own 30 buyers leave most of them unsold).
    const users = Array.from({ length: 20_000 }, (_, i) => i + 1);
    const homedAt = (u: number) => homeShard(voucher, BigInt(u), t.c.keys);
    const crowd = [...users.filter((u) => homedAt(u) === shards[0]).slice(0, 2_970), ...users.filter((u) => homedAt(u) !== shards[0]).slice(0, 30)];
    const send = injectClaims(t, v.id);
    const sale = startSale({ send: (i, key) => send(crowd[i - 1]!, key), firstUser: 1, buyers: crowd.length, concurrency: 200 });
    await sale.done;
    assert.equal(sale.admitted().length, 150, 'every unit sold, the last one included');
    assert.ok(sale.answers.filter((a) => a.status === 409).every((a) => a.code === 'SOLD_OUT'));
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, sale.admitted());
    assert.equal(truth.orders.length, 150);
    assert.equal(truth.dbStock, 0);
    assert.equal(truth.redisStock, 0);
  });

  it('when one buyer claims through several segments\' worth of traffic, then the limit and the Idempotency-Key are exact', { timeout: 30_000 }, async () => {
    const v = await createVoucher(t, { stock: 30, segments: 3, perUserLimit: 2 });
    const user = 7;
    const first = await claim(t, v.id, user, { idempotencyKey: 'a' });
    const again = await claim(t, v.id, user, { idempotencyKey: 'a' });
    assert.equal(first.statusCode, 202);
    assert.equal(again.json().orderId, first.json().orderId, 'a retry returns the same order');
    assert.equal((await claim(t, v.id, user, { idempotencyKey: 'b' })).statusCode, 202);
    const third = await claim(t, v.id, user, { idempotencyKey: 'c' });
    assert.equal(third.json().code, 'LIMIT_EXCEEDED');
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, [first.json().orderId]);
    assert.equal(truth.redisBuyers.get(String(user)), 2);
    assert.equal(truth.orders.filter((o) => o.user_id === String(user)).length, 2);
  });

  it('when a move between segments dies after lending, then the units are neither lost nor doubled and reconciliation finishes it', { timeout: 40_000 }, async () => {
    const v = await createVoucher(t, { stock: 90, segments: 3 });
    const voucher = await voucherOf(v.id);
    const [from, to] = segmentShards(voucher, t.c.keys) as [number, number];
    // The mover's first step only, as if its process died right after.
    const lent = await t.c.scripts.lend(BigInt(v.id), from, '1', to, 10);
    assert.equal(lent, 15, 'half the lender\'s 30 units');
    const audit = await t.c.audit(BigInt(v.id), { drained: true });
    assert.ok(audit?.ok, `lent units still count: ${JSON.stringify(audit?.checks.filter((c) => !c.ok))}`);
    await waitFor('reconciliation to finish the move', async () => Number(await t.c.redis.hget(t.c.keys.voucher(BigInt(v.id), to), 'stock')) === 45, 20_000, 200);
    assert.equal(await t.c.redis.hlen(t.c.keys.movesOut(BigInt(v.id), from)), 0);
    const sale = startSale({ send: injectClaims(t, v.id), firstUser: 50_000, buyers: 300, concurrency: 50 });
    await sale.done;
    const codes = sale.answers.reduce<Record<string, number>>((n, a) => ({ ...n, [a.code ?? a.status]: (n[a.code ?? a.status] ?? 0) + 1 }), {});
    const stocks = await Promise.all(segmentShards(voucher, t.c.keys).map((s) => t.c.redis.hget(t.c.keys.voucher(BigInt(v.id), s), 'stock')));
    assert.equal(sale.admitted().length, 90, JSON.stringify({ codes, stocks }));
    await waitForDrain(t.c, v.id);
    await assertInvariants(t.c, v.id, sale.admitted());
  });

  it('when unpaid orders expire in a segment nobody waits in, then the units go to the buyers waiting in another', { timeout: 40_000 }, async () => {
    const v = await createVoucher(t, { stock: 3, segments: 3, waitlist: true, paymentTimeoutSeconds: 2 });
    const voucher = await voucherOf(v.id);
    const [first, second] = segmentShards(voucher, t.c.keys) as [number, number];
    const homedAt = (shard: number) => Array.from({ length: 5_000 }, (_, i) => 70_000 + i).filter((u) => homeShard(voucher, BigInt(u), t.c.keys) === shard);
    // Three buyers of the first segment take every unit (borrowing two); three of the second wait.
    const buyers = homedAt(first).slice(0, 3);
    const waiters = homedAt(second).slice(0, 3);
    const admitted = [];
    for (const u of buyers) admitted.push((await claim(t, v.id, u)).json().orderId as string);
    for (const u of waiters) assert.equal((await claim(t, v.id, u)).json().waitlisted, true);
    assert.equal(await t.c.redis.zcard(t.c.keys.waitlist(BigInt(v.id), first)), 0, 'nobody waits in the first segment');
    // Nobody pays: the units go back to the first segment, whose waitlist is empty, and on to the second's.
    const promoted = await waitFor('the three waiting buyers promoted', async () => {
      const rows = await t.c.db.selectFrom('orders').select(['id', 'user_id']).where('voucher_id', '=', v.id).where('user_id', 'in', waiters.map(String)).execute();
      return rows.length === 3 && rows;
    }, 20_000, 200);
    // Paid before their own payment window closes, so the check below is not racing an expiry.
    for (const o of promoted) assert.equal((await orderAction(t, 'pay', o.id, Number(o.user_id))).statusCode, 200);
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, [...admitted, ...promoted.map((o) => o.id)]);
    assert.deepEqual(truth.orders.filter((o) => o.status === 'paid').map((o) => Number(o.user_id)).sort(), [...waiters].sort());
  });

  it('when one segment\'s state is lost, then it is rebuilt, reconciliation gives it back its units and the rest of the stock sells exactly', { timeout: 40_000 }, async () => {
    const v = await createVoucher(t, { stock: 60, segments: 3 });
    const first = startSale({ send: injectClaims(t, v.id), firstUser: 90_000, buyers: 15, concurrency: 5 });
    await first.done;
    await waitForDrain(t.c, v.id);
    const voucher = await voucherOf(v.id);
    const lost = segmentShards(voucher, t.c.keys)[1]!;
    await t.c.redis.del(t.c.keys.voucher(BigInt(v.id), lost), t.c.keys.buyers(BigInt(v.id), lost), t.c.keys.idempotency(BigInt(v.id), lost));
    await waitFor('the lost segment rebuilt and repaired', async () => (await readTruth(t.c, v.id)).redisStock === 45, 20_000, 200);
    const rest = startSale({ send: injectClaims(t, v.id), firstUser: 91_000, buyers: 200, concurrency: 50 });
    await rest.done;
    assert.equal(rest.admitted().length, 45, 'exactly the units the database could still sell');
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, [...first.admitted(), ...rest.admitted()]);
    assert.equal(truth.orders.length, 60);
  });

  it('when ADMIT_DURABILITY=replica, then each admission waits for the replica of its own segment\'s master', { timeout: 40_000 }, async (ctx) => {
    // What ADMIT_DURABILITY=replica needs of every master (checked at start-up): no writes without a replica.
    const minReplicas = (n: string) => Promise.all((t.c.redis as Cluster).nodes('master').map((m) => m.config('SET', 'min-replicas-to-write', n)));
    await minReplicas('1');
    const durable = await startSecondInstance(ctx, t, { ADMIT_DURABILITY: 'replica', ADMIT_WAIT_TIMEOUT_MS: '300', LOG_LEVEL: 'warn' });
    const v = await createVoucher(durable, { stock: 300, segments: 3 });
    const voucher = await voucherOf(v.id);
    const [first, second] = segmentShards(voucher, t.c.keys) as [number, number];
    const homedAt = (shard: number) => Array.from({ length: 5_000 }, (_, i) => 200_000 + i).filter((u) => homeShard(voucher, BigInt(u), t.c.keys) === shard);
    const send = injectClaims(durable, v.id);
    const [a, b] = [homedAt(first), homedAt(second)];
    const before = startSale({ send: (i, key) => send(a[i - 1]!, key), firstUser: 1, buyers: 50, concurrency: 10 });
    await before.done;
    assert.equal(before.admitted().length, 50, `confirmed by the replica: ${JSON.stringify(before.answers.filter((x) => x.status !== 202).slice(0, 3))}`);
    // The first segment's master loses its replica: its claims cannot be confirmed, the others' can.
    await cluster.killReplicaOf(t.c.keys.voucher(BigInt(v.id), first));
    // Until the master sees the link close, it still counts the replica (for up to min-replicas-max-lag).
    const alone = async () => (await Promise.all((t.c.redis as Cluster).nodes('master').map((m) => m.info('replication')))).some((i) => /connected_slaves:0/.test(i));
    await waitFor('the master to notice its replica gone', alone, 10_000);
    const refused = await claim(durable, v.id, a[60]!, { idempotencyKey: 'r' });
    assert.equal(refused.statusCode, 503, refused.body);
    assert.equal(refused.json().code, 'UNAVAILABLE');
    const elsewhere = await claim(durable, v.id, b[0]!, { idempotencyKey: 'r' });
    assert.equal(elsewhere.statusCode, 202, elsewhere.body);
    // The master without its replica took nothing; the operator lets it write again to drain.
    await minReplicas('0');
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, [...before.admitted(), elsewhere.json().orderId]);
    assert.equal(truth.orders.length, 51);
  });
});
