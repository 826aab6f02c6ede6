import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type AdmitClaim, AdmitCode, type AdmitOptions, MAX_ADMIT_BATCH, NO_RATE_LIMITS } from '../../../../src/infra/redis/scripts/admission.js';
import { createScripts, type Scripts } from '../../../../src/infra/redis/scripts/index.js';
import { batchAdmissions } from '../../../../src/claims/admission-batch.js';
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

  it('answers MISSING for every claim of a batch on a voucher without state, and refuses an empty or oversized batch', async () => {
    const results = await scripts.admitMany(999_998n, [claim(1n), claim(2n)]);
    assert.deepEqual(results.map((r) => r.code), [AdmitCode.MISSING, AdmitCode.MISSING]);
    await assert.rejects(scripts.admitMany(999_998n, []), RangeError);
    await assert.rejects(scripts.admitMany(999_998n, Array.from({ length: MAX_ADMIT_BATCH + 1 }, () => claim(1n))), RangeError);
  });
});

describe('claims batched per voucher and event-loop turn', () => {
  /** The real scripts, counting the calls that reach Redis. */
  function countingScripts() {
    const calls: { voucherId: bigint; claims: number }[] = [];
    const counted = {
      admitMany: (voucherId: bigint, claims: AdmitClaim[], options?: AdmitOptions) => {
        calls.push({ voucherId, claims: claims.length });
        return scripts.admitMany(voucherId, claims, options);
      },
    };
    return { calls, admit: batchAdmissions(counted, NO_RATE_LIMITS) };
  }

  it('when claims on two vouchers arrive together, then each voucher gets one call and each caller its own answer', async () => {
    const a = await voucher(2, 1);
    const b = await voucher(100, 1);
    const { calls, admit } = countingScripts();
    const onA = [1n, 2n, 3n].map((u) => admit(a, { userId: u, orderId: nextOrder++, quantity: 1 }));
    const onB = Array.from({ length: MAX_ADMIT_BATCH + 6 }, (_, i) => admit(b, { userId: BigInt(i + 1), orderId: nextOrder++, quantity: 1 }));
    const resultsA = await Promise.all(onA);
    const resultsB = await Promise.all(onB);
    assert.deepEqual(resultsA.map((r) => r.code), [AdmitCode.ADMITTED, AdmitCode.ADMITTED, AdmitCode.SOLD_OUT]);
    assert.ok(resultsB.every((r) => r.code === AdmitCode.ADMITTED));
    assert.equal(new Set(resultsB.map((r) => r.orderId)).size, resultsB.length);
    assert.deepEqual(calls, [
      { voucherId: a, claims: 3 },
      { voucherId: b, claims: MAX_ADMIT_BATCH },
      { voucherId: b, claims: 6 },
    ]);
    assert.equal(await redis.hget(keys.voucher(b), 'stock'), String(100 - MAX_ADMIT_BATCH - 6));
  });

  it('when the call fails, then every claim of its batch fails with the error, and the next turn starts afresh', async () => {
    let fail = true;
    const admit = batchAdmissions(
      { admitMany: (v, c, l) => (fail ? Promise.reject(new Error('connection lost')) : scripts.admitMany(v, c, l)) },
      NO_RATE_LIMITS,
    );
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
