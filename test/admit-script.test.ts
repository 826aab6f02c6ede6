import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { createKeySpace } from '../src/infra/redis/keys.js';
import { AdmitCode, createScripts, type Scripts } from '../src/infra/redis/scripts.js';
import { deleteKeys, REDIS_URL, uniqueName } from './helpers.js';

const keys = createKeySpace(uniqueName('admit'), 4);
let redis: Redis;
let scripts: Scripts;
let nextOrder = 1n;
let nextVoucher = 100n;

before(() => {
  redis = new Redis(REDIS_URL, { enableAutoPipelining: true });
  scripts = createScripts(redis, keys);
});
after(async () => {
  await deleteKeys(redis, keys.pattern());
  redis.disconnect();
});

async function voucher(stock: number, limit = 1, window: [number, number] = [-60_000, 60_000]) {
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
    const mine = entries.find(([, f]) => f[1] === r.orderId);
    assert.ok(mine);
    assert.deepEqual(mine[1].slice(0, 8), ['o', r.orderId, 'v', String(v), 'u', '7', 'q', '2']);
    const slots = await Promise.all(
      [keys.voucher(v), keys.buyers(v), keys.idempotency(v), keys.inflight(keys.shardOf(v)), keys.orders(keys.shardOf(v))].map(
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
    assert.deepEqual(again, { code: AdmitCode.REPLAYED, orderId: first.orderId, quantity: 1 });
    const other = await admit(v, 3n, 2, 'abc');
    assert.equal(other.code, AdmitCode.KEY_REUSED);
    assert.equal(other.orderId, first.orderId);
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '4');
  });

  it('does not overwrite live state when warmed twice', async () => {
    const v = await voucher(5);
    await admit(v, 1n);
    const created = await scripts.warm({ voucherId: v, stock: 5, beginMs: 0, endMs: Date.now() + 60_000, perUserLimit: 1, inflight: 0, expireAtSeconds: Math.ceil(Date.now() / 1000) + 60 });
    assert.equal(created, false);
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '4');
  });

  it('when the script cache is flushed while claims are running, then every claim still gets an answer and stock stays exact', async () => {
    const v = await voucher(100, 1);
    const claims: Promise<{ code: number }>[] = [];
    for (let u = 1n; u <= 300n; u++) {
      claims.push(admit(v, u));
      if (u % 50n === 0n) await redis.script('FLUSH');
    }
    const results = await Promise.all(claims);
    assert.equal(results.filter((r) => r.code === AdmitCode.ADMITTED).length, 100);
    assert.equal(results.filter((r) => r.code === AdmitCode.SOLD_OUT).length, 200);
    assert.equal(await redis.hget(keys.voucher(v), 'stock'), '0');
    assert.equal(await redis.hlen(keys.buyers(v)), 100);
  });
});
