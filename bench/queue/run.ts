// Queue bench: BUYERS distinct buyers join the pre-queue of a STOCK-unit queue voucher, then the
// draw at beginAt. In the same run the same number of distinct buyers claim a plain seckill
// voucher (every claim admitted), in turns of 10,000 each, so a join's server CPU is compared with
// a claim's on the same box, same process, same minutes. See README.md.
//   node --import tsx bench/queue/run.ts [--buyers 100000] [--stock 1000] [--connections 64] [--json]
// The API runs as `seckill serve --no-worker` (the process measured) and the draw in a `seckill
// worker` beside it; the load generator is this process. Needs Redis and MariaDB (or
// BENCH_DATABASE_SERVER=postgres://…).
import { randomBytes } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { dropDatabase } from '../../src/infra/db/database.js';
import { processCpuUs } from '../../src/loadgen/machine.js';
import { readPublishedDraw, verifyDraw } from '../../src/queue/verify.js';
import { freePorts } from '../../support/free-ports.js';
import { type Running, startSeckill } from '../../support/processes.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { waitFor } from '../../support/wait.js';
import { readFlags } from '../support/flags.js';

const TARGET_DRAW_MS = 2_000;
const note = (text: string) => process.stderr.write(`${text}\n`);

const v = readFlags({ buyers: 100_000, stock: 1_000, connections: 64, json: false });
const { buyers: BUYERS, stock: STOCK, connections: CONNECTIONS } = v;
/** Requests of each kind per turn, and of the warm-up. */
const TURN = 10_000;
const WARMUP = 5_000;
const DATABASE_SERVER = process.env.BENCH_DATABASE_SERVER ?? 'mysql://root@127.0.0.1:3306';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

const name = `bq_${process.pid}_${randomBytes(3).toString('hex')}`;
const secret = randomBytes(24).toString('hex');
const port = await freePorts(1);
const env = {
  ...process.env,
  DATABASE_URL: `${DATABASE_SERVER}/${name}`,
  REDIS_URL,
  REDIS_PREFIX: name,
  JWT_SECRET: secret,
  PORT: String(port),
  HOST: '127.0.0.1',
  API_PROCESSES: '1',
};

/** `seckill <args>` on the bench's data: its output's lines kept (info lines with `log`), its errors shown. */
const seckill = (args: string[], log = false): Running => startSeckill(args, { env: { ...env, LOG_LEVEL: log ? 'info' : 'warn' }, stdio: ['ignore', 'pipe', 'inherit'] });

const sign = createSigner({ key: secret, algorithm: 'HS256' });
const exp = Math.floor(Date.now() / 1000) + 3600;
const bearer = (user: number | bigint, admin = false) => `Bearer ${sign({ sub: String(user), exp, ...(admin ? { role: 'admin' } : {}) })}`;
const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONNECTIONS, pipelining: 1 });

async function call(method: 'GET' | 'POST', path: string, token?: string, body?: unknown) {
  const res = await pool.request({
    method,
    path,
    headers: { ...(token ? { authorization: token } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? (JSON.parse(text) as Record<string, any>) : {} };
}

interface Driven {
  requests: number;
  seconds: number;
  cpuUs: number;
  status: Record<number, number>;
}

const driven = (): Driven => ({ requests: 0, seconds: 0, cpuUs: 0, status: {} });

/** `count` requests from distinct buyers (tokens signed beforehand), CONNECTIONS at a time, added to `into` with the API's CPU. */
async function drive(into: Driven, path: string, firstUser: number, count: number, apiPid: number) {
  const tokens = Array.from({ length: count }, (_, i) => bearer(firstUser + i));
  let next = 0;
  const cpuBefore = processCpuUs(apiPid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < count) {
        const res = await call('POST', path, tokens[next++]);
        into.status[res.status] = (into.status[res.status] ?? 0) + 1;
      }
    }),
  );
  into.seconds += (performance.now() - started) / 1000;
  into.cpuUs += processCpuUs(apiPid) - cpuBefore;
  into.requests += count;
}

const summaryOf = (d: Driven) => ({ requests: d.requests, seconds: d.seconds, perSecond: d.requests / d.seconds, cpuUsPerRequest: d.cpuUs / d.requests, status: d.status });


const api = seckill(['serve', '--no-worker']);
let worker: Running | null = null;
try {
  await waitFor('the API', async () => (await call('GET', '/healthz').catch(() => ({ status: 0 }))).status === 200, 60_000, 100);
  worker = seckill(['worker'], true);
  const admin = bearer(1, true);

  // The claims: a seckill voucher with a unit for every claim, so each is a full admission.
  const plain = await call('POST', '/api/vouchers', admin, {
    title: 'bench claims', kind: 'seckill', stock: BUYERS + WARMUP,
    beginAt: new Date(Date.now() - 60_000).toISOString(), endAt: new Date(Date.now() + 3_600_000).toISOString(),
  });
  if (plain.status !== 201) throw new Error(`voucher: ${plain.status} ${JSON.stringify(plain.json)}`);
  const claimPath = `/api/vouchers/${plain.json.id}/orders`;
  // A warm-up (not counted) tells how fast this box answers: the pre-queue stays open twice as long as the load needs.
  const warm = driven();
  await drive(warm, claimPath, 30_000_000, WARMUP, api.child.pid!);
  const beginAt = new Date(Date.now() + Math.max(15_000, Math.ceil((2.5 * 2 * BUYERS * warm.seconds) / WARMUP) * 1000));
  const queued = await call('POST', '/api/vouchers', admin, {
    title: 'bench queue', kind: 'seckill', stock: STOCK, queue: { opensAt: new Date().toISOString() },
    beginAt: beginAt.toISOString(), endAt: new Date(beginAt.getTime() + 3_600_000).toISOString(),
  });
  if (queued.status !== 201) throw new Error(`queue voucher: ${queued.status} ${JSON.stringify(queued.json)}`);
  const voucherId = queued.json.id as string;

  // Claims and joins in turns, so that both meet the same load from the rest of the box.
  const claimed = driven();
  const joined = driven();
  for (let from = 0; from < BUYERS; from += TURN) {
    const n = Math.min(TURN, BUYERS - from);
    await drive(claimed, claimPath, 10_000_000 + from, n, api.child.pid!);
    await drive(joined, `/api/vouchers/${voucherId}/queue`, 20_000_000 + from, n, api.child.pid!);
  }
  const claims = summaryOf(claimed);
  const joins = summaryOf(joined);
  for (const [label, d] of [['claims', claims], ['joins', joins]] as const) {
    note(`${label}: ${d.requests} in ${d.seconds.toFixed(1)} s (${Math.round(d.perSecond)}/s), API CPU ${d.cpuUsPerRequest.toFixed(1)} µs per request, answers ${JSON.stringify(d.status)}`);
  }
  if (Date.now() >= beginAt.getTime()) throw new Error('the joins outlasted the pre-queue');
  // The worker stores the claimed orders before the draw, which it would otherwise share its CPU with.
  await waitFor('the claims stored', async () => (await call('GET', `/api/vouchers/${plain.json.id}/stats`, admin)).json.inFlight === 0, 300_000, 500);

  // The draw: from beginAt to the first STOCK places admitted (the worker's report), and stored.
  note(`waiting ${Math.round((beginAt.getTime() - Date.now()) / 1000)} s for the start`);
  const drawn = await waitFor(
    'the draw',
    async () => {
      const line = worker!.lines.find((l) => l.includes('"queue drawn"'));
      return line ? (JSON.parse(line) as { sortedAfterMs: number; admittedAfterMs: number; publishedAfterMs: number; entrants: number; admitted: number }) : null;
    },
    beginAt.getTime() - Date.now() + 60_000,
    10,
  );
  const stats = await waitFor(
    'every admitted order stored',
    async () => {
      const s = (await call('GET', `/api/vouchers/${voucherId}/stats`, admin)).json;
      return s.orders?.pending_payment === drawn.admitted && s.inFlight === 0 && s;
    },
    60_000,
    100,
  );
  const verdict = verifyDraw(await readPublishedDraw(async (path) => (await call('GET', path)).json, voucherId));
  const result = {
    buyers: BUYERS,
    stock: STOCK,
    claims,
    joins,
    joinCpuOverClaimCpu: joins.cpuUsPerRequest / claims.cpuUsPerRequest,
    draw: { entrants: drawn.entrants, admitted: drawn.admitted, sortedAfterMs: drawn.sortedAfterMs, admittedAfterMs: drawn.admittedAfterMs, publishedAfterMs: drawn.publishedAfterMs, targetMs: TARGET_DRAW_MS },
    stored: stats.orders.pending_payment,
    oversold: Math.max(0, stats.orders.pending_payment - STOCK),
    redisStock: stats.redisStock,
    dbStock: stats.dbStock,
    verify: verdict,
  };
  if (v.json) console.log(JSON.stringify(result, null, 2));
  else {
    console.log(`buyers ${BUYERS}, stock ${STOCK}`);
    console.log(`claim: ${claims.cpuUsPerRequest.toFixed(1)} µs API CPU per request, ${Math.round(claims.perSecond)}/s`);
    console.log(`join:  ${joins.cpuUsPerRequest.toFixed(1)} µs API CPU per request, ${Math.round(joins.perSecond)}/s (join/claim ${result.joinCpuOverClaimCpu.toFixed(2)}, target ≤ 1)`);
    console.log(`draw of ${drawn.entrants}: sorted ${drawn.sortedAfterMs} ms, first ${drawn.admitted} places admitted ${drawn.admittedAfterMs} ms after beginAt (target ≤ ${TARGET_DRAW_MS}), published after ${drawn.publishedAfterMs} ms`);
    console.log(`stored ${result.stored} orders; stock left: database ${stats.dbStock}, Redis ${stats.redisStock}; verify: ${verdict.ok ? 'matches' : verdict.problems.join('; ')}`);
  }
  if (result.joinCpuOverClaimCpu > 1 || drawn.admittedAfterMs > TARGET_DRAW_MS || result.stored !== STOCK || !verdict.ok) process.exitCode = 1;
} finally {
  await pool.close();
  for (const child of [worker, api]) await child?.stop();
  const redis = new Redis(REDIS_URL);
  await deleteKeys(redis, `${name}:*`);
  redis.disconnect();
  await dropDatabase(env.DATABASE_URL);
}
