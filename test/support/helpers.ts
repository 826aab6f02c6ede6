// Test harness: every test file gets its own Redis key prefix and its own database, on the real
// servers (scripts/services.sh up), and removes both when it ends.
import { type DestinationStream, pino } from 'pino';
import { after } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis, type RedisOptions } from 'ioredis';
import { buildApp } from '../../src/app.js';
import { type Config, loadConfig } from '../../src/config.js';
import { type Container, createContainer } from '../../src/container.js';
import type { App } from '../../src/http.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { createKeySpace, type KeySpace } from '../../src/infra/redis/keys.js';
import { isMalformed, parseEntry } from '../../src/infra/redis/records.js';
import { deleteKeys } from '../../support/redis-keys.js';

export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** Set by scripts/test.sh for its second pass: the apps of the tests run on this Redis Cluster. */
const REDIS_CLUSTER_NODES = process.env.TEST_REDIS_CLUSTER_NODES;
/** The database server, without a database: MariaDB by default, PostgreSQL in scripts/test.sh's last pass. */
export const DATABASE_SERVER = process.env.TEST_DATABASE_SERVER || 'mysql://root@127.0.0.1:3306';

/** DATABASE_SERVER's port, and the same server reached on another port (a proxy in front of it). */
export const DATABASE_PORT = Number(new URL(DATABASE_SERVER).port || (DATABASE_SERVER.startsWith('postgres') ? 5432 : 3306));
export function databaseServerVia(port: number): string {
  const u = new URL(DATABASE_SERVER);
  u.port = String(port);
  return u.toString().replace(/\/$/, '');
}

/** A unique, valid name for this test file's prefix and database: 32 characters at most (REDIS_PREFIX), whatever the pid. */
export function uniqueName(label: string): string {
  return `t_${label.replace(/[^A-Za-z0-9]/g, '_').slice(0, 15)}_${process.pid}_${Math.floor(Math.random() * 1e6)}`;
}

/** The environment of a test configuration (its own database and prefix). */
export function testEnv(label: string, overrides: Record<string, string> = {}, databaseServer = DATABASE_SERVER): Record<string, string> {
  const name = uniqueName(label);
  return {
    REDIS_URL,
    DATABASE_URL: `${databaseServer}/${name}`,
    REDIS_PREFIX: name,
    JWT_SECRET: 'test-secret',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SHARDS: '4',
    ...(REDIS_CLUSTER_NODES ? { REDIS_CLUSTER_NODES } : {}),
    ...overrides,
  };
}

export function testConfig(label: string, overrides: Record<string, string> = {}, databaseServer = DATABASE_SERVER): Config {
  return loadConfig(testEnv(label, overrides, databaseServer));
}

/**
 * A Redis connection and key space (4 shards) of their own, for tests of scripts and streams
 * without an app: the keys are deleted and the connection closed after the suite (or file) this
 * is called in; call it in a describe body or at the top level.
 */
export function testRedis(label: string, options: RedisOptions = {}): { redis: Redis; keys: KeySpace } {
  const keys = createKeySpace(uniqueName(label), 4);
  const redis = new Redis(REDIS_URL, options);
  after(async () => {
    await deleteKeys(redis, keys.pattern());
    redis.disconnect();
  });
  return { redis, keys };
}

/**
 * A database and Redis prefix of their own for `seckill` processes a test starts, removed after
 * the suite (or file) this is called in: call it in a describe body or at the top level.
 */
export function processData(label: string): { DATABASE_URL: string; REDIS_PREFIX: string } {
  const name = uniqueName(label);
  const data = { DATABASE_URL: `${DATABASE_SERVER}/${name}`, REDIS_PREFIX: name };
  after(async () => {
    await dropDatabase(data.DATABASE_URL);
    const redis = new Redis(REDIS_URL);
    await deleteKeys(redis, `${name}:*`);
    redis.disconnect();
  });
  return data;
}

/**
 * What an app (or anything else a test starts) is closed after: a test's own context, whose
 * `after` runs when that test ends (`it('…', async (ctx) => { … startTestApp(ctx, …) })`), or
 * suiteScope() for a file or a describe body.
 */
export interface Scope {
  after(fn: () => unknown): void;
}

/**
 * The scope of the file or describe body this is called in (at its top level, not in a hook or a
 * test): what is handed to its `after` runs, in that order, once the file's or the suite's tests
 * are done, even when it is handed over later, in a before() hook of that suite. Node 20's
 * SuiteContext has no after() of its own: this stands in for it.
 */
export function suiteScope(): Scope {
  const steps: (() => unknown)[] = [];
  after(() => allSteps(steps.map((step) => async () => step())));
  return { after: (fn) => void steps.push(fn) };
}

export interface TestApp {
  app: App;
  c: Container;
  /** The environment its configuration was read from. */
  env: Record<string, string>;
  token(userId: bigint | number, admin?: boolean): Promise<string>;
  admin(): Promise<string>;
  /** Runs once, however often it is called (its scope's after calls it too). */
  close(): Promise<void>;
}

/** What runs on a first app's data and closes before it: second instances and containers. */
const dependents = new WeakMap<TestApp, { close(): Promise<void> }[]>();

/** Runs every step in order, even after one fails; then fails with the first error. */
async function allSteps(steps: (() => Promise<unknown>)[]): Promise<void> {
  let first: unknown;
  for (const step of steps) await step().catch((err: unknown) => (first ??= err));
  if (first) throw first;
}

/**
 * A step of an app's close that runs longer is reported by name on stderr and left behind (the
 * runner's force exit ends it): the file's tests have passed or failed by then, and a close that
 * hangs (the container's, rarely, after test/faults/master-change.test.ts restarts Redis; not yet
 * explained) is reported, not a failure of the file.
 */
const CLOSE_STEP_MS = 60_000;
const bounded = (name: string, step: () => Promise<unknown>) => async () => {
  const late = await Promise.race([step().then(() => false), sleep(CLOSE_STEP_MS, true, { ref: false })]);
  if (late) process.stderr.write(`closing the test app: ${name} did not finish within ${CLOSE_STEP_MS / 1000} s; left behind\n`);
};

/** `close` made to run once; every caller awaits the same promise. */
function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | null = null;
  return () => (closing ??= close());
}

/**
 * The app of a test file: its own database and Redis prefix, removed when it closes. It closes by
 * itself after `scope` (a test's context, or suiteScope() of the file or suite that holds it),
 * having closed what was started on its data first; a test may close it earlier: at the top level
 * of a file `const t = await startTestApp(suiteScope(), …)`, in a test `startTestApp(ctx, …)`, and
 * for a suite's tests `describe('…', () => { const s = suiteScope(); before(async () => { app =
 * await startTestApp(s, …) }) })`. `databaseServer` lets a test reach the database through a proxy
 * it can cut; `logTo` takes the app's log lines (stdout when absent).
 */
export async function startTestApp(
  scope: Scope,
  label: string,
  overrides: Record<string, string> = {},
  databaseServer = DATABASE_SERVER,
  logTo?: DestinationStream,
): Promise<TestApp> {
  const env = testEnv(label, overrides, databaseServer);
  const config = loadConfig(env);
  const c = await createContainer(config, pino({ level: config.logLevel }, logTo), { migrate: true });
  const app = await buildApp(c.appDeps);
  await app.ready();
  const started: { close(): Promise<void> }[] = [];
  const t: TestApp = {
    ...instance(app, c, env),
    // Every step runs even when one fails (a test that killed Redis), so nothing keeps the file's process alive.
    close: once(() =>
      allSteps([
        ...started.reverse().map((other) => bounded('an instance started on its data', () => other.close())),
        bounded('app.close()', () => app.close()),
        bounded('deleting its keys', () => deleteKeys(c.redis, c.keys.pattern())),
        bounded('the container', () => c.close()),
        bounded('dropping its database', () => dropDatabase(config.databaseUrl)),
      ]),
    ),
  };
  dependents.set(t, started);
  scope.after(() => t.close());
  return t;
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

/** Registers `close` to run after `scope`, and before `first` closes. */
function closeWithFirst(scope: Scope, first: TestApp, close: () => Promise<void>): void {
  const list = dependents.get(first);
  if (!list) throw new Error('startTestApp() did not start this app');
  list.push({ close });
  scope.after(close);
}

/**
 * A second container beside `first`'s (clients, worker id, caches), on the same database and
 * Redis prefix, as another process would have; `overrides` change its environment only. It closes
 * after `scope` (as startTestApp's), before `first` in any case, and leaves the data to `first`.
 */
export async function startSecondContainer(scope: Scope, first: TestApp, overrides: Record<string, string> = {}): Promise<Container> {
  const config = loadConfig({ ...first.env, ...overrides });
  const c = await createContainer(config, pino({ level: config.logLevel }));
  closeWithFirst(scope, first, () => c.close());
  return c;
}

/**
 * Another API instance beside `first`: a second container (startSecondContainer) and its own app,
 * as a second `seckill serve` would be. Closes like the container.
 */
export async function startSecondInstance(scope: Scope, first: TestApp, overrides: Record<string, string> = {}): Promise<TestApp> {
  const env = { ...first.env, ...overrides };
  const config = loadConfig(env);
  const c = await createContainer(config, pino({ level: config.logLevel }));
  const app = await buildApp(c.appDeps);
  await app.ready();
  const second: TestApp = {
    ...instance(app, c, env),
    close: once(async () => {
      await app.close();
      await c.close();
    }),
  };
  closeWithFirst(scope, first, second.close);
  return second;
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
