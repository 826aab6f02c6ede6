// Does a dead webhook receiver slow the sale? In rotating rounds, one `seckill serve` (API and
// workers, default settings, RabbitMQ off) with webhooks off, one with WEBHOOK_URL pointing at a
// port where nothing listens (every attempt refused at once: the most attempts per second a dead
// receiver can cause), and, for what webhooks cost when they work, one with a receiver in this
// process that answers 204 to everything. Each sale starts its server on a database and key prefix of its own, runs an
// unmeasured warm-up sale (whose events, for the dead receiver, are retried during the measured
// one), then N buyers claim one unit each of one voucher. Per sale: claims/s, p99, the server's CPU
// per claim (/proc of its pid) over the claims and until every order is stored, the drain, the
// verdict from both stores, and what /metrics says of the webhooks.
//   node --import tsx bench/webhooks/run.ts [--buyers 20000] [--rounds 3] [--connections 64]
//        [--database-server mysql://root@127.0.0.1:3306] [--json webhooks.json]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
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
import { driveLoad } from '../../src/loadgen/driver.js';
import { startOwnRedis } from '../admission/own-redis.js';
import { JWT_SECRET, startServer } from '../history/server.js';
import { costMeter } from '../many-sales/costs.js';
import { checkSale, type Verdict, waitStored } from '../many-sales/stores.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { freePorts } from '../../support/free-ports.js';
import { readFlags } from '../support/flags.js';
import { median } from '../support/stats.js';

const flags = readFlags({ buyers: 20_000, rounds: 3, connections: 64, 'database-server': 'mysql://root@127.0.0.1:3306', json: null });
const WARMUP_BUYERS = 2_000;
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const WEBHOOK_SECRET = `whsec_${Buffer.from('bench webhooks secret, 32 bytes!').toString('base64')}`;
const say = (line: string) => process.stderr.write(`${line}\n`);
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').trim();

type Kind = 'off' | 'dead' | 'up';
const KINDS: Kind[] = ['off', 'dead', 'up'];

interface Sale {
  kind: Kind;
  round: number;
  admitted: number;
  claimsPerS: number;
  p99Ms: number;
  serverCpuUsPerClaimLoad: number;
  serverCpuUsPerClaim: number;
  databaseCpuUsPerClaim: number;
  drainLagMs: number;
  storedPerS: number;
  machineBusyCores: number | null;
  /** From the server's /metrics once every order was stored (webhooks on only). */
  webhooks: { delivered: number; failedAttempts: number; waiting: number; oldestAgeSeconds: number } | null;
  verdict: Verdict;
}

const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

/** One voucher of `buyers` units, each buyer claiming one. */
async function claimAll(api: JsonClient, origin: string, credentials: Credentials, tag: string, recorder: SaleRecorder) {
  const now = Date.now();
  const stock = credentials.buyers.length;
  const res = await api.request('POST', '/api/vouchers', {
    headers: { authorization: credentials.admin },
    body: { title: `webhooks bench ${tag}`, kind: 'seckill', stock, paymentTimeoutSeconds: 3600, beginAt: new Date(now - 1000).toISOString(), endAt: new Date(now + 3_600_000).toISOString() },
  });
  if (res.status !== 201) throw new Error(`voucher not created: ${res.status} ${JSON.stringify(res.body)}`);
  const voucher = { id: String(res.body.id), stock };
  const plan = new RequestPlan({ buyers: stock, repeatShare: 0, sameKeyShare: 0, seed: tag.length, keyTag: tag });
  const window = await driveLoad({ origin, path: `/api/vouchers/${voucher.id}/orders`, connections: flags.connections, requests: stock, timeoutMs: 30_000 }, plan, credentials, recorder);
  return { voucher, window };
}

async function sale(kind: Kind, round: number, redisUrl: string, urls: Record<'dead' | 'up', string>, measured: Credentials, warmup: Credentials): Promise<Sale> {
  const label = `bench_webhooks_${process.pid}_${kind}${round}`;
  const databaseUrl = `${flags['database-server']}/${label}`;
  const webhooks: Record<string, string> = kind === 'off' ? {} : { WEBHOOK_URL: urls[kind], WEBHOOK_SECRET };
  const server = await startServer({ DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, REDIS_PREFIX: label, ...webhooks });
  const api = new JsonClient(server.origin, 16);
  const db = createDb(databaseUrl, 2);
  const redis = new Redis(redisUrl);
  try {
    await claimAll(api, server.origin, warmup, `w${kind}${round}`, new SaleRecorder(performance.now()));
    const costs = await costMeter(server.cpuUs, redis, db);
    const recorder = new SaleRecorder(performance.now());
    const machine = measureCpu();
    const { voucher, window } = await claimAll(api, server.origin, measured, `m${kind}${round}`, recorder);
    const claimsCost = await costs();
    const cpu = machine(measured.buyers.length);
    const admitted = recorder.orderIds.length;
    const drainLagMs = await waitStored(db, [voucher], admitted, 300_000);
    const storedAt = performance.now();
    const saleCost = await costs();
    const scrape = kind !== 'off' ? await (await fetch(`${server.origin}/metrics`)).text() : null;
    const { verdict } = await checkSale(db, redis, createKeySpace(label, 16), [voucher], recorder.orderIds);
    const loadSeconds = (window.endedAt - window.startedAt) / 1000;
    return {
      kind,
      round,
      admitted,
      claimsPerS: recorder.latency.count / loadSeconds,
      p99Ms: recorder.latency.summary().p99Ms,
      serverCpuUsPerClaimLoad: claimsCost.serverUs / admitted,
      serverCpuUsPerClaim: saleCost.serverUs / admitted,
      databaseCpuUsPerClaim: saleCost.databaseUs / admitted,
      drainLagMs,
      storedPerS: admitted / ((storedAt - window.startedAt) / 1000),
      machineBusyCores: cpu.machineBusyCores,
      webhooks: scrape === null ? null : {
        delivered: metric(scrape, 'seckill_webhooks_delivered_total'),
        failedAttempts: metric(scrape, 'seckill_webhooks_failed_attempts_total'),
        waiting: metric(scrape, 'seckill_webhooks_waiting'),
        oldestAgeSeconds: metric(scrape, 'seckill_webhooks_oldest_waiting_age_seconds'),
      },
      verdict,
    };
  } catch (err) {
    say(`seckill serve's last lines:\n${server.tail(30)}`);
    throw err;
  } finally {
    api.close();
    await server.stop();
    await deleteKeys(redis, `${label}:*`);
    redis.disconnect();
    await db.destroy();
    await dropDatabase(databaseUrl).catch((err) => say(`database ${label} not dropped: ${(err as Error).message}`));
  }
}

const fmt = (x: number, digits = 0) => x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

const FIGURES: { name: string; of: (s: Sale) => number; digits: number }[] = [
  { name: 'claims/s', of: (s) => s.claimsPerS, digits: 0 },
  { name: 'p99 ms', of: (s) => s.p99Ms, digits: 1 },
  { name: 'server CPU µs / claim, claims', of: (s) => s.serverCpuUsPerClaimLoad, digits: 0 },
  { name: 'server CPU µs / claim, claims + drain', of: (s) => s.serverCpuUsPerClaim, digits: 0 },
  { name: 'database server CPU µs / claim', of: (s) => s.databaseCpuUsPerClaim, digits: 0 },
  { name: 'drain lag ms (last answer → all stored)', of: (s) => s.drainLagMs, digits: 0 },
  { name: 'stored/s (first claim → all stored)', of: (s) => s.storedPerS, digits: 0 },
  { name: 'machine busy cores', of: (s) => s.machineBusyCores ?? NaN, digits: 2 },
];

function report(sales: Sale[]): string {
  const rounds = [...new Set(sales.map((s) => s.round))];
  const of = (r: number, kind: Kind) => sales.find((s) => s.round === r && s.kind === kind)!;
  const rows = [['', ...rounds.flatMap((r) => KINDS.map((k) => `r${r} ${k}`)), 'median dead/off', 'median up/off']];
  const medianRatio = (f: (s: Sale) => number, kind: Kind) => `**${median(rounds.map((r) => f(of(r, kind)) / f(of(r, 'off')))).toFixed(2)}**`;
  for (const f of FIGURES) rows.push([f.name, ...rounds.flatMap((r) => KINDS.map((k) => fmt(f.of(of(r, k)), f.digits))), medianRatio(f.of, 'dead'), medianRatio(f.of, 'up')]);
  const hooks = (s: Sale) => (s.webhooks ? `${fmt(s.webhooks.delivered)} delivered · ${fmt(s.webhooks.failedAttempts)} failed · ${fmt(s.webhooks.waiting)} waiting` : '');
  rows.push(['webhooks (/metrics, all stored)', ...rounds.flatMap((r) => KINDS.map((k) => hooks(of(r, k)))), '', '']);
  rows.push(['verdict', ...rounds.flatMap((r) => KINDS.map((k) => (of(r, k).verdict.ok ? 'PASS' : 'FAIL'))), '', '']);
  return rows.map((r, i) => `| ${r.join(' | ')} |${i === 0 ? `\n|${r.map((_, j) => (j === 0 ? ' --- ' : ' ---: ')).join('|')}|` : ''}`).join('\n');
}

/** A receiver that answers 204 to everything, on a free port. */
async function healthyReceiver(): Promise<{ url: string; close(): void }> {
  const server = createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
  const port = await freePorts(1);
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${port}/hooks`, close: () => server.close() };
}

async function main() {
  const loadBefore = loadavg();
  const ownRedis = await startOwnRedis('private');
  // Nothing listens there: every attempt is refused at once.
  const deadUrl = `http://127.0.0.1:${await freePorts(1)}/hooks`;
  const receiver = await healthyReceiver();
  const credentials = await mintCredentials({ secret: JWT_SECRET, buyers: flags.buyers + WARMUP_BUYERS, firstUserId: 1_000_000n, ttlSeconds: 3 * 3600 });
  const measured = { admin: credentials.admin, buyers: credentials.buyers.slice(0, flags.buyers) };
  const warmup = { admin: credentials.admin, buyers: credentials.buyers.slice(flags.buyers) };
  const sales: Sale[] = [];
  try {
    for (let round = 1; round <= flags.rounds; round++) {
      // Rotate which goes first, so a drift of the box's speed favours none.
      for (const kind of [...KINDS.slice((round - 1) % 3), ...KINDS.slice(0, (round - 1) % 3)]) {
        const s = await sale(kind, round, ownRedis.url, { dead: deadUrl, up: receiver.url }, measured, warmup);
        sales.push(s);
        say(`round ${round} ${kind}: ${fmt(s.claimsPerS)} claims/s, p99 ${s.p99Ms.toFixed(1)} ms, ${fmt(s.serverCpuUsPerClaim)} µs server CPU/claim, drain lag ${fmt(s.drainLagMs)} ms, ${s.verdict.ok ? 'PASS' : `FAIL: ${s.verdict.problems.join('; ')}`}`);
      }
    }
  } finally {
    receiver.close();
    await ownRedis.stop();
  }
  const loadAfter = loadavg();
  const m = machineInfo();
  process.stdout.write(
    `${fmt(flags.buyers)} buyers, one claim each, after a warm-up sale of ${fmt(WARMUP_BUYERS)}; ${flags.connections} connections; ${flags.rounds} rounds; ${flags['database-server'].split(':')[0]}; dead receiver: ${deadUrl} (refused)\n` +
      `machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}; /proc/loadavg before: ${loadBefore}; after: ${loadAfter}\n\n${report(sales)}\n`,
  );
  if (flags.json) {
    mkdirSync(RESULTS, { recursive: true });
    const file = resolve(RESULTS, flags.json);
    writeFileSync(file, JSON.stringify({ ...flags, machine: m, loadBefore, loadAfter, sales }, null, 2));
    say(`raw output: ${file}`);
  }
  if (sales.some((s) => !s.verdict.ok)) process.exitCode = 1;
}

await main();
