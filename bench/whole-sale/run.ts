// A whole sale against a bare Fastify answer, in one run: what the box spends per answer when 10,000
// units meet 100,000 buyers who send 200,000 claims (every buyer once in a shuffled order, then
// again: most answers are SOLD_OUT), from the first claim until every order is stored, against the
// same 200,000 requests answered by a bare Fastify route. Rounds alternate which goes first.
//
//   node --import tsx bench/whole-sale/run.ts [--units 10000] [--buyers 100000] [--claims 200000]
//        [--rounds 3] [--connections 64] [--database-server mysql://root@127.0.0.1:3306] [--json <file>]
//
// `seckill serve` (API and workers in one process, default settings) on a private Redis and a
// database of its own; the bare route is bench/admission/server.ts's `bare`, the same bytes in.
// Per side: the server process's CPU, Redis' and the database server's (the sale only), and the
// whole machine's busy time less the load generator's own CPU (this process), per answer.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createDb, dropDatabase } from '../../src/infra/db/database.js';
import { createKeySpace } from '../../src/infra/redis/keys.js';
import { type Credentials, mintCredentials } from '../../src/loadgen/credentials.js';
import { driveLoad } from '../../src/loadgen/driver.js';
import { JsonClient } from '../../src/loadgen/http-client.js';
import { machineBusyUs, machineInfo, processCpuUs } from '../../src/loadgen/machine.js';
import { RequestPlan } from '../../src/loadgen/plan.js';
import { SaleRecorder } from '../../src/loadgen/recorder.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { startOwnRedis } from '../admission/own-redis.js';
import { JWT_SECRET, startServer } from '../history/server.js';
import { costMeter } from '../many-sales/costs.js';
import { checkSale, type Verdict, waitStored } from '../many-sales/stores.js';
import { readFlags } from '../support/flags.js';
import { median } from '../support/stats.js';

const flags = readFlags({ units: 10_000, buyers: 100_000, claims: 200_000, rounds: 3, connections: 64, 'database-server': 'mysql://root@127.0.0.1:3306', json: null });
const { units: UNITS, buyers: BUYERS, claims: CLAIMS, rounds: ROUNDS, connections: CONNECTIONS } = flags;
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const say = (line: string) => process.stderr.write(`${line}\n`);
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').trim();

/** What one side cost, per answer (µs of CPU). */
interface Side {
  kind: 'sale' | 'bare';
  round: number;
  answers: number;
  answersPerS: number;
  p99Ms: number;
  seconds: number;
  serverUs: number;
  redisUs: number;
  databaseUs: number;
  /** The machine's busy time less the load generator's. */
  boxUs: number;
  loadGeneratorUs: number;
  outcomes: Record<string, number>;
  verdict?: Verdict;
}

/** Drives the plan's requests at `path`, measuring the machine and this process from the first request to `settled`. */
async function drive(origin: string, path: string, credentials: Credentials, round: number, settled: (recorder: SaleRecorder) => Promise<void>) {
  const plan = new RequestPlan({ buyers: BUYERS, repeatShare: 1, sameKeyShare: 0, seed: round, keyTag: `ws${round}` });
  const recorder = new SaleRecorder(performance.now());
  const self = process.cpuUsage();
  const machine = machineBusyUs() ?? NaN;
  const window = await driveLoad({ origin, path, connections: CONNECTIONS, requests: CLAIMS, timeoutMs: 30_000 }, plan, credentials, recorder);
  await settled(recorder);
  const used = process.cpuUsage(self);
  const loadGeneratorUs = used.user + used.system;
  const seconds = (performance.now() - window.startedAt) / 1000;
  return { recorder, window, seconds, loadGeneratorUs, boxUs: (machineBusyUs() ?? NaN) - machine - loadGeneratorUs };
}

async function sale(origin: string, api: JsonClient, credentials: Credentials, d: { db: ReturnType<typeof createDb>; redis: Redis; keys: ReturnType<typeof createKeySpace>; cpuUs: () => number }, round: number): Promise<Side> {
  const now = Date.now();
  const created = await api.request('POST', '/api/vouchers', {
    headers: { authorization: credentials.admin },
    body: { title: `whole sale r${round}`, kind: 'seckill', stock: UNITS, paymentTimeoutSeconds: 3600, beginAt: new Date(now - 1000).toISOString(), endAt: new Date(now + 3_600_000).toISOString() },
  });
  if (created.status !== 201) throw new Error(`voucher not created: ${created.status} ${JSON.stringify(created.body)}`);
  const voucher = { id: String(created.body.id), stock: UNITS };
  await new Promise((r) => setTimeout(r, 500));
  const costs = await costMeter(d.cpuUs, d.redis, d.db);
  const run = await drive(origin, `/api/vouchers/${voucher.id}/orders`, credentials, round, async (recorder) => {
    await waitStored(d.db, [voucher], recorder.orderIds.length, 300_000);
  });
  const cost = await costs();
  const { verdict } = await checkSale(d.db, d.redis, d.keys, [voucher], run.recorder.orderIds);
  if (run.recorder.orderIds.length !== UNITS) {
    verdict.problems.unshift(`${run.recorder.orderIds.length} of ${UNITS} units sold`);
    verdict.ok = false;
  }
  return side('sale', round, run, cost.serverUs, cost.redisUs, cost.databaseUs, verdict);
}

async function bare(credentials: Credentials, round: number): Promise<Side> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../admission/server.ts', import.meta.url)), 'bare'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const ready = JSON.parse(String((await lines.next()).value)) as { type: string; port: number; path: string };
  if (ready.type !== 'ready') throw new Error(`bare Fastify did not start: ${JSON.stringify(ready)}`);
  try {
    const cpu = processCpuUs(child.pid!);
    const run = await drive(`http://127.0.0.1:${ready.port}`, ready.path, credentials, round, async () => {});
    return side('bare', round, run, processCpuUs(child.pid!) - cpu, 0, 0);
  } finally {
    child.stdin.end(); // the child stops when its stdin closes
    await new Promise((r) => child.once('exit', r));
  }
}

function side(kind: Side['kind'], round: number, run: Awaited<ReturnType<typeof drive>>, serverUs: number, redisUs: number, databaseUs: number, verdict?: Verdict): Side {
  const answers = run.recorder.latency.count;
  const per = (us: number) => us / Math.max(1, answers);
  return {
    kind,
    round,
    answers,
    answersPerS: answers / ((run.window.endedAt - run.window.startedAt) / 1000),
    p99Ms: run.recorder.latency.summary().p99Ms,
    seconds: run.seconds,
    serverUs: per(serverUs),
    redisUs: per(redisUs),
    databaseUs: per(databaseUs),
    boxUs: per(run.boxUs),
    loadGeneratorUs: per(run.loadGeneratorUs),
    outcomes: Object.fromEntries(run.recorder.outcomes),
    ...(verdict ? { verdict } : {}),
  };
}

const fmt = (n: number, digits = 1) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function report(sides: Side[]): string {
  const rounds = [...new Set(sides.map((s) => s.round))];
  const of = (kind: Side['kind'], round: number) => sides.find((s) => s.kind === kind && s.round === round)!;
  const rows: [string, (s: Side) => number, number][] = [
    ['answers/s', (s) => s.answersPerS, 0],
    ['p99 ms', (s) => s.p99Ms, 1],
    ['server CPU µs / answer', (s) => s.serverUs, 1],
    ['whole box less the load generator, CPU µs / answer', (s) => s.boxUs, 1],
    ['of which Redis', (s) => s.redisUs, 1],
    ['of which the database server', (s) => s.databaseUs, 1],
    ['load generator CPU µs / answer', (s) => s.loadGeneratorUs, 1],
  ];
  const head = ['', ...rounds.flatMap((r) => [`r${r} sale`, `r${r} bare`, `r${r} sale/bare`]), 'median sale/bare'];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i ? ' ---: ' : ' --- ')).join('|')}|`];
  for (const [name, value, digits] of rows) {
    const ratios = rounds.map((r) => value(of('sale', r)) / value(of('bare', r)));
    const cells = rounds.flatMap((r, i) => [fmt(value(of('sale', r)), digits), fmt(value(of('bare', r)), digits), Number.isFinite(ratios[i]!) ? `${fmt(ratios[i]!, 2)}×` : '—']);
    const m = median(ratios.filter(Number.isFinite));
    lines.push(`| ${name} | ${cells.join(' | ')} | ${Number.isFinite(m) ? `**${fmt(m, 2)}×**` : '—'} |`);
  }
  const outcomes = rounds.map((r) => `r${r}: ${Object.entries(of('sale', r).outcomes).map(([k, n]) => `${k} ${n.toLocaleString('en-US')}`).join(', ')}`);
  const verdicts = rounds.map((r) => `r${r} ${of('sale', r).verdict?.ok ? 'PASS' : `FAIL: ${of('sale', r).verdict?.problems.join('; ')}`}`);
  return `${lines.join('\n')}\n\nSale outcomes: ${outcomes.join(' · ')}\nVerdict from both stores: ${verdicts.join(' · ')}\n`;
}

async function main() {
  const label = `bench_whole_sale_${process.pid}`;
  const databaseUrl = `${flags['database-server']}/${label}`;
  const prefix = `bws${process.pid}`;
  const loadBefore = loadavg();
  const redisServer = await startOwnRedis('private');
  const server = await startServer({ DATABASE_URL: databaseUrl, REDIS_URL: redisServer.url, REDIS_PREFIX: prefix });
  const redis = new Redis(redisServer.url);
  const db = createDb(databaseUrl, 2);
  const api = new JsonClient(server.origin, 4);
  const credentials = await mintCredentials({ secret: JWT_SECRET, buyers: BUYERS, firstUserId: 1_000_000n, ttlSeconds: 3 * 3600 });
  const d = { db, redis, keys: createKeySpace(prefix, 16), cpuUs: server.cpuUs };
  const sides: Side[] = [];
  try {
    say(`seckill serve ready; a warm-up sale, then ${ROUNDS} rounds of ${fmt(CLAIMS, 0)} claims for ${fmt(UNITS, 0)} units by ${fmt(BUYERS, 0)} buyers`);
    await sale(server.origin, api, credentials, d, 0);
    await bare(credentials, 0);
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 ? [() => sale(server.origin, api, credentials, d, round), () => bare(credentials, round)] : [() => bare(credentials, round), () => sale(server.origin, api, credentials, d, round)];
      for (const next of order) {
        const s = await next();
        sides.push(s);
        say(`round ${round} ${s.kind}: ${fmt(s.answersPerS, 0)} answers/s, server ${fmt(s.serverUs)} µs, box ${fmt(s.boxUs)} µs per answer${s.verdict ? `, ${s.verdict.ok ? 'PASS' : `FAIL: ${s.verdict.problems.join('; ')}`}` : ''}`);
      }
    }
  } finally {
    api.close();
    await server.stop();
    await deleteKeys(redis, `${prefix}:*`);
    redis.disconnect();
    await db.destroy();
    await dropDatabase(databaseUrl).catch((err) => say(`database ${label} not dropped: ${(err as Error).message}`));
    await redisServer.stop();
  }
  const m = machineInfo();
  process.stdout.write(
    `${fmt(CLAIMS, 0)} claims by ${fmt(BUYERS, 0)} buyers for ${fmt(UNITS, 0)} units; ${CONNECTIONS} connections; ${ROUNDS} rounds; ${flags['database-server'].split(':')[0]}\n` +
      `machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}; /proc/loadavg before: ${loadBefore}; after: ${loadavg()}\n\n${report(sides)}`,
  );
  if (flags.json) {
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(resolve(RESULTS, flags.json), JSON.stringify({ units: UNITS, buyers: BUYERS, claims: CLAIMS, machine: m, sides }, null, 2));
  }
  if (sides.some((s) => s.verdict && !s.verdict.ok)) process.exitCode = 1;
}

await main();
