// The measurements of one store, each through the engine's own process, routes and code: a
// `seckill serve` started on the store (start-up and warm-up), claims, payments, the payment
// timer, a buyer's order list, a voucher's stats, reconciliation, the audit, memory with open
// event streams; then, with the server stopped, the order pipeline's drain of a backlog.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { createCore } from '../../src/composition/core.js';
import { createContainer } from '../../src/container.js';
import type { Db } from '../../src/infra/db/database.js';
import { dialectOf } from '../../src/infra/db/dialect.js';
import type { RedisClient } from '../../src/infra/redis/client.js';
import { type Credentials, mintCredentials } from '../../src/loadgen/credentials.js';
import { driveLoad } from '../../src/loadgen/driver.js';
import { JsonClient } from '../../src/loadgen/http-client.js';
import { RequestPlan } from '../../src/loadgen/plan.js';
import { SaleRecorder } from '../../src/loadgen/recorder.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { cpuMeter, type CpuSample } from '../drain/probes.js';
import { drainWithPipeline, prefill, verifySale } from '../drain/scenarios.js';
import { JWT_SECRET, startServer } from './server.js';
import { LONG_BUYER } from './year.js';
import { median, percentile } from '../support/stats.js';

export interface StoreRef {
  label: 'empty' | 'year';
  databaseUrl: string;
  redisUrl: string;
  /** The voucher with the most orders, a live voucher with few, every live one, the buyer with the most orders. */
  hotVoucher: string;
  smallVoucher: string;
  liveVouchers: string[];
  longBuyer: string;
}

export interface Sizes {
  claims: number;
  connections: number;
  expiries: number;
  drain: number;
  streams: number;
  reads: number;
}

/** Every figure of one store in one round (times in ms unless named otherwise). */
export type Figures = Record<string, number>;

const DUE_LEAD_MS = 4_000;

async function timed(n: number, call: () => Promise<{ status: number; body: unknown }>, expect = 200): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const at = performance.now();
    const res = await call();
    ms.push(performance.now() - at);
    if (res.status !== expect) throw new Error(`answered ${res.status}, expected ${expect}: ${JSON.stringify(res.body).slice(0, 300)}`);
  }
  return ms;
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

/** Unpaid stored orders on fresh seckill vouchers, all due at once DUE_LEAD_MS from now, as the pipeline would have left them. */
async function seedDue(db: Db, redis: RedisClient, c: Awaited<ReturnType<typeof createCore>>, count: number, idBase: bigint): Promise<{ dueAt: number; vouchers: bigint[] }> {
  const vouchers = [0n, 1n, 2n, 3n].map((k) => idBase * 16n + k);
  const per = Math.ceil(count / vouchers.length);
  const now = Date.now();
  const begin = new Date(now - 60_000);
  const end = new Date(now + 3_600_000);
  const dueAt = now + DUE_LEAD_MS + Math.ceil(count / 20);
  let orderId = idBase * 1_000_000_000n;
  for (const [k, id] of vouchers.entries()) {
    const n = Math.min(per, count - k * per);
    await db.insertInto('vouchers').values({
      id: id.toString(), title: `history expiry ${k}`, kind: 'seckill', initial_stock: n, stock: 0, begin_at: begin, end_at: end,
      per_user_limit: 1, payment_timeout_seconds: 60, waitlist: false, claim_token: false,
    }).execute();
    await c.scripts.warm({
      voucherId: id, stock: 0, beginMs: begin.getTime(), endMs: end.getTime(), perUserLimit: 1, inflight: 0,
      expireAtSeconds: Math.ceil(end.getTime() / 1000) + 3600, waitlistCap: 0,
    });
    for (let i = 0; i < n; i += 2_000) {
      const users = Array.from({ length: Math.min(2_000, n - i) }, (_, j) => String(5_000_000 + k * per + i + j));
      await db.insertInto('orders').values(users.map((u) => ({
        id: String(orderId++), voucher_id: id.toString(), user_id: u, quantity: 1, status: 'pending_payment' as const,
        created_at: new Date(now), expires_at: new Date(dueAt),
      }))).execute();
      await db.insertInto('user_quantities').values(users.map((u) => ({ voucher_id: id.toString(), user_id: u, quantity: 1 }))).execute();
      await redis.hset(c.keys.buyers(id), Object.fromEntries(users.map((u) => [u, 1])));
    }
  }
  return { dueAt, vouchers };
}

/** Opens `count` event streams, one buyer each; resolves once every one answered 200. */
async function openStreams(origin: string, tokens: string[]): Promise<{ close(): void }> {
  const u = new URL(origin);
  const open: http.ClientRequest[] = [];
  await pool(tokens, 200, (token) => new Promise<void>((resolve, reject) => {
    const req = http.get({ host: u.hostname, port: u.port, path: '/api/orders/events', agent: false, headers: { authorization: token, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`event stream answered ${res.statusCode}`));
      res.on('error', () => {});
      res.resume();
      resolve();
    });
    req.on('error', (err) => (open.includes(req) ? undefined : reject(err)));
    open.push(req);
  }));
  return { close: () => open.forEach((r) => r.destroy()) };
}

export async function measureStore(store: StoreRef, sizes: Sizes, round: number): Promise<{ figures: Figures; cpu: Record<string, CpuSample>; errors: string[] }> {
  const f: Figures = {};
  const errors: string[] = [];
  const cpu: Record<string, CpuSample> = {};
  const prefix = `bh${process.pid}r${round}${store.label[0]}`;
  const env = { DATABASE_URL: store.databaseUrl, REDIS_URL: store.redisUrl, REDIS_PREFIX: prefix };
  const log = pino({ level: 'warn' }, process.stderr);
  const core = await createCore(loadConfig({ ...env, LOG_LEVEL: 'warn' }), log);
  const idBase = BigInt(700 + round * 10 + (store.label === 'year' ? 1 : 0));
  try {
    // --- start-up: spawn → ready, then every live voucher's Redis state rebuilt through the API
    const server = await startServer(env);
    const credentials: Credentials = await mintCredentials({ secret: JWT_SECRET, buyers: Math.max(sizes.claims, sizes.streams) + 2_000, firstUserId: 1n, ttlSeconds: 3600 });
    const admin = new JsonClient(server.origin, 64);
    const as = (token: string) => ({ headers: { authorization: token } });
    try {
      f.readyMs = server.readyMs;
      let at = performance.now();
      for (const id of store.liveVouchers) {
        const res = await admin.request('GET', `/api/vouchers/${id}`, as(credentials.admin));
        if (res.status !== 200) throw new Error(`GET voucher ${id}: ${res.status}`);
      }
      f.warmMs = performance.now() - at;
      f.startupMs = f.readyMs + f.warmMs;
      f.rssIdleMiB = server.rssMiB();

      // --- claims: a JIT warm-up sale, then the measured one; every buyer once, stock for all
      const sale = async (buyers: Credentials, requests: number) => {
        const created = await admin.request('POST', '/api/vouchers', {
          ...as(credentials.admin),
          body: { title: 'history claims', kind: 'seckill', stock: requests, paymentTimeoutSeconds: 3600, beginAt: new Date(Date.now() - 1000).toISOString(), endAt: new Date(Date.now() + 3_600_000).toISOString() },
        });
        if (created.status !== 201) throw new Error(`voucher not created: ${created.status} ${JSON.stringify(created.body)}`);
        const voucherId = String(created.body.id);
        const plan = new RequestPlan({ buyers: requests, repeatShare: 0, sameKeyShare: 0, seed: round, keyTag: `h${round}${store.label}` });
        const recorder = new SaleRecorder(performance.now());
        const meter = cpuMeter(core.db);
        const serverBefore = server.cpuUs();
        const window = await driveLoad({ origin: server.origin, path: `/api/vouchers/${voucherId}/orders`, connections: sizes.connections, requests, timeoutMs: 30_000 }, plan, buyers, recorder);
        const serverUs = server.cpuUs() - serverBefore;
        const seconds = (window.endedAt - window.startedAt) / 1000;
        return { voucherId, recorder, seconds, serverUs, machine: meter() };
      };
      const warmup = Math.min(2_000, sizes.claims);
      await sale({ admin: credentials.admin, buyers: credentials.buyers.slice(sizes.claims, sizes.claims + warmup) }, warmup);
      const claim = await sale({ admin: credentials.admin, buyers: credentials.buyers.slice(0, sizes.claims) }, sizes.claims);
      const admitted = claim.recorder.orderIds.length;
      if (admitted !== sizes.claims) throw new Error(`${admitted} of ${sizes.claims} claims admitted (${JSON.stringify([...claim.recorder.outcomes])})`);
      f.claimsPerS = claim.recorder.latency.count / claim.seconds;
      f.claimP99Ms = claim.recorder.latency.summary().p99Ms;
      f.serverCpuUsPerAdmission = claim.serverUs / admitted;
      cpu.claims = claim.machine;
      at = performance.now();
      for (;;) {
        const stats = await admin.request('GET', `/api/vouchers/${claim.voucherId}/stats`, as(credentials.admin));
        if (stats.body.inFlight === 0) break;
        if (performance.now() - at > 120_000) throw new Error(`claims not stored within 120 s: ${JSON.stringify(stats.body)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      f.claimsStoredLagMs = performance.now() - at;

      // --- payments: every admitted order paid by its buyer, 64 at a time
      const paid: number[] = [];
      const payStarted = performance.now();
      const payCpu = server.cpuUs();
      await pool(claim.recorder.orderIds, 64, async (orderId) => {
        const t = performance.now();
        const res = await admin.request('POST', `/api/orders/${orderId}/pay`, as(credentials.buyers[claim.recorder.buyerOf.get(orderId)!]!));
        if (res.status !== 200) throw new Error(`pay ${orderId}: ${res.status} ${JSON.stringify(res.body)}`);
        paid.push(performance.now() - t);
      });
      f.paymentsPerS = paid.length / ((performance.now() - payStarted) / 1000);
      f.paymentP99Ms = percentile(paid, 99);
      f.serverCpuUsPerPayment = (server.cpuUs() - payCpu) / paid.length;

      // --- payment timer: unpaid orders all due at once; time and CPU until every unit is back
      const due = await seedDue(core.db, core.redis, core, sizes.expiries, idBase);
      await new Promise((r) => setTimeout(r, Math.max(0, due.dueAt - Date.now())));
      const expiryMeter = cpuMeter(core.db);
      const expiryServer = server.cpuUs();
      const expiryStart = performance.now();
      const ids = due.vouchers.map(String);
      for (;;) {
        const [left] = await Promise.all([
          core.db.selectFrom('orders').select(sql<number>`count(*)`.as('n')).where('voucher_id', 'in', ids).where('status', '=', 'pending_payment').executeTakeFirstOrThrow(),
        ]);
        const outbox = await core.db.selectFrom('release_outbox').select(sql<number>`count(*)`.as('n')).where('voucher_id', 'in', ids).executeTakeFirstOrThrow();
        if (Number(left.n) + Number(outbox.n) === 0) break;
        if (performance.now() - expiryStart > 300_000) throw new Error('expiry not done within 300 s');
        await new Promise((r) => setTimeout(r, 50));
      }
      const expiryS = (performance.now() - expiryStart) / 1000;
      cpu.expiry = expiryMeter();
      f.expiriesPerS = sizes.expiries / expiryS;
      f.expiryCpuUsPerOrder = (((server.cpuUs() - expiryServer) / 1e6 + cpu.expiry.database) * 1e6) / sizes.expiries;
      for (const id of due.vouchers) {
        const back = Number(await core.redis.hget(core.keys.voucher(id), 'stock'));
        const row = await core.db.selectFrom('vouchers').select(['stock', 'initial_stock']).where('id', '=', id.toString()).executeTakeFirstOrThrow();
        if (back !== row.initial_stock || row.stock !== row.initial_stock) throw new Error(`expiry voucher ${id}: Redis ${back}, DB ${row.stock}, initial ${row.initial_stock}`);
      }

      // --- reads; one that fails is reported and the others still run
      const longBuyerToken = (await mintCredentials({ secret: JWT_SECRET, buyers: 1, firstUserId: BigInt(store.longBuyer), ttlSeconds: 3600 })).buyers[0]!;
      const attempt = async (name: string, fn: () => Promise<void>) => {
        try {
          await fn();
        } catch (err) {
          errors.push(`${name}: ${(err as Error).message}`);
        }
      };
      await attempt('list orders', async () => {
        const list = await timed(sizes.reads, () => admin.request('GET', '/api/orders?limit=50', as(longBuyerToken)));
        f.listOrdersP50Ms = median(list);
        f.listOrdersP99Ms = percentile(list, 99);
      });
      await attempt('stats', async () => {
        const stats = await timed(sizes.reads, () => admin.request('GET', `/api/vouchers/${store.hotVoucher}/stats`, as(credentials.admin)));
        f.statsP50Ms = median(stats);
        f.statsP99Ms = percentile(stats, 99);
      });
      // A reconciliation that could not compare (or failed inside) answers 200 with verified: false.
      const reconcile = (id: string) => async () => {
        const res = await admin.request('POST', `/api/vouchers/${id}/reconcile`, as(credentials.admin));
        return res.body.verified === true ? res : { status: 0, body: res.body };
      };
      await attempt('reconcile hot', async () => void (f.reconcileHotMs = median(await timed(3, reconcile(store.hotVoucher)))));
      await attempt('reconcile small', async () => void (f.reconcileSmallMs = median(await timed(10, reconcile(store.smallVoucher)))));
      await attempt('reconcile all', async () => {
        const at = performance.now();
        const all = await core.reconciler.reconcileAll();
        f.reconcileAllMs = performance.now() - at;
        f.reconcileAllVouchers = all.length;
      });
      await attempt('audit hot', async () => void (f.auditHotMs = median(await timed(3, () => admin.request('POST', `/api/vouchers/${store.hotVoucher}/audit`, { ...as(credentials.admin), body: { admitted: [] } })))));
      await attempt('audit of the claims voucher', async () => {
        const res = await admin.request('POST', `/api/vouchers/${claim.voucherId}/audit`, { ...as(credentials.admin), body: { admitted: claim.recorder.orderIds } });
        if (res.body.ok !== true) throw new Error(JSON.stringify(res.body).slice(0, 500));
      });

      // --- memory: 10,000 open event streams, one buyer each
      const streams = await openStreams(server.origin, credentials.buyers.slice(0, sizes.streams));
      await new Promise((r) => setTimeout(r, 1_000));
      f.rssStreamsMiB = server.rssMiB();
      streams.close();
    } catch (err) {
      console.error(`seckill serve's last lines:\n${server.tail()}`);
      throw err;
    } finally {
      admin.close();
      await server.stop();
    }

    // --- drain: a backlog admitted by the real script, stored by the real pipeline (server stopped)
    const drainPrefix = `${prefix}d`;
    const c = await createContainer(loadConfig({ ...env, REDIS_PREFIX: drainPrefix, LOG_LEVEL: 'warn', CONSUMER_NAME: `${drainPrefix}-drain` }), log);
    try {
      const backlog = await prefill(c, idBase + 5n, 16, sizes.drain);
      const drained = await drainWithPipeline(c, backlog, { workers: 0, breakdown: false });
      const check = await verifySale(c, backlog);
      if (!check.ok) throw new Error(`drain check failed: ${check.problems.join('; ')}`);
      f.drainPerS = drained.ordersPerSecond;
      cpu.drain = drained.cpu;
    } finally {
      await deleteKeys(c.redis, c.keys.pattern());
      await c.close();
    }
    await deleteKeys(core.redis, core.keys.pattern());
  } finally {
    await core.close();
  }
  return { figures: f, cpu, errors };
}

/** The ids the measurements need, read from the store itself (so a kept year can be measured again). */
export async function describeStore(db: Db): Promise<Pick<StoreRef, 'hotVoucher' | 'smallVoucher' | 'liveVouchers' | 'longBuyer'>> {
  const now = dialectOf(db).nowPlusSeconds(0);
  const live = await db.selectFrom('vouchers').select(['id', 'version']).where('kind', '=', 'seckill').where('end_at', '>', now).where('title', 'like', 'live %').orderBy('id').execute();
  if (live.length === 0) throw new Error('the store has no live seckill voucher');
  // The generator counts each voucher's orders in `version` (one stock change per order).
  const byOrders = [...live].sort((a, b) => Number(b.version) - Number(a.version));
  return {
    hotVoucher: byOrders[0]!.id,
    smallVoucher: byOrders.at(-1)!.id,
    liveVouchers: live.map((v) => v.id),
    longBuyer: String(LONG_BUYER),
  };
}
