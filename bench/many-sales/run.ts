// Many live sales on one deployment against one: does spreading the same claims over 100 vouchers
// change the totals? One `seckill serve` (API and workers, default settings) on a database and key
// prefix of its own; then, in alternating rounds, (a) one voucher with stock for all, N distinct
// buyers claiming once each, and (b) `--vouchers` vouchers, the same N buyers round-robin over them
// (buyer b claims voucher b mod V once; every claim admitted). Per sale: answers/s, p99, the
// server's CPU per admission (/proc of its pid), the drain (last answer to every order stored, from
// the database counts), the admissions per shard stream, and the verdict from both stores.
// Redis is a private redis-server unless `--redis URL` names one (its CPU and command counts are
// then everyone's).
//   node --import tsx bench/many-sales/run.ts [--buyers 20000] [--vouchers 100] [--rounds 3]
//        [--connections 64] [--database-server mysql://root@127.0.0.1:3306] [--redis URL]
//        [--json many-sales.json]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createDb, dropDatabase } from '../../src/infra/db/database.js';
import { createKeySpace } from '../../src/infra/redis/keys.js';
import { type Credentials, mintCredentials } from '../../src/loadgen/credentials.js';
import { JsonClient } from '../../src/loadgen/http-client.js';
import { machineInfo, measureCpu } from '../../src/loadgen/machine.js';
import { RequestPlan } from '../../src/loadgen/plan.js';
import { SaleRecorder } from '../../src/loadgen/recorder.js';
import { type OwnRedis, startOwnRedis } from '../admission/own-redis.js';
import { JWT_SECRET, type Server, startServer } from '../history/server.js';
import { driveLoad } from '../../src/loadgen/driver.js';
import { costMeter } from './costs.js';
import { expectedSpread, type ShardSpread, shardSpread } from './spread.js';
import { checkSale, type SaleVoucher, type Verdict, waitStored } from './stores.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { readFlags } from '../support/flags.js';
import { median } from '../support/stats.js';

const flags = readFlags({ buyers: 20_000, vouchers: 100, rounds: 3, connections: 64, 'database-server': 'mysql://root@127.0.0.1:3306', redis: null, json: null });
const { buyers: BUYERS, vouchers: VOUCHERS, rounds: ROUNDS, connections: CONNECTIONS } = flags;
/** The server's defaults, passed to it explicitly (the environment could say otherwise) and used to map vouchers to shards, shards to pipeline readers. */
const SHARDS = 16;
const PIPELINE_LANES = 4;
const WARMUP_BUYERS = 2_000;
const DRAIN_TIMEOUT_MS = 300_000;
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const say = (line: string) => process.stderr.write(`${line}\n`);
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').trim();

type Kind = 'one' | 'many';

interface Sale {
  kind: Kind;
  round: number;
  vouchers: number;
  claims: number;
  admitted: number;
  outcomes: Record<string, number>;
  answersPerS: number;
  p50Ms: number;
  p99Ms: number;
  loadSeconds: number;
  /** Server CPU (API and in-process workers) per admission while the claims ran … */
  serverCpuUsPerAdmissionLoad: number;
  /** … and from the first claim until every order was stored, as are the figures below. */
  serverCpuUsPerAdmission: number;
  redisCpuUsPerAdmission: number;
  redisCallsPerAdmission: number;
  scriptCallsPerAdmission: number;
  databaseCpuUsPerAdmission: number;
  /** Redis calls by command from the first claim until every order was stored. */
  redisCommands: Record<string, number>;
  /** Last answer to every order stored. */
  drainLagMs: number;
  /** Admissions over the time from the first claim until every order was stored. */
  storedPerS: number;
  machineBusyCores: number | null;
  loadAverage1m: number;
  verdict: Verdict;
  spread: ShardSpread;
}

interface Deployment {
  server: Server;
  api: JsonClient;
  credentials: Credentials;
  db: ReturnType<typeof createDb>;
  redis: Redis;
  keys: ReturnType<typeof createKeySpace>;
}

/** Claims buyer b sends to voucher b mod count: the voucher's stock, so every claim is admitted. */
const claimsOf = (buyers: number, count: number, k: number) => Math.ceil((buyers - k) / count);

async function createVouchers(d: Deployment, count: number, buyers: number, label: string): Promise<SaleVoucher[]> {
  const now = Date.now();
  return Promise.all(
    Array.from({ length: count }, async (_, k) => {
      const stock = claimsOf(buyers, count, k);
      const res = await d.api.request('POST', '/api/vouchers', {
        headers: { authorization: d.credentials.admin },
        body: { title: `${label} ${k + 1}/${count}`, kind: 'seckill', stock, paymentTimeoutSeconds: 3600, beginAt: new Date(now - 1000).toISOString(), endAt: new Date(now + 3_600_000).toISOString() },
      });
      if (res.status !== 201) throw new Error(`voucher not created: ${res.status} ${JSON.stringify(res.body)}`);
      return { id: String(res.body.id), stock };
    }),
  );
}

async function sale(d: Deployment, kind: Kind, round: number, buyers: Credentials, count: number): Promise<Sale> {
  const claims = buyers.buyers.length;
  const vouchers = await createVouchers(d, count, claims, `many-sales r${round} ${kind}`);
  const paths = vouchers.map((v) => `/api/vouchers/${v.id}/orders`);
  const plan = new RequestPlan({ buyers: claims, repeatShare: 0, sameKeyShare: 0, seed: round * 2 + (kind === 'one' ? 0 : 1), keyTag: `ms${round}${kind}` });
  // A breath between the vouchers' creation (100 writes and warm-ups) and the measured window.
  await new Promise((r) => setTimeout(r, 500));

  const costs = await costMeter(d.server.cpuUs, d.redis, d.db);
  const recorder = new SaleRecorder(performance.now());
  const machine = measureCpu();
  const window = await driveLoad({ origin: d.server.origin, path: paths[0]!, pathOf: (r) => paths[r.buyer % count]!, connections: CONNECTIONS, requests: claims, timeoutMs: 30_000 }, plan, buyers, recorder);
  const claimsCost = await costs();
  const cpu = machine(claims);
  const admitted = recorder.orderIds.length;
  const drainLagMs = await waitStored(d.db, vouchers, admitted, DRAIN_TIMEOUT_MS);
  const storedAt = performance.now();
  const saleCost = await costs();
  const per = (x: number) => x / Math.max(1, admitted);

  const { verdict, perVoucher } = await checkSale(d.db, d.redis, d.keys, vouchers, recorder.orderIds);
  if (admitted !== claims) {
    verdict.problems.unshift(`${admitted} of ${claims} claims admitted`);
    verdict.ok = false;
  }
  const loadSeconds = (window.endedAt - window.startedAt) / 1000;
  const latency = recorder.latency.summary();
  return {
    kind,
    round,
    vouchers: count,
    claims,
    admitted,
    outcomes: Object.fromEntries(recorder.outcomes),
    answersPerS: recorder.latency.count / loadSeconds,
    p50Ms: latency.p50Ms,
    p99Ms: latency.p99Ms,
    loadSeconds,
    serverCpuUsPerAdmissionLoad: per(claimsCost.serverUs),
    serverCpuUsPerAdmission: per(saleCost.serverUs),
    redisCpuUsPerAdmission: per(saleCost.redisUs),
    redisCallsPerAdmission: per(saleCost.redisCalls),
    scriptCallsPerAdmission: per(saleCost.scriptCalls),
    databaseCpuUsPerAdmission: per(saleCost.databaseUs),
    redisCommands: saleCost.byCommand,
    drainLagMs,
    storedPerS: admitted / ((storedAt - window.startedAt) / 1000),
    machineBusyCores: cpu.machineBusyCores,
    loadAverage1m: cpu.loadAverage1m,
    verdict,
    spread: shardSpread(perVoucher, d.keys.shardOf, SHARDS, PIPELINE_LANES),
  };
}

// --- the report ----------------------------------------------------------------------------------

const fmt = (x: number, digits = 0) => x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const markdown = (rows: string[][]) => rows.map((r, i) => `| ${r.join(' | ')} |${i === 0 ? `\n|${r.map((_, j) => (j === 0 ? ' --- ' : ' ---: ')).join('|')}|` : ''}`).join('\n');

const METRICS: { name: string; of: (s: Sale) => number; digits: number }[] = [
  { name: 'answers/s', of: (s) => s.answersPerS, digits: 0 },
  { name: 'p50 ms', of: (s) => s.p50Ms, digits: 1 },
  { name: 'p99 ms', of: (s) => s.p99Ms, digits: 1 },
  { name: 'server CPU µs / admission, claims', of: (s) => s.serverCpuUsPerAdmissionLoad, digits: 0 },
  { name: 'server CPU µs / admission, claims + drain', of: (s) => s.serverCpuUsPerAdmission, digits: 0 },
  { name: 'Redis CPU µs / admission', of: (s) => s.redisCpuUsPerAdmission, digits: 1 },
  { name: 'Redis commands / admission', of: (s) => s.redisCallsPerAdmission, digits: 2 },
  { name: 'of which script calls', of: (s) => s.scriptCallsPerAdmission, digits: 2 },
  { name: 'database server CPU µs / admission', of: (s) => s.databaseCpuUsPerAdmission, digits: 0 },
  { name: 'drain lag ms (last answer → all stored)', of: (s) => s.drainLagMs, digits: 0 },
  { name: 'stored/s (first claim → all stored)', of: (s) => s.storedPerS, digits: 0 },
  { name: 'machine busy cores', of: (s) => s.machineBusyCores ?? NaN, digits: 2 },
  { name: 'load average 1 min', of: (s) => s.loadAverage1m, digits: 1 },
];

function report(sales: Sale[]): string {
  const rounds = [...new Set(sales.map((s) => s.round))];
  const pair = (r: number) => [sales.find((s) => s.round === r && s.kind === 'one')!, sales.find((s) => s.round === r && s.kind === 'many')!] as const;
  const head = ['', ...rounds.flatMap((r) => [`r${r} (a) 1`, `r${r} (b) ${VOUCHERS}`, `r${r} b/a`]), 'median b/a'];
  const rows = METRICS.map((m) => {
    const ratios = rounds.map((r) => m.of(pair(r)[1]) / m.of(pair(r)[0]));
    return [m.name, ...rounds.flatMap((r, i) => [fmt(m.of(pair(r)[0]), m.digits), fmt(m.of(pair(r)[1]), m.digits), ratios[i]!.toFixed(2)]), `**${median(ratios).toFixed(2)}**`];
  });
  const verdict = (s: Sale) => (s.verdict.ok ? 'PASS' : 'FAIL');
  const counts = (s: Sale) => `${fmt(s.verdict.stored)}/${fmt(s.admitted)} · ${s.verdict.oversold} · ${s.verdict.duplicated} · ${s.verdict.redisDrift}`;
  rows.push(['verdict', ...rounds.flatMap((r) => [verdict(pair(r)[0]), verdict(pair(r)[1]), '']), '']);
  rows.push(['stored/admitted · oversold · duplicated · Redis ≠ DB', ...rounds.flatMap((r) => [counts(pair(r)[0]), counts(pair(r)[1]), '']), '']);

  const shardRows = [['round', 'vouchers per shard (0…15)', 'admissions per shard', 'max / min share', 'max / even', 'per pipeline reader']];
  for (const r of rounds) {
    const s = pair(r)[1].spread;
    shardRows.push([`r${r}`, s.vouchers.join(' '), s.shares.map((x) => (x * 100).toFixed(1)).join(' ') + ' %', `${pct(s.maxShare)} / ${pct(s.minShare)} = ${Number.isFinite(s.maxOverMin) ? s.maxOverMin.toFixed(2) : '∞'}`, s.maxOverEven.toFixed(2), s.laneShares.map(pct).join(' ')]);
  }
  const e = expectedSpread(VOUCHERS, SHARDS);
  const expected =
    `${VOUCHERS} vouchers each on a random one of ${SHARDS} shards (${fmt(e.trials)} draws): fullest shard ${e.max.mean.toFixed(2)} vouchers (5–95%: ${e.max.p5}–${e.max.p95}), ` +
    `emptiest ${e.min.mean.toFixed(2)} (${e.min.p5}–${e.min.p95}), even ${(VOUCHERS / SHARDS).toFixed(2)}; median max/min ${e.medianMaxOverMin.toFixed(2)}; ` +
    `some shard empty in ${pct(e.emptyShard)} of draws.`;
  return `${markdown([head, ...rows])}\n\nShards of the (b) sales (share of admissions, %):\n\n${markdown(shardRows)}\n\nExpected: ${expected}\n`;
}

// --- the run -------------------------------------------------------------------------------------

async function main() {
  const label = `bench_many_sales_${process.pid}`;
  const databaseUrl = `${flags['database-server']}/${label}`;
  const prefix = `bms${process.pid}`;
  const loadBefore = loadavg();
  say(`load average before: ${loadBefore}`);
  const ownRedis: OwnRedis | null = flags.redis ? null : await startOwnRedis('private');
  const redisUrl = flags.redis ?? ownRedis!.url;
  const server = await startServer({ DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, REDIS_PREFIX: prefix, SHARDS: String(SHARDS), PIPELINE_LANES: String(PIPELINE_LANES) });
  const redis = new Redis(redisUrl);
  const d: Deployment = {
    server,
    api: new JsonClient(server.origin, 16),
    credentials: await mintCredentials({ secret: JWT_SECRET, buyers: BUYERS + WARMUP_BUYERS, firstUserId: 1_000_000n, ttlSeconds: 3 * 3600 }),
    db: createDb(databaseUrl, 2),
    redis,
    keys: createKeySpace(prefix, SHARDS),
  };
  const measured = { admin: d.credentials.admin, buyers: d.credentials.buyers.slice(0, BUYERS) };
  const warmup = { admin: d.credentials.admin, buyers: d.credentials.buyers.slice(BUYERS) };
  const sales: Sale[] = [];
  try {
    say(`seckill serve ready in ${fmt(server.readyMs)} ms; warm-up sales of ${fmt(WARMUP_BUYERS)} claims`);
    for (const [kind, count] of [['one', 1], ['many', VOUCHERS]] as const) {
      const w = await sale(d, kind, 0, warmup, count);
      if (!w.verdict.ok) throw new Error(`warm-up ${kind}: ${w.verdict.problems.join('; ')}`);
    }
    for (let round = 1; round <= ROUNDS; round++) {
      // Alternate which goes first, so a drift of the box's speed does not favour one kind.
      const order: [Kind, number][] = round % 2 ? [['one', 1], ['many', VOUCHERS]] : [['many', VOUCHERS], ['one', 1]];
      for (const [kind, count] of order) {
        const s = await sale(d, kind, round, measured, count);
        sales.push(s);
        say(
          `round ${round} ${kind === 'one' ? '(a) 1 voucher' : `(b) ${count} vouchers`}: ${fmt(s.answersPerS)} answers/s, p99 ${s.p99Ms.toFixed(1)} ms, ` +
            `${fmt(s.serverCpuUsPerAdmission)} µs server CPU/admission, drain lag ${fmt(s.drainLagMs)} ms, load ${s.loadAverage1m.toFixed(1)}, ` +
            `${s.verdict.ok ? 'PASS' : `FAIL: ${s.verdict.problems.join('; ')}`}`,
        );
      }
    }
  } catch (err) {
    say(`seckill serve's last lines:\n${server.tail(30)}`);
    throw err;
  } finally {
    d.api.close();
    await server.stop();
    await deleteKeys(redis, `${prefix}:*`);
    redis.disconnect();
    await d.db.destroy();
    await dropDatabase(databaseUrl).catch((err) => say(`database ${label} not dropped: ${(err as Error).message}`));
    await ownRedis?.stop();
  }
  const loadAfter = loadavg();
  say(`load average after: ${loadAfter}`);
  const m = machineInfo();
  process.stdout.write(
    `${fmt(BUYERS)} buyers, one claim each; (b) over ${VOUCHERS} vouchers; ${CONNECTIONS} connections; ${ROUNDS} rounds; ${flags['database-server'].split(':')[0]}; Redis ${flags.redis ?? 'private'}\n` +
      `machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}; /proc/loadavg before: ${loadBefore}; after: ${loadAfter}\n\n${report(sales)}`,
  );
  if (flags.json) {
    mkdirSync(RESULTS, { recursive: true });
    const file = resolve(RESULTS, flags.json);
    writeFileSync(file, JSON.stringify({ buyers: BUYERS, vouchers: VOUCHERS, rounds: ROUNDS, connections: CONNECTIONS, databaseServer: flags['database-server'], machine: m, loadBefore, loadAfter, expected: expectedSpread(VOUCHERS, SHARDS), sales }, null, 2));
    say(`raw output: ${file}`);
  }
  if (sales.some((s) => !s.verdict.ok)) process.exitCode = 1;
}

await main();
