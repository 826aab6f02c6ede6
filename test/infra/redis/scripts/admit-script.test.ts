import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { AdmitCode, type AdmitGroups, MAX_ADMIT_BATCH, NO_RATE_LIMITS } from '../../../../src/infra/redis/scripts/admission.js';
import { createScripts, type Scripts } from '../../../../src/infra/redis/scripts/index.js';
import { type AdmitOne, batchAdmissions } from '../../../../src/claims/admission-batch.js';
import { isCluster } from '../../../../src/infra/redis/client.js';
import { testRedis } from '../../../support/helpers.js';
import { type PrivateRedis, startPrivateRedis } from '../../../../support/private-redis.js';

const { redis, keys } = testRedis('admit', { enableAutoPipelining: true });
const scripts = createScripts(redis, keys);
let nextOrder = 1n;
let nextVoucher = 100n;

async function voucher(stock: number, limit = 1, window: [number, number] = [-60_000, 60_000], waitlistCap = 0) {
  const voucherId = nextVoucher++;
  const now = Date.now();
  await scripts.warm({
    voucherId,
    stock,
    beginMs: now + window[0],
    endMs: now + window[1],
    perUserLimit: limit,
    inflight: 0,
    expireAtSeconds: Math.ceil(now / 1000) + 3600,
    waitlistCap,
  });
  return voucherId;
}

/** A voucher whose keys live on `shard` (on a Cluster, the groups of one admit call share a slot). */
async function voucherOnShard(shard: number, stock: number, limit = 1) {
  while (keys.shardOf(nextVoucher) !== shard) nextVoucher++;
  return voucher(stock, limit);
}

const admit = (voucherId: bigint, userId: bigint, quantity = 1, idempotencyKey?: string) =>
  scripts.admit({ voucherId, userId, orderId: nextOrder++, quantity, idempotencyKey });

describe('admit script', () => {
  it('answers MISSING when the voucher has no state, and writes nothing', async () => {
    const r = await admit(999_999n, 1n);
    assert.equal(r.code, AdmitCode.MISSING);
    assert.equal(await redis.exists(keys.buyers(999_999n)), 0);
  });

  it('admits: takes stock, counts the buyer, records in-flight and appends to the shard stream, with every key in one slot', async () => {
    const v = await voucher(5, 2);
    const r = await admit(v, 7n, 2);
    assert.equal(r.code, AdmitCode.ADMITTED);
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '3');
    assert.equal(await redis.hget(keys.voucher(v), 'inflight'), '1');
    assert.equal(await redis.hget(keys.buyers(v), '7'), '2');
    const record = await redis.hget(keys.inflight(keys.shardOf(v)), r.orderId);
    assert.match(record!, new RegExp(`^${v}\\|7\\|2\\|\\d+\\|\\d+-\\d+$`));
    const entries = await redis.xrange(keys.orders(keys.shardOf(v)), '-', '+');
    const mine = entries.find(([, f]) => f[1]!.startsWith(`${r.orderId}|`));
    assert.ok(mine);
    // One field: the order id, then the in-flight record without its stream id.
    assert.deepEqual(mine[1], ['d', `${r.orderId}|${record!.slice(0, record!.lastIndexOf('|'))}`]);
    assert.equal(record!.slice(record!.lastIndexOf('|') + 1), mine[0]);
    const slots = await Promise.all(
      [
        keys.voucher(v),
        keys.buyers(v),
        keys.idempotency(v),
        keys.inflight(keys.shardOf(v)),
        keys.orders(keys.shardOf(v)),
        keys.waitlist(v),
        keys.waitlistQuantities(v),
        keys.released(v),
      ].map(
        (k) => redis.call('CLUSTER', 'KEYSLOT', k).catch(() => null),
      ),
    );
    if (slots[0] !== null) assert.equal(new Set(slots).size, 1, 'all keys hash to one slot');
  });

  it('orders its checks: limit before stock, and nothing changes on a rejection', async () => {
    const v = await voucher(1, 1);
    assert.equal((await admit(v, 1n)).code, AdmitCode.ADMITTED);
    assert.equal((await admit(v, 1n)).code, AdmitCode.LIMIT_EXCEEDED);
    assert.equal((await admit(v, 2n)).code, AdmitCode.SOLD_OUT);
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '0');
    assert.deepEqual(await redis.hgetall(keys.buyers(v)), { '1': '1' });
  });

  it('uses Redis time for the window', async () => {
    const early = await voucher(5, 1, [60_000, 120_000]);
    const late = await voucher(5, 1, [-120_000, -1]);
    assert.equal((await admit(early, 1n)).code, AdmitCode.NOT_STARTED);
    assert.equal((await admit(late, 1n)).code, AdmitCode.ENDED);
    assert.equal(await redis.hget(keys.voucher(early), 'stock'), '5');
    assert.equal(await redis.hget(keys.voucher(late), 'stock'), '5');
  });

  it('replays an idempotency key with the first order id, and refuses it for another quantity', async () => {
    const v = await voucher(5, 3);
    const first = await admit(v, 3n, 1, 'abc');
    const again = await admit(v, 3n, 1, 'abc');
    assert.deepEqual(again, { code: AdmitCode.REPLAYED, orderId: first.orderId, quantity: 1, waitlisted: false });
    const other = await admit(v, 3n, 2, 'abc');
    assert.equal(other.code, AdmitCode.KEY_REUSED);
    assert.equal(other.orderId, first.orderId);
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '4');
  });

  it('does not overwrite live state when warmed twice', async () => {
    const v = await voucher(5);
    await admit(v, 1n);
    const created = await scripts.warm({ voucherId: v, stock: 5, beginMs: 0, endMs: Date.now() + 60_000, perUserLimit: 1, inflight: 0, expireAtSeconds: Math.ceil(Date.now() / 1000) + 60, waitlistCap: 0 });
    assert.equal(created, false);
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '4');
  });
});

describe('admit script, several claims in one call', () => {
  const claim = (userId: bigint, quantity = 1, idempotencyKey?: string) => ({ userId, orderId: nextOrder++, quantity, idempotencyKey });

  it('when a batch holds more claims than units, then they are decided in order as if one by one: repeats, replays and the sold-out tail included', async () => {
    const v = await voucher(3, 1);
    const results = await scripts.admitMany(v, [
      claim(1n, 1, 'k'),
      claim(1n, 1, 'k'), // the same request again: the same order
      claim(1n), // the same buyer, another request: over the limit
      claim(2n, 2), // more than the limit
      claim(3n),
      claim(4n),
      claim(5n), // nothing left
    ]);
    assert.deepEqual(
      results.map((r) => r.code),
      [AdmitCode.ADMITTED, AdmitCode.REPLAYED, AdmitCode.LIMIT_EXCEEDED, AdmitCode.LIMIT_EXCEEDED, AdmitCode.ADMITTED, AdmitCode.ADMITTED, AdmitCode.SOLD_OUT],
    );
    assert.equal(results[1]!.orderId, results[0]!.orderId);
    assert.ok(results[6]!.closedAtVersion, 'the last claim learns that nobody can buy any more');
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '0');
    assert.equal(await redis.hget(keys.voucher(v), 'inflight'), '3');
    assert.deepEqual(await redis.hgetall(keys.buyers(v)), { '1': '1', '3': '1', '4': '1' });
    const admitted = results.filter((r) => r.code === AdmitCode.ADMITTED).map((r) => r.orderId);
    const records = await redis.hmget(keys.inflight(keys.shardOf(v)), ...admitted);
    assert.ok(records.every((r) => r !== null), 'each admitted order has its in-flight record');
  });

  it('when sold-out claims of one batch join the waitlist, then they keep their order in the batch', async () => {
    const v = await voucher(1, 1, [-60_000, 60_000], 10);
    const users = [9n, 3n, 7n, 1n, 5n]; // not in id order: the list must follow arrival
    await scripts.admitMany(v, [claim(100n), ...users.map((u) => claim(u))]);
    assert.deepEqual(await redis.zrange(keys.waitlist(v), '0', '-1'), users.map((u) => u.toString()));
  });

  it('when the user bucket is on, then each claim of a batch takes a token from its own buyer', async () => {
    const v = await voucher(10, 5);
    const limits = { voucher: { rate: 0, burst: 0 }, user: { rate: 0.01, burst: 1 } }; // a token per 100 s
    const results = await scripts.admitMany(v, [claim(1n), claim(2n), claim(1n)], { limits });
    assert.deepEqual(results.map((r) => r.code), [AdmitCode.ADMITTED, AdmitCode.ADMITTED, AdmitCode.RATE_LIMITED]);
    assert.ok(results[2]!.retryAfterMs! > 0);
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '8');
    assert.equal((await scripts.admitMany(v, [claim(2n)], { limits }))[0]!.code, AdmitCode.RATE_LIMITED, 'the bucket was stored at the end of the batch');
  });

  it('when the voucher bucket holds fewer tokens than a batch has claims, then the first claims take them and the rest wait', async () => {
    const v = await voucher(10, 1);
    const limits = { voucher: { rate: 0.01, burst: 2 }, user: { rate: 0, burst: 0 } };
    const results = await scripts.admitMany(v, [claim(1n), claim(1n), claim(2n), claim(3n)], { limits });
    // The repeat buyer's LIMIT_EXCEEDED took a token too: a claim that reaches the checks has paid.
    assert.deepEqual(results.map((r) => r.code), [AdmitCode.ADMITTED, AdmitCode.LIMIT_EXCEEDED, AdmitCode.RATE_LIMITED, AdmitCode.RATE_LIMITED]);
    assert.equal((await scripts.admitMany(v, [claim(4n)], { limits }))[0]!.code, AdmitCode.RATE_LIMITED);
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '9');
  });

  it('when a call holds groups on several vouchers of a shard, then each group is decided after the ones before it, a voucher without state answers only for its own group, and each admitted order is in flight and in the stream', async () => {
    const a = await voucher(2, 1, [-60_000, 60_000], 10);
    const b = await voucherOnShard(keys.shardOf(a), 5, 2);
    const shard = keys.shardOf(a);
    const results = await scripts.admitGroups([
      { voucherId: a, shard, claims: [claim(1n), claim(2n), claim(3n)], enrol: false }, // the third is short, not waitlisted
      { voucherId: 999_997n, shard, claims: [claim(1n)] },
      { voucherId: b, shard, claims: [claim(1n, 2), claim(1n)] },
      { voucherId: a, shard, claims: [claim(3n), claim(1n)] }, // sees the first group's admissions: sold out, waitlisted; over the limit
    ]);
    assert.deepEqual(
      results.map((group) => group.map((r) => r.code)),
      [
        [AdmitCode.ADMITTED, AdmitCode.ADMITTED, AdmitCode.SEGMENT_SHORT],
        [AdmitCode.MISSING],
        [AdmitCode.ADMITTED, AdmitCode.LIMIT_EXCEEDED],
        [AdmitCode.SOLD_OUT, AdmitCode.LIMIT_EXCEEDED],
      ],
    );
    assert.equal(results[3]![0]!.waitlisted, true);
    assert.deepEqual(await redis.zrange(keys.waitlist(a), '0', '-1'), ['3']);
    assert.deepEqual([await redis.hget(keys.voucher(a), 'stock'), await redis.hget(keys.voucher(b), 'stock')], ['0', '3']);
    assert.deepEqual([await redis.hget(keys.voucher(a), 'inflight'), await redis.hget(keys.voucher(b), 'inflight')], ['2', '1']);
    assert.deepEqual(await redis.hgetall(keys.buyers(b)), { '1': '2' });
    const admitted = results.flat().filter((r) => r.code === AdmitCode.ADMITTED).map((r) => r.orderId);
    const records = await redis.hmget(keys.inflight(shard), ...admitted);
    assert.deepEqual(records.map((r) => r?.split('|')[0]), [String(a), String(a), String(b)]);
    const streamed = (await redis.xrange(keys.orders(shard), '-', '+')).map(([, f]) => f[1]!.split('|')[0]);
    assert.ok(admitted.every((id) => streamed.includes(id)));
  });

  it('when two groups of a call take from the same buckets, then the second sees what the first took', async () => {
    const v = await voucher(10, 5);
    const shard = keys.shardOf(v);
    const limits = { voucher: { rate: 1, burst: 3 }, user: { rate: 1, burst: 1 } };
    const results = await scripts.admitGroups([
      { voucherId: v, shard, claims: [claim(1n), claim(2n)], limits, enrol: false },
      { voucherId: v, shard, claims: [claim(1n), claim(3n), claim(4n)], limits },
    ]);
    const { ADMITTED, RATE_LIMITED } = AdmitCode;
    // Buyer 1's one token went in the first group; the voucher's three to buyers 1, 2 and 3.
    assert.deepEqual(results.map((group) => group.map((r) => r.code)), [[ADMITTED, ADMITTED], [RATE_LIMITED, ADMITTED, RATE_LIMITED]]);
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '7');
  });

  it('answers MISSING for every claim of a batch on a voucher without state, and refuses an empty or oversized batch', async () => {
    const results = await scripts.admitMany(999_998n, [claim(1n), claim(2n)]);
    assert.deepEqual(results.map((r) => r.code), [AdmitCode.MISSING, AdmitCode.MISSING]);
    await assert.rejects(scripts.admitMany(999_998n, []), RangeError);
    await assert.rejects(scripts.admitMany(999_998n, Array.from({ length: MAX_ADMIT_BATCH + 1 }, () => claim(1n))), RangeError);
  });
});

describe('claims batched per event-loop turn', () => {
  /** The real scripts, counting the calls that reach Redis and their groups. */
  function countingScripts(callPerShard: boolean) {
    const calls: { voucherId: bigint; claims: number }[][] = [];
    const admitGroups: AdmitGroups = (groups) => {
      calls.push(groups.map((g) => ({ voucherId: g.voucherId, claims: g.claims.length })));
      return scripts.admitGroups(groups);
    };
    return { calls, admit: batchAdmissions({ admitGroups, keys, limits: NO_RATE_LIMITS, callPerShard }) };
  }
  const claimsOn = (admit: AdmitOne, voucherId: bigint, users: number) =>
    Promise.all(Array.from({ length: users }, (_, i) => admit(voucherId, { userId: BigInt(i + 1), orderId: nextOrder++, quantity: 1 })));

  it('when claims on two vouchers of one shard arrive together, then they share calls of at most MAX_ADMIT_BATCH claims, a group per voucher, and each caller gets its own answer', async () => {
    const a = await voucher(2, 1);
    const b = await voucherOnShard(keys.shardOf(a), 100, 1);
    const { calls, admit } = countingScripts(true);
    const [resultsA, resultsB] = await Promise.all([claimsOn(admit, a, 3), claimsOn(admit, b, MAX_ADMIT_BATCH + 6)]);
    assert.deepEqual(resultsA.map((r) => r.code), [AdmitCode.ADMITTED, AdmitCode.ADMITTED, AdmitCode.SOLD_OUT]);
    assert.ok(resultsB.every((r) => r.code === AdmitCode.ADMITTED));
    assert.equal(new Set(resultsB.map((r) => r.orderId)).size, resultsB.length);
    assert.deepEqual(calls, [
      [{ voucherId: a, claims: 3 }, { voucherId: b, claims: MAX_ADMIT_BATCH - 3 }],
      [{ voucherId: b, claims: 9 }],
    ]);
    assert.equal(await redis.hget(keys.voucher(b), 'stock'), String(100 - MAX_ADMIT_BATCH - 6));
  });

  it('when claims on vouchers of two shards arrive together, then a Cluster gets a call per shard and a single server one call', async () => {
    const a = await voucher(10, 1);
    const b = await voucherOnShard((keys.shardOf(a) + 1) % keys.shards, 10, 1);
    const perShard = countingScripts(true);
    await Promise.all([claimsOn(perShard.admit, a, 2), claimsOn(perShard.admit, b, 2)]);
    assert.deepEqual(perShard.calls, [[{ voucherId: a, claims: 2 }], [{ voucherId: b, claims: 2 }]]);
    if (isCluster(redis)) return; // keys of two slots in one script: CROSSSLOT there
    const oneCall = countingScripts(false);
    const results = await Promise.all([claimsOn(oneCall.admit, a, 3), claimsOn(oneCall.admit, b, 3)]);
    assert.deepEqual(oneCall.calls, [[{ voucherId: a, claims: 3 }, { voucherId: b, claims: 3 }]]);
    // Users 1 and 2 hold their unit from the first turn: over the limit; user 3 is admitted.
    const { ADMITTED, LIMIT_EXCEEDED } = AdmitCode;
    assert.deepEqual(results.flat().map((r) => r.code), [LIMIT_EXCEEDED, LIMIT_EXCEEDED, ADMITTED, LIMIT_EXCEEDED, LIMIT_EXCEEDED, ADMITTED]);
    assert.deepEqual([await redis.hget(keys.voucher(a), 'stock'), await redis.hget(keys.voucher(b), 'stock')], ['7', '7']);
  });

  it('when the call fails, then every claim of its batch fails with the error, and the next turn starts afresh', async () => {
    let fail = true;
    const admit = batchAdmissions({
      admitGroups: (groups) => (fail ? Promise.reject(new Error('connection lost')) : scripts.admitGroups(groups)),
      keys,
      limits: NO_RATE_LIMITS,
      callPerShard: false,
    });
    const v = await voucher(5);
    const failed = await Promise.allSettled([1n, 2n].map((u) => admit(v, { userId: u, orderId: nextOrder++, quantity: 1 })));
    assert.deepEqual(failed.map((r) => r.status), ['rejected', 'rejected']);
    fail = false;
    assert.equal((await admit(v, { userId: 1n, orderId: nextOrder++, quantity: 1 })).code, AdmitCode.ADMITTED);
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '4');
  });
});

describe('waitlist and restock scripts', () => {
  const restock = (voucherId: bigint, order: { orderId: string; userId: bigint; quantity: number }, promotionIds: bigint[] = []) =>
    scripts.restock({ voucherId, orderId: order.orderId, userId: order.userId.toString(), quantity: order.quantity, promotionIds });

  it('when a sold-out voucher has a waitlist, then each user is enrolled once, FIFO, up to its capacity', async () => {
    const v = await voucher(1, 1, [-60_000, 60_000], 2);
    assert.equal((await admit(v, 1n)).code, AdmitCode.ADMITTED);
    assert.deepEqual(await admit(v, 2n), { code: AdmitCode.SOLD_OUT, orderId: '', quantity: 0, waitlisted: true });
    assert.equal((await admit(v, 2n)).waitlisted, true, 'a second attempt says waitlisted again');
    assert.equal((await admit(v, 3n, 1)).waitlisted, true);
    assert.equal((await admit(v, 4n)).waitlisted, false, 'the waitlist is full');
    assert.deepEqual(await redis.zrange(keys.waitlist(v), '0', '-1'), ['2', '3']);
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '0');
  });

  it('gives a released order back exactly once and promotes the head of the waitlist for it', async () => {
    const v = await voucher(1, 1, [-60_000, 60_000], 10);
    const sold = await admit(v, 1n);
    await admit(v, 2n); // waits
    const order = { orderId: sold.orderId, userId: 1n, quantity: 1 };
    const first = await restock(v, order, [nextOrder++]);
    assert.equal(first.kind, 'restocked');
    assert.deepEqual(first.kind === 'restocked' && first.promotions.map((p) => p.userId), ['2']);
    assert.deepEqual(await restock(v, order, [nextOrder++]), { kind: 'already' });
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '0', 'the promoted user took the unit');
    assert.deepEqual(await redis.hgetall(keys.buyers(v)), { '2': '1' });
    assert.equal(await redis.zcard(keys.waitlist(v)), 0);
    const promotedId = first.kind === 'restocked' ? first.promotions[0]!.orderId : '';
    const inflight = await redis.hget(keys.inflight(keys.shardOf(v)), promotedId);
    assert.match(inflight!, new RegExp(`^${v}\\|2\\|1\\|\\d+\\|\\d+-\\d+\\|p$`), 'the promotion is an in-flight order like any admission, marked');
    // Its entry has the one format of every entry, with the mark as a sixth value.
    const entries = await redis.xrange(keys.orders(keys.shardOf(v)), '-', '+');
    const entry = entries.find(([, f]) => f[1]!.startsWith(`${promotedId}|`))!;
    const [voucherId, userId, quantity, createdMs, streamId] = inflight!.split('|');
    assert.deepEqual(entry, [streamId, ['d', `${promotedId}|${voucherId}|${userId}|${quantity}|${createdMs}|p`]]);
  });

  it('skips a waiting user who already holds the limit, and leaves a head that wants more than is free in place', async () => {
    const v = await voucher(2, 1, [-60_000, 60_000], 10);
    const a = await admit(v, 1n);
    await admit(v, 2n);
    assert.equal((await admit(v, 3n)).waitlisted, true);
    assert.equal((await admit(v, 2n)).code, AdmitCode.LIMIT_EXCEEDED, 'a buyer at the limit is refused, not enrolled');
    await redis.zadd(keys.waitlist(v), 1, '2'); // as if user 2 had enrolled first and bought since
    const r = await restock(v, { orderId: a.orderId, userId: 1n, quantity: 1 }, [nextOrder++]);
    assert.ok(r.kind === 'restocked');
    assert.deepEqual(r.promotions.map((p) => p.userId), ['3'], 'user 2 is skipped, user 3 promoted');
    assert.equal(await redis.zcard(keys.waitlist(v)), 0);

    const big = await voucher(1, 3, [-60_000, 60_000], 10);
    const b = await admit(big, 1n);
    await admit(big, 5n, 2); // wants 2
    const r2 = await restock(big, { orderId: b.orderId, userId: 1n, quantity: 1 }, [nextOrder++]);
    assert.deepEqual(r2, { kind: 'restocked', promotions: [] });
    assert.deepEqual(await redis.zrange(keys.waitlist(big), '0', '-1'), ['5'], 'the head keeps its place');
    assert.equal(await redis.hget(keys.voucher(big), 'stock'), '1');
  });

  it('answers missing when the voucher state is gone, and promotes nobody after the sale window', async () => {
    assert.deepEqual(await restock(888_888n, { orderId: '1', userId: 1n, quantity: 1 }), { kind: 'missing' });
    const v = await voucher(1, 1, [-60_000, 1_500], 10);
    const a = await admit(v, 1n);
    await admit(v, 2n);
    await new Promise((r) => setTimeout(r, 1_600));
    assert.deepEqual(await restock(v, { orderId: a.orderId, userId: 1n, quantity: 1 }, [nextOrder++]), { kind: 'restocked', promotions: [] });
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '1');
  });
});

describe('admit script, on a Redis server of its own', () => {
  let own: PrivateRedis;
  let ownRedis: Redis;
  let ownScripts: Scripts;
  before(async () => {
    own = await startPrivateRedis(); // SCRIPT FLUSH would hit every other test file on the shared server
    ownRedis = new Redis(own.url, { enableAutoPipelining: true });
    ownScripts = createScripts(ownRedis, keys);
  });
  after(async () => {
    ownRedis.disconnect();
    await own.stop();
  });

  it('when the script cache is flushed while claims are running, then every claim still gets an answer and stock stays exact', async () => {
    const v = nextVoucher++;
    await ownScripts.warm({ voucherId: v, stock: 100, beginMs: 0, endMs: Date.now() + 60_000, perUserLimit: 1, inflight: 0, expireAtSeconds: Math.ceil(Date.now() / 1000) + 3600, waitlistCap: 0 });
    const claims: Promise<{ code: number }>[] = [];
    for (let u = 1n; u <= 300n; u++) {
      claims.push(ownScripts.admit({ voucherId: v, userId: u, orderId: nextOrder++, quantity: 1 }));
      if (u % 50n === 0n) await ownRedis.script('FLUSH');
    }
    const results = await Promise.all(claims);
    assert.equal(results.filter((r) => r.code === AdmitCode.ADMITTED).length, 100);
    assert.equal(results.filter((r) => r.code === AdmitCode.SOLD_OUT).length, 200);
    assert.equal(await ownRedis.hget(keys.voucher(v), 'stock'), '0');
    assert.equal(await ownRedis.hlen(keys.buyers(v)), 100);
  });
});
