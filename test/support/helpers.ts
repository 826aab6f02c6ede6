// Test harness: every test file gets its own Redis key prefix and its own database, on the real
// servers (scripts/services.sh up), and removes both when it ends.
import { pino } from 'pino';
import { after } from 'node:test';
import { Redis } from 'ioredis';
import { buildApp } from '../../src/app.js';
import { type Config, loadConfig } from '../../src/config.js';
import { type Container, createContainer } from '../../src/container.js';
import type { App } from '../../src/http.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { isMalformed, parseEntry } from '../../src/infra/redis/records.js';

export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const MYSQL_SERVER = process.env.TEST_MYSQL_SERVER ?? 'mysql://root@127.0.0.1:3306';

/** A unique, valid name for this test file's prefix and database. */
export function uniqueName(label: string): string {
  return `t_${label.replace(/[^A-Za-z0-9]/g, '_').slice(0, 20)}_${process.pid}_${Math.floor(Math.random() * 1e6)}`;
}

/** The environment of a test configuration (its own database and prefix). */
export function testEnv(label: string, overrides: Record<string, string> = {}, mysqlServer = MYSQL_SERVER): Record<string, string> {
  const name = uniqueName(label);
  return {
    REDIS_URL,
    DATABASE_URL: `${mysqlServer}/${name}`,
    REDIS_PREFIX: name,
    JWT_SECRET: 'test-secret',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SHARDS: '4',
    ...overrides,
  };
}

export function testConfig(label: string, overrides: Record<string, string> = {}, mysqlServer = MYSQL_SERVER): Config {
  return loadConfig(testEnv(label, overrides, mysqlServer));
}

export async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}

/**
 * A database and Redis prefix of their own for `seckill` processes a test starts, removed after
 * the suite (or file) this is called in: call it in a describe body or at the top level.
 */
export function processData(label: string): { DATABASE_URL: string; REDIS_PREFIX: string } {
  const name = uniqueName(label);
  const data = { DATABASE_URL: `${MYSQL_SERVER}/${name}`, REDIS_PREFIX: name };
  after(async () => {
    await dropDatabase(data.DATABASE_URL);
    const redis = new Redis(REDIS_URL);
    await deleteKeys(redis, `${name}:*`);
    redis.disconnect();
  });
  return data;
}

export interface TestApp {
  app: App;
  c: Container;
  /** The environment its configuration was read from. */
  env: Record<string, string>;
  token(userId: bigint | number, admin?: boolean): Promise<string>;
  admin(): Promise<string>;
  close(): Promise<void>;
}

/** `mysqlServer` lets a test reach the database through a proxy it can cut. */
export async function startTestApp(label: string, overrides: Record<string, string> = {}, mysqlServer = MYSQL_SERVER): Promise<TestApp> {
  const env = testEnv(label, overrides, mysqlServer);
  const config = loadConfig(env);
  const c = await createContainer(config, pino({ level: config.logLevel }), { migrate: true });
  const app = await buildApp(c.appDeps);
  await app.ready();
  return {
    ...instance(app, c, env),
    async close() {
      await app.close();
      await deleteKeys(c.redis, c.keys.pattern());
      await c.close();
      await dropDatabase(config.databaseUrl);
    },
  };
}

function instance(app: App, c: Container, env: Record<string, string>): Omit<TestApp, 'close'> {
  return {
    app,
    c,
    env,
    token: (userId, admin = false) => c.tokens.sign({ userId: BigInt(userId), admin }, 600),
    admin: () => c.tokens.sign({ userId: 1n, admin: true }, 600),
  };
}

/**
 * Another API instance beside `first`: its own container (clients, worker id, caches) and app, on
 * the same database and Redis prefix, as a second `seckill serve` would be. `overrides` change its
 * environment only. Closing it leaves the shared data to `first`.
 */
export async function startSecondInstance(first: TestApp, overrides: Record<string, string> = {}): Promise<TestApp> {
  const env = { ...first.env, ...overrides };
  const config = loadConfig(env);
  const c = await createContainer(config, pino({ level: config.logLevel }));
  const app = await buildApp(c.appDeps);
  await app.ready();
  return {
    ...instance(app, c, env),
    async close() {
      await app.close();
      await c.close();
    },
  };
}

export interface VoucherSpec {
  kind?: 'seckill' | 'limited' | 'common';
  stock?: number;
  perUserLimit?: number;
  beginAt?: Date;
  endAt?: Date;
  [extra: string]: unknown;
}

/** Creates a voucher through the API; by default a seckill sale that is open now. */
export async function createVoucher(t: TestApp, spec: VoucherSpec = {}): Promise<Record<string, any>> {
  const { beginAt = new Date(Date.now() - 60_000), endAt = new Date(Date.now() + 3_600_000), ...rest } = spec;
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/vouchers',
    headers: { authorization: `Bearer ${await t.admin()}` },
    payload: { title: 'test voucher', kind: 'seckill', stock: 10, ...rest, beginAt: beginAt.toISOString(), endAt: endAt.toISOString() },
  });
  if (res.statusCode !== 201) throw new Error(`voucher creation failed: ${res.statusCode} ${res.body}`);
  return res.json();
}

export async function claim(
  t: TestApp,
  voucherId: string,
  userId: bigint | number,
  options: { quantity?: number; idempotencyKey?: string; claimToken?: string } = {},
) {
  const headers: Record<string, string> = { authorization: `Bearer ${await t.token(userId)}` };
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  if (options.claimToken) headers['claim-token'] = options.claimToken;
  return t.app.inject({
    method: 'POST',
    url: `/api/vouchers/${voucherId}/orders`,
    headers,
    ...(options.quantity === undefined ? {} : { payload: { quantity: options.quantity } }),
  });
}

/** Redis' view of a voucher: stock, per-user counts, stream entries, in-flight orders. */
export async function redisView(t: TestApp, voucherId: string) {
  const id = BigInt(voucherId);
  const { redis, keys } = t.c;
  const shard = keys.shardOf(id);
  const [stock, inflightCount] = await redis.hmget(keys.voucher(id), 'stock', 'inflight');
  const buyers = Object.fromEntries(Object.entries(await redis.hgetall(keys.buyers(id))).map(([u, q]) => [u, Number(q)]));
  const entries = (await redis.xrange(keys.orders(shard), '-', '+')).filter((raw) => {
    const e = parseEntry(shard, raw, 1);
    return !isMalformed(e) && e.voucherId === id;
  });
  const inflight = await t.c.inflight.ofVoucher(id);
  return { stock: stock === null ? null : Number(stock), inflightCount: Number(inflightCount ?? 0), buyers, entries, inflight };
}

/** Fires one claim per user concurrently; returns the admitted order ids. */
export async function burst(t: TestApp, voucherId: string, users: number[], quantity?: number): Promise<string[]> {
  const responses = await Promise.all(users.map((u) => claim(t, voucherId, u, quantity === undefined ? {} : { quantity })));
  return responses.filter((r) => r.statusCode === 202).map((r) => r.json().orderId as string);
}

export const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

/** POST /api/orders/:id/pay or /cancel as `userId`. */
export async function orderAction(t: TestApp, action: 'pay' | 'cancel', orderId: string, userId: bigint | number) {
  return t.app.inject({ method: 'POST', url: `/api/orders/${orderId}/${action}`, headers: { authorization: `Bearer ${await t.token(userId)}` } });
}
