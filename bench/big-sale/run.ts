// One voucher of a million units sold to a million buyers through the API (`seckill bench`), with
// the deployment's housekeeping running as it does in production (reconciliation every
// RECONCILE_INTERVAL_MS, the bench's audit at the end): does any of it block Redis? Everything runs
// on a Redis of its own with the slow log at 5 ms. Per scenario (segments 1, then 4): the big
// sale's claims/s, p99, drain rate, 503 answers and Redis command timeouts in the server's log;
// GET /stats of the big voucher polled during the sale (p50/p99); the slow log; and a 10,000-unit
// sale run beside it (its answers/s, p99, 503s). Before each, a 10,000-unit sale of the big one's
// shape (every buyer once, every claim admitted) runs alone three times: the rate to compare with.
// After each sale, one reconciliation and one audit of the big voucher are timed on a quiet
// deployment.
//   node --import tsx bench/big-sale/run.ts [--units 1000000] [--segments 1,4] [--connections 64]
//        [--database mysql://root@127.0.0.1:3306] [--json]
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { dropDatabase } from '../../src/infra/db/database.js';
import { mintCredentials } from '../../src/loadgen/credentials.js';
import { JsonClient } from '../../src/loadgen/http-client.js';
import { freePorts } from '../../support/free-ports.js';
import { waitFor } from '../../support/wait.js';
import { integer, readFlags } from '../support/flags.js';
import { percentile } from '../support/stats.js';

const flags = readFlags({ units: 1_000_000, segments: '1,4', connections: 64, database: 'mysql://root@127.0.0.1:3306', json: false });
const { units: UNITS, connections: CONNECTIONS } = flags;
const SEGMENTS = flags.segments.split(',').map((k) => integer('segments', k, 1));
const SMALL_UNITS = 10_000;
/** The sale beside the big one: mostly sold-out answers, from few connections. */
const BESIDE = { buyers: 100_000, connections: 4 };
const CONTROL_ROUNDS = 3;
const SLOWER_THAN_US = 5_000;
const STATS_EVERY_MS = 200;
const SECRET = 'big-sale-bench-secret';
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const say = (line: string) => process.stderr.write(`${line}\n`);

// --- processes ---------------------------------------------------------------------------------

function started(child: ChildProcess, what: string): ChildProcess {
  child.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM') say(`${what} exited (${code ?? signal})`);
  });
  return child;
}

/** Polls `ready` (a failure counts as not yet) until it holds. */
const until = (what: string, ready: () => Promise<boolean>, timeoutMs = 60_000) => waitFor(what, () => ready().catch(() => false), timeoutMs, 200);

const stopped = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });

/** `seckill bench` with `args`; its JSON report. */
function seckillBench(url: string, args: string[]): Promise<BenchJson> {
  return new Promise((resolve, reject) => {
    const child = spawn('node', ['bin/seckill.js', 'bench', '--url', url, '--secret', SECRET, '--json', '--no-progress', ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const out: Buffer[] = [];
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.once('exit', () => {
      try {
        resolve(JSON.parse(Buffer.concat(out).toString('utf8')) as BenchJson);
      } catch (err) {
        reject(new Error(`seckill bench ${args.join(' ')}: no JSON report (${(err as Error).message})`));
      }
    });
  });
}

interface BenchRunJson {
  voucherId: string;
  load: {
    throughput: number;
    seconds: number;
    latency: { p50Ms: number; p99Ms: number };
    outcomes: Record<string, number>;
    cpu: { machineBusyCores: number | null; loadAverage1m: number };
  };
  client: { orders: number };
  sale: { drainLagS: number | null };
  verdict: { ok: boolean };
}
interface BenchJson {
  ok: boolean;
  runs: BenchRunJson[];
}

// --- measurements ------------------------------------------------------------------------------

/** p50, p99 and max of latencies in ms. */
function spread(samples: number[]): { p50Ms: number; p99Ms: number; maxMs: number } {
  return { p50Ms: percentile(samples, 50), p99Ms: percentile(samples, 99), maxMs: percentile(samples, 100) };
}
const answers503 = (r: BenchRunJson) => Object.entries(r.load.outcomes).filter(([k]) => k.startsWith('503')).reduce((n, [, c]) => n + c, 0);

/**
 * GET /stats of a voucher every STATS_EVERY_MS: latency of each answer, and orders stored over time.
 * Each poll is preceded by a GET /healthz (no Redis, no database): the floor of any answer from
 * the same process at that moment, to tell the route's own cost from the box's queue for a core.
 */
function pollStats(api: JsonClient, admin: string, voucherId: string) {
  const latencies: number[] = [];
  const floor: number[] = [];
  const stored: { at: number; orders: number }[] = [];
  let running = true;
  let latest = 0;
  const done = (async () => {
    while (running) {
      const h0 = performance.now();
      if ((await api.request('GET', '/healthz').catch(() => null))?.status === 200) floor.push(performance.now() - h0);
      const t0 = performance.now();
      const res = await api.request('GET', `/api/vouchers/${voucherId}/stats`, { headers: { authorization: admin } }).catch(() => null);
      const t1 = performance.now();
      if (res?.status === 200) {
        latencies.push(t1 - t0);
        const orders = res.body.orders as Record<string, number>;
        latest = Object.values(orders).reduce((n, c) => n + c, 0);
        stored.push({ at: t1, orders: latest });
      }
      await new Promise((r) => setTimeout(r, Math.max(0, STATS_EVERY_MS - (t1 - h0))));
    }
  })();
  return {
    /** Orders of the voucher stored at the last poll. */
    stored: () => latest,
    async stop() {
      running = false;
      await done;
      // Orders stored per second: overall from the first to the last stored order, and the best second.
      const moving = stored.filter((s, i) => i > 0 && s.orders > stored[i - 1]!.orders);
      const first = stored.find((s) => s.orders > 0);
      const last = moving[moving.length - 1];
      let peak = 0;
      for (let i = 0, j = 0; i < stored.length; i++) {
        while (stored[i]!.at - stored[j]!.at > 1000) j++;
        if (stored[i]!.at - stored[j]!.at >= 800) peak = Math.max(peak, ((stored[i]!.orders - stored[j]!.orders) * 1000) / (stored[i]!.at - stored[j]!.at));
      }
      return {
        polls: latencies.length,
        ...spread(latencies),
        floor: spread(floor),
        drainPerS: first && last && last.at > first.at ? ((last.orders - first.orders) * 1000) / (last.at - first.at) : NaN,
        drainPeakPerS: peak,
      };
    },
  };
}

/** The slow log since the last reset, by command, with how often each command ran meanwhile. */
async function slowLog(redis: Redis) {
  const entries = (await redis.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[]][];
  const calls = new Map<string, { calls: number; usPerCall: number }>();
  let usec = 0;
  for (const line of String(await redis.call('INFO', 'commandstats')).split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/.exec(line);
    if (m) {
      calls.set(m[1]!, { calls: Number(m[2]), usPerCall: Number(m[4]) });
      usec += Number(m[3]);
    }
  }
  const byCommand = new Map<string, { count: number; maxUs: number; example: string }>();
  for (const [, , us, args] of entries) {
    const name = args[0]!.toLowerCase();
    if (name === 'slowlog') continue;
    const c = byCommand.get(name) ?? { count: 0, maxUs: 0, example: '' };
    c.count += 1;
    if (us > c.maxUs) Object.assign(c, { maxUs: us, example: args.slice(0, 3).join(' ').slice(0, 100) });
    byCommand.set(name, c);
  }
  const commands = [...byCommand].map(([name, c]) => ({ name, ...c, ...(calls.get(name) ?? { calls: 0, usPerCall: 0 }) })).sort((a, b) => b.count - a.count);
  return { entries: commands.reduce((n, c) => n + c.count, 0), commands, redisCommandSeconds: usec / 1e6 };
}

const timeoutsIn = (logFile: string) => (readFileSync(logFile, 'utf8').match(/Command timed out/g) ?? []).length;

// --- the run -----------------------------------------------------------------------------------

async function main() {
  mkdirSync(RESULTS, { recursive: true });
  const [redisPort, apiPort] = [await freePorts(1), await freePorts(1)];
  const database = `${flags.database}/bench_big_sale_${process.pid}`;
  const prefix = `bench-big-sale-${process.pid}`;
  const redisServer = started(
    spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--slowlog-log-slower-than', String(SLOWER_THAN_US), '--slowlog-max-len', '100000'], { stdio: 'ignore' }),
    'redis-server',
  );
  const redis = new Redis(redisPort, '127.0.0.1', { lazyConnect: true });
  await until('redis-server', async () => (await redis.connect().then(() => redis.ping()).catch(() => (redis.disconnect(), ''))) === 'PONG');
  const logFile = `${RESULTS}serve-${process.pid}.log`;
  const log = createWriteStream(logFile);
  const serve = started(
    spawn('node', ['bin/seckill.js', 'serve'], {
      cwd: ROOT,
      env: { ...process.env, HOST: '127.0.0.1', PORT: String(apiPort), DATABASE_URL: database, REDIS_URL: `redis://127.0.0.1:${redisPort}`, REDIS_PREFIX: prefix, JWT_SECRET: SECRET, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
    'seckill serve',
  );
  serve.stdout!.pipe(log);
  serve.stderr!.pipe(log);
  const url = `http://127.0.0.1:${apiPort}`;
  const api = new JsonClient(url, 8);
  const { admin } = await mintCredentials({ secret: SECRET, buyers: 0, firstUserId: 1n, ttlSeconds: 24 * 3600 });
  const call = (method: string, path: string, body?: unknown) => api.request(method, path, { body, headers: { authorization: admin } });
  await until('seckill serve', async () => (await call('GET', '/healthz')).status === 200);
  const report = { units: UNITS, connections: CONNECTIONS, database: flags.database, scenarios: [] as unknown[] };
  let nextUser = 10_000_001;
  const users = (n: number) => String((nextUser += n) - n);
  try {
    for (const segments of SEGMENTS) {
      // The rate to compare with, just before: a 10,000-unit sale of the same shape (each buyer once, each admitted).
      const control = [];
      for (let round = 0; round < CONTROL_ROUNDS; round++) {
        const r = (await seckillBench(url, ['--stock', String(SMALL_UNITS), '--users', String(SMALL_UNITS), '--first-user', users(SMALL_UNITS), '--repeat', '0', '--connections', String(CONNECTIONS)])).runs[0]!;
        control.push({ claimsPerS: r.load.throughput, p99Ms: r.load.latency.p99Ms, ok: r.verdict.ok, loadAverage1m: r.load.cpu.loadAverage1m });
        say(`control ${round + 1}: ${Math.round(r.load.throughput)} claims/s, p99 ${r.load.latency.p99Ms.toFixed(1)} ms, ${r.verdict.ok ? 'PASS' : 'FAIL'}`);
      }
      const created = await call('POST', '/api/vouchers', {
        title: `big sale, ${UNITS} units, ${segments} segment(s)`, kind: 'seckill', stock: UNITS, segments, paymentTimeoutSeconds: 24 * 3600,
        beginAt: new Date(Date.now() - 1000).toISOString(), endAt: new Date(Date.now() + 24 * 3_600_000).toISOString(),
      });
      if (created.status !== 201) throw new Error(`voucher not created: ${created.status} ${JSON.stringify(created.body)}`);
      const voucherId = String(created.body.id);
      await redis.call('SLOWLOG', 'RESET');
      await redis.call('CONFIG', 'RESETSTAT');
      const timeoutsBefore = timeoutsIn(logFile);
      const cpuBefore = await redisCpu(redis);
      const stats = pollStats(api, admin, voucherId);
      say(`segments ${segments}: selling ${UNITS} units of voucher ${voucherId} to ${UNITS} buyers…`);
      const bigRun = seckillBench(url, ['--voucher', voucherId, '--users', String(UNITS), '--first-user', users(UNITS), '--repeat', '0', '--connections', String(CONNECTIONS), '--drain-timeout', '600']);
      // Beside it, once the big sale is under way (its tokens are minted first).
      await until('the big sale to start', async () => stats.stored() > 0, 300_000);
      const besideRun = seckillBench(url, ['--stock', String(SMALL_UNITS), '--users', String(BESIDE.buyers), '--first-user', users(BESIDE.buyers), '--repeat', '0', '--connections', String(BESIDE.connections)]);
      const big = (await bigRun).runs[0]!;
      const beside = (await besideRun).runs[0]!;
      const polled = await stats.stop();
      const slow = await slowLog(redis);
      const redisCpuS = (await redisCpu(redis)) - cpuBefore;

      // On a quiet deployment: the full walks of the big voucher.
      await redis.call('SLOWLOG', 'RESET');
      await redis.call('CONFIG', 'RESETSTAT');
      // The scheduled run may hold the voucher's lock (the answer is then unverified at once): again.
      let t0 = 0;
      let reconciled;
      for (let attempt = 0; attempt < 20; attempt++) {
        t0 = performance.now();
        reconciled = await call('POST', `/api/vouchers/${voucherId}/reconcile`);
        if (reconciled.body.verified) break;
        await new Promise((r) => setTimeout(r, 1000));
      }
      const t1 = performance.now();
      const audited = await call('GET', `/api/vouchers/${voucherId}/audit`);
      const t2 = performance.now();
      const scenario = {
        segments,
        voucherId,
        control,
        big: {
          claimsPerS: big.load.throughput, seconds: big.load.seconds, p50Ms: big.load.latency.p50Ms, p99Ms: big.load.latency.p99Ms,
          orders: big.client.orders, answers503: answers503(big), drainLagS: big.sale.drainLagS, verdict: big.verdict.ok, outcomes: big.load.outcomes,
          machineBusyCores: big.load.cpu.machineBusyCores, loadAverage1m: big.load.cpu.loadAverage1m,
        },
        beside: { answersPerS: beside.load.throughput, p99Ms: beside.load.latency.p99Ms, answers503: answers503(beside), verdict: beside.verdict.ok, outcomes: beside.load.outcomes },
        stats: polled,
        redisCommandTimeouts: timeoutsIn(logFile) - timeoutsBefore,
        redisCpuS,
        slowLog: slow,
        quiet: {
          reconcileMs: t1 - t0, reconciled: reconciled!.body,
          auditMs: t2 - t1, auditOk: audited.body.ok,
          slowLog: await slowLog(redis),
        },
      };
      report.scenarios.push(scenario);
      say(JSON.stringify({ ...scenario, big: { ...scenario.big, outcomes: undefined }, beside: { ...scenario.beside, outcomes: undefined } }, null, 1));
    }
  } finally {
    api.close();
    await stopped(serve);
    await redis.quit().catch(() => undefined);
    await stopped(redisServer);
    await dropDatabase(database).catch(() => undefined);
    log.end();
  }
  if (flags.json) console.log(JSON.stringify(report, null, 2));
}

/** Redis' CPU seconds so far (user + system). */
async function redisCpu(redis: Redis): Promise<number> {
  const info = String(await redis.call('INFO', 'cpu'));
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return field('used_cpu_user') + field('used_cpu_sys');
}

await main();
