// readStores against the real servers: a database of this file's own, migrated by the engine's
// migrations, and Redis keys written where the engine's key space puts them, so the checker's
// independent reading of tables and key names is held to the engine's real layout.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { readStores } from '../../bench/chaos/stores.js';
import { createDb, type Db, dropDatabase, ensureDatabase, migrateToLatest } from '../../src/infra/db/database.js';
import { createKeySpace } from '../../src/infra/redis/keys.js';
import { inflightRecord } from '../../src/infra/redis/records.js';
import { DATABASE_SERVER, REDIS_URL, uniqueName } from '../support/helpers.js';
import { deleteKeys } from '../../support/redis-keys.js';

const name = uniqueName('chaos_stores');
const databaseUrl = `${DATABASE_SERVER}/${name}`;
const keys = createKeySpace(name, 4);
const redis = new Redis(REDIS_URL);
let db: Db;

const ONE = '386094071808000123'; // one segment, on the shard the engine computes
const TWO = '386094071808000456'; // two segments, on shards 1 and 3
const TORN = '386094071808000789'; // two segments, one of them lost
const OTHER = '386094071808000999'; // not asked for
const STAMP = new Date('2026-03-04T05:06:07.891Z');

function voucher(id: string, stock: number, segmentShards: string | null) {
  return {
    id,
    title: `v${id}`,
    kind: 'seckill' as const,
    initial_stock: 10,
    stock,
    begin_at: new Date('2026-01-01T00:00:00Z'),
    end_at: new Date('2027-01-01T00:00:00Z'),
    per_user_limit: 2,
    payment_timeout_seconds: 900,
    waitlist: false,
    claim_token: false,
    segment_shards: segmentShards,
  };
}

function order(id: string, voucherId: string, userId: string, status: 'pending_payment' | 'paid' | 'cancelled' | 'failed', extra: { idempotency_key?: string; failure_reason?: string } = {}) {
  return { id, voucher_id: voucherId, user_id: userId, quantity: 1, status, created_at: STAMP, expires_at: null, updated_at: STAMP, ...extra };
}

before(async () => {
  await ensureDatabase(databaseUrl);
  db = createDb(databaseUrl, 2);
  await migrateToLatest(db);
  await db.insertInto('vouchers').values([voucher(ONE, 8, null), voucher(TWO, 9, '1,3'), voucher(TORN, 10, '0,2'), voucher(OTHER, 10, null)]).execute();
  await db
    .insertInto('orders')
    .values([
      order('900000000000000001', ONE, '9007199254740993', 'pending_payment', { idempotency_key: 'key-1' }),
      order('900000000000000002', ONE, '7', 'paid'),
      order('900000000000000003', ONE, '7', 'cancelled'),
      order('900000000000000004', TWO, '8', 'failed', { failure_reason: 'poison' }),
      order('900000000000000005', OTHER, '8', 'paid'),
    ])
    .execute();
  await db
    .insertInto('user_quantities')
    .values([
      { voucher_id: ONE, user_id: '9007199254740993', quantity: 1 },
      { voucher_id: ONE, user_id: '7', quantity: 1 },
      { voucher_id: OTHER, user_id: '8', quantity: 1 },
    ])
    .execute();

  const one = keys.shardOf(BigInt(ONE));
  await redis.hset(keys.voucher(BigInt(ONE)), { stock: 8, limit: 2 });
  await redis.hset(keys.buyers(BigInt(ONE)), { '9007199254740993': 1, '7': 1 });
  await redis.hset(keys.idempotency(BigInt(ONE)), '7:k', '900000000000000002:1'); // a neighbour key that is no state
  await redis.hset(keys.voucher(BigInt(TWO), 1), { stock: 4 });
  await redis.hset(keys.voucher(BigInt(TWO), 3), { stock: 5 });
  await redis.hset(keys.buyers(BigInt(TWO), 3), { '8': 1 });
  await redis.hset(keys.voucher(BigInt(TORN), 0), { stock: 5 });
  await redis.hset(keys.voucher(BigInt(OTHER)), { stock: 9 });
  const admitted = { voucherId: TWO, userId: '8', quantity: 1, createdAt: STAMP, streamId: '1-0', shard: 3, promoted: false };
  await redis.hset(keys.inflight(3), '900000000000000006', inflightRecord({ ...admitted, orderId: '900000000000000006' }));
  await redis.hset(keys.inflight(one), '900000000000000007', inflightRecord({ ...admitted, voucherId: OTHER, orderId: '900000000000000007', shard: one }));
});

after(async () => {
  await db?.destroy();
  await dropDatabase(databaseUrl);
  await deleteKeys(redis, keys.pattern());
  redis.disconnect();
});

describe('readStores', () => {
  it('reads the vouchers, orders and held units asked for, with exact ids and UTC times', async () => {
    const stores = await readStores({ databaseUrl, voucherIds: [ONE, TWO, TORN] });
    assert.equal(stores.redis, null);
    const byId = <T extends { id: string }>(xs: T[]) => [...xs].sort((a, b) => a.id.localeCompare(b.id));
    assert.deepEqual(byId(stores.vouchers), [
      { id: ONE, kind: 'seckill', initialStock: 10, stock: 8, perUserLimit: 2, segmentShards: null },
      { id: TWO, kind: 'seckill', initialStock: 10, stock: 9, perUserLimit: 2, segmentShards: '1,3' },
      { id: TORN, kind: 'seckill', initialStock: 10, stock: 10, perUserLimit: 2, segmentShards: '0,2' },
    ]);
    const at = STAMP.getTime();
    assert.deepEqual(byId(stores.orders), [
      { id: '900000000000000001', voucherId: ONE, userId: '9007199254740993', quantity: 1, status: 'pending_payment', failureReason: null, idempotencyKey: 'key-1', updatedAt: at },
      { id: '900000000000000002', voucherId: ONE, userId: '7', quantity: 1, status: 'paid', failureReason: null, idempotencyKey: null, updatedAt: at },
      { id: '900000000000000003', voucherId: ONE, userId: '7', quantity: 1, status: 'cancelled', failureReason: null, idempotencyKey: null, updatedAt: at },
      { id: '900000000000000004', voucherId: TWO, userId: '8', quantity: 1, status: 'failed', failureReason: 'poison', idempotencyKey: null, updatedAt: at },
    ]);
    assert.deepEqual(
      [...stores.userQuantities].sort((a, b) => a.userId.localeCompare(b.userId)),
      [
        { voucherId: ONE, userId: '7', quantity: 1 },
        { voucherId: ONE, userId: '9007199254740993', quantity: 1 },
      ],
    );
  });

  it('reads Redis by the key layout alone: stock and buyers summed over segments, a lost segment as no stock, in-flight records per voucher', async () => {
    const stores = await readStores({ databaseUrl, redisUrl: REDIS_URL, prefix: name, voucherIds: [ONE, TWO, TORN] });
    assert.deepEqual(
      [...stores.redis!].sort((a, b) => a.voucherId.localeCompare(b.voucherId)),
      [
        { voucherId: ONE, stock: 8, buyers: { '9007199254740993': 1, '7': 1 }, inflight: 0 },
        { voucherId: TWO, stock: 9, buyers: { '8': 1 }, inflight: 1 },
        { voucherId: TORN, stock: null, buyers: {}, inflight: 0 },
      ],
    );
  });

  it('reads nothing for no vouchers', async () => {
    assert.deepEqual(await readStores({ databaseUrl, voucherIds: [] }), { vouchers: [], orders: [], userQuantities: [], redis: null });
  });
});
