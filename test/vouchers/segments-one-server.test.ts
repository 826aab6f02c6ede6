// Stock segments on one Redis server: the same design with every segment on this server (it
// gains no core, but a voucher created with segments must behave exactly as on a cluster), and
// the whole state lost at once (a restart without persistence) is rebuilt exactly.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { homeShard, segmentShards } from '../../src/vouchers/segments.js';
import { claim, createVoucher, startTestApp, suiteScope } from '../support/helpers.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { assertInvariants, readTruth, waitForDrain } from '../support/invariants.js';
import { injectClaims, startSale } from '../support/sale.js';

const t = await startTestApp(suiteScope(), 'segments_one', { BUCKET_USER_RATE: '0', RECONCILE_INTERVAL_MS: '0' });
await t.c.startWorkers();

describe('stock segments on one server', () => {
  it('when most buyers live in one of four segments, then they borrow the others\' units and exactly the stock sells', async () => {
    const v = await createVoucher(t, { stock: 100, segments: 4 });
    const voucher = (await t.c.directory.get(BigInt(v.id)))!;
    const shards = segmentShards(voucher, t.c.keys);
    assert.equal(new Set(shards).size, 4);
    const users = Array.from({ length: 10_000 }, (_, i) => i + 1);
    const crowd = [...users.filter((u) => homeShard(voucher, BigInt(u), t.c.keys) === shards[0]).slice(0, 600), ...users.filter((u) => homeShard(voucher, BigInt(u), t.c.keys) !== shards[0]).slice(0, 20)];
    const send = injectClaims(t, v.id);
    const sale = startSale({ send: (i, key) => send(crowd[i - 1]!, key), firstUser: 1, buyers: crowd.length, concurrency: 100 });
    await sale.done;
    assert.equal(sale.admitted().length, 100);
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, sale.admitted());
    assert.equal(truth.redisStock, 0);
  });

  it('when exactly as many buyers as units claim once each, most of them in one segment, then every unit sells', async () => {
    // No buyer is left over to take a unit another was wrongly told was sold out: any false SOLD_OUT shows.
    const v = await createVoucher(t, { stock: 400, segments: 4 });
    const voucher = (await t.c.directory.get(BigInt(v.id)))!;
    const shards = segmentShards(voucher, t.c.keys);
    const users = Array.from({ length: 20_000 }, (_, i) => 100_000 + i);
    const crowd = [...users.filter((u) => homeShard(voucher, BigInt(u), t.c.keys) === shards[0]).slice(0, 300), ...users.filter((u) => homeShard(voucher, BigInt(u), t.c.keys) !== shards[0]).slice(0, 100)];
    const send = injectClaims(t, v.id);
    const sale = startSale({ send: (i, key) => send(crowd[i - 1]!, key), firstUser: 1, buyers: crowd.length, concurrency: 200, retries: 3 });
    await sale.done;
    assert.equal(sale.admitted().length, 400, JSON.stringify(sale.answers.filter((a) => a.status !== 202).slice(0, 5)));
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, sale.admitted());
    assert.deepEqual([truth.orders.length, truth.dbStock, truth.redisStock], [400, 0, 0]);
  });

  it('when every segment\'s state is lost at once, then the first claim rebuilds them exactly and the rest sells exactly', async () => {
    const v = await createVoucher(t, { stock: 60, segments: 3 });
    const first = startSale({ send: injectClaims(t, v.id), firstUser: 20_000, buyers: 25, concurrency: 5 });
    await first.done;
    await waitForDrain(t.c, v.id);
    // Everything of this voucher in Redis is gone (the stream groups stay: they are the shards').
    await deleteKeys(t.c.redis, `${t.c.keys.prefix}:*:v:${v.id}*`);
    const rest = startSale({ send: injectClaims(t, v.id), firstUser: 30_000, buyers: 200, concurrency: 20 });
    await rest.done;
    assert.equal(rest.admitted().length, 35, 'what the database could still sell, no more');
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, [...first.admitted(), ...rest.admitted()]);
    assert.equal(truth.orders.length, 60);
    assert.equal((await readTruth(t.c, v.id)).redisStock, 0);
  });

  it('when the last unit is on its way between segments, then a buyer hears 503 and retry rather than SOLD_OUT, and gets it once it arrives', async () => {
    const v = await createVoucher(t, { stock: 2, segments: 2 });
    const voucher = (await t.c.directory.get(BigInt(v.id)))!;
    const [a, b] = segmentShards(voucher, t.c.keys) as [number, number];
    const homedAt = (shard: number) => Array.from({ length: 1_000 }, (_, i) => 40_000 + i).find((u) => homeShard(voucher, BigInt(u), t.c.keys) === shard)!;
    const first = await claim(t, v.id, homedAt(a));
    assert.equal(first.statusCode, 202, first.body);
    // Segment b's unit is lent to a by a mover that dies before a receives it.
    assert.equal(await t.c.scripts.lend(BigInt(v.id), b, '9', a, 1), 1);
    const buyer = homedAt(b);
    const refused = await claim(t, v.id, buyer, { idempotencyKey: 'k' });
    assert.equal(refused.statusCode, 503, refused.body);
    assert.equal(refused.json().code, 'UNAVAILABLE');
    assert.ok(refused.headers['retry-after']);
    // Reconciliation finishes the move; the buyer's retry borrows the unit.
    assert.equal(await t.c.moves.finishStale(voucher, 0), 1);
    const retried = await claim(t, v.id, buyer, { idempotencyKey: 'k' });
    assert.equal(retried.statusCode, 202, retried.body);
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, [first.json().orderId, retried.json().orderId]);
    assert.deepEqual([truth.orders.length, truth.dbStock, truth.redisStock], [2, 0, 0]);
  });

  it('when a move\'s steps run again late (a slow mover and recovery both finish it), then its units are added once', async () => {
    const v = await createVoucher(t, { stock: 40, segments: 2 });
    const voucher = (await t.c.directory.get(BigInt(v.id)))!;
    const [from, to] = segmentShards(voucher, t.c.keys) as [number, number];
    const stockOf = async (s: number) => Number(await t.c.redis.hget(t.c.keys.voucher(BigInt(v.id), s), 'stock'));
    const lent = await t.c.scripts.lend(BigInt(v.id), from, '7', to, 1);
    assert.equal(lent, 10);
    for (let i = 0; i < 2; i++) {
      assert.equal(await t.c.scripts.receive(BigInt(v.id), to, '7', lent), true);
      await t.c.scripts.forget(BigInt(v.id), from, '7');
    }
    assert.deepEqual([await stockOf(from), await stockOf(to)], [10, 30], 'the 10 units moved once');
    assert.ok((await t.c.audit(BigInt(v.id), { drained: true }))?.ok);
  });
});
