// Order-pipeline drain benchmark: orders stored per second from a pre-filled backlog, measured in
// the same run as (a) the seeds' one-order-per-transaction consumer and (b) raw batched INSERTs.
//   node --import tsx bench/drain/run.ts [--orders 200000] [--seed-orders 5000] [--seed-count 10]
//        [--vouchers 16] [--shards 16] [--lanes 4] [--batch 500] [--raw-batch 500]
//        [--cases raw,multi,timer,events,hot,seed] [--rounds 1] [--workers 0] [--breakdown] [--profile]
//        [--database mysql|postgres] [--json]
// Each case gets its own Redis prefix and empty tables in one throw-away database; all of them
// are removed at the end. --rounds N repeats every case N times and reports medians: the box may
// be shared, and the `other` CPU column shows how much else ran during each measurement.
// The database server is BENCH_DATABASE_SERVER (mysql://… or postgres://…, no database name), or
// --database for the local server of that kind.
// See README.md in this directory for what the numbers mean.
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { loadConfig, settings } from '../../src/config.js';
import { type Container, createContainer } from '../../src/container.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { readFlags } from '../support/flags.js';
import { type Durability, type Machine, readDurability, readMachine } from './probes.js';
import {
  benchExchange,
  relayCatchUp,
  drainOnePerTransaction,
  drainWithPipeline,
  type Measured,
  type PipelineResult,
  prefill,
  rawInserts,
  resetTables,
  type Verification,
  verifySale,
} from './scenarios.js';
import { median } from '../support/stats.js';

const TARGET_OF_RAW = 0.5;
const TARGET_OVER_ONE_PER_TX = 20;
const CASES = ['raw', 'multi', 'timer', 'events', 'hot', 'seed'] as const;
/** events: the drain with the order-event outbox on, against multi in the same round. */
const TARGET_EVENTS_OF_MULTI = 0.85;
/** events: the relay keeps up when the outbox is empty this soon after the drain. */
const TARGET_CATCH_UP_S = 2;
const DEFAULT_CASES = 'raw,multi,timer,hot,seed';
/** The local servers --database names (npm run services). */
const LOCAL_SERVERS = { mysql: 'mysql://root@127.0.0.1:3306', postgres: 'postgres://postgres@127.0.0.1:5432' } as const;
type Case = (typeof CASES)[number];

interface Options {
  orders: number;
  seedOrders: number;
  seedCount: number;
  vouchers: number;
  shards: number;
  lanes: number;
  batch: number;
  rawBatch: number;
  cases: Case[];
  workers: number;
  rounds: number;
  breakdown: boolean;
  profile: boolean;
  /** events: rows per relay round (EVENTS_BATCH). */
  eventsBatch: number;
  /** events: the relay starts only once the drain is measured (the outbox's own cost, apart from the relay's). */
  relayAfter: boolean;
  json: boolean;
  redisUrl: string;
  /** The database server's URL without a database name. */
  databaseServer: string;
  amqpUrl: string;
}

function parseOptions(argv: string[]): Options {
  const v = readFlags(
    {
      orders: 200_000,
      'seed-orders': 5_000,
      'seed-count': 10,
      vouchers: 16,
      shards: Number(settings.shards.default),
      lanes: Number(settings.pipelineLanes.default),
      batch: Number(settings.pipelineBatch.default),
      'raw-batch': 500,
      cases: DEFAULT_CASES,
      rounds: 1,
      workers: 0,
      breakdown: false,
      profile: false,
      'events-batch': Number(settings.eventsBatch.default),
      'relay-after': false,
      database: null,
      json: false,
    },
    { workers: 0 },
    argv,
  );
  if (v.workers !== 0 && (v.breakdown || v.profile)) {
    throw new Error('--breakdown and --profile apply to the in-process pipeline (--workers 0)');
  }
  const cases = v.cases.split(',').map((s) => s.trim());
  for (const c of cases) if (!(CASES as readonly string[]).includes(c)) throw new Error(`--cases: unknown case "${c}" (${CASES.join(', ')})`);
  return {
    databaseServer: databaseServer(v.database),
    orders: v.orders,
    seedOrders: v['seed-orders'],
    seedCount: v['seed-count'],
    vouchers: v.vouchers,
    shards: v.shards,
    lanes: v.lanes,
    batch: v.batch,
    rawBatch: v['raw-batch'],
    cases: cases as Case[],
    workers: v.workers,
    rounds: v.rounds,
    breakdown: v.breakdown,
    profile: v.profile,
    eventsBatch: v['events-batch'],
    relayAfter: v['relay-after'],
    json: v.json,
    redisUrl: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
    amqpUrl: process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
  };
}

/** --database, else BENCH_DATABASE_SERVER (BENCH_MYSQL_SERVER: its former name), else the local MariaDB. */
function databaseServer(flag: string | undefined): string {
  const env = process.env.BENCH_DATABASE_SERVER ?? process.env.BENCH_MYSQL_SERVER;
  if (flag === undefined) return (env ?? LOCAL_SERVERS.mysql).replace(/\/+$/, '');
  if (!Object.hasOwn(LOCAL_SERVERS, flag)) throw new Error(`--database must be ${Object.keys(LOCAL_SERVERS).join(' or ')}, got "${flag}"`);
  if (env !== undefined) throw new Error('--database and BENCH_DATABASE_SERVER (or BENCH_MYSQL_SERVER) both given: use one');
  return LOCAL_SERVERS[flag as keyof typeof LOCAL_SERVERS];
}

type CaseResult = Measured & Partial<Verification> & Partial<Omit<PipelineResult, keyof Measured>>;
const ROWS = ['raw1', 'rawLanes', 'multi', 'timer', 'events', 'hot', 'seed'] as const;
type Row = (typeof ROWS)[number];
type Round = Partial<Record<Row, CaseResult & { admitsPerSecond?: number; catchUpSeconds?: number }>> & { ratios: Record<string, number> };

interface Report {
  command: string;
  machine: Machine;
  durability: Durability;
  config: Omit<Options, 'json' | 'redisUrl' | 'databaseServer' | 'amqpUrl'>;
  rounds: Round[];
  /** Median over rounds of orders/s per case, and of each round's ratios. */
  median: { ordersPerSecond: Partial<Record<Row, number>>; ratios: Record<string, number> };
  targets: { ofRaw: boolean | null; overOnePerTx: boolean | null; eventsOfMulti: boolean | null; relayKeepsUp: boolean | null };
  loadavgAfter: number[];
}

const r2 = (n: number) => Math.round(n * 100) / 100;

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  const databaseUrl = `${o.databaseServer}/bench_drain_${process.pid}`;
  // Pipeline warnings (deadlock retries) go to stderr: stdout carries the report (--json).
  const log = pino({ level: 'warn' }, process.stderr);
  const say = (line: string) => {
    if (!o.json) console.error(line);
  };
  const configFor = (suffix: string, extra: Record<string, string> = {}) =>
    loadConfig({
      ...extra,
      REDIS_URL: o.redisUrl,
      DATABASE_URL: databaseUrl,
      REDIS_PREFIX: `bd${process.pid}${suffix}`,
      LOG_LEVEL: 'warn',
      SHARDS: String(o.shards),
      PIPELINE_LANES: String(o.lanes),
      PIPELINE_BATCH: String(o.batch),
      CONSUMER_NAME: `bench-drain-${process.pid}`,
    });
  // Each pipeline case gets a container of its own (own Redis prefix: own streams and in-flight
  // hashes), removed with its keys as soon as the case is measured. One database for everything.
  const withContainer = async <T>(suffix: string, fn: (c: Container) => Promise<T>, extra?: Record<string, string>): Promise<T> => {
    const c = await createContainer(configFor(suffix, extra), log);
    try {
      return await fn(c);
    } finally {
      await deleteKeys(c.redis, c.keys.pattern());
      await c.close();
    }
  };

  const base = await createContainer(configFor('x'), log, { migrate: true });
  try {
    const report: Report = {
      command: `node --import tsx bench/drain/run.ts ${process.argv.slice(2).join(' ')}`.trim(),
      machine: await readMachine(base.redis),
      durability: await readDurability(base.db, base.redis),
      config: (({ json, redisUrl, databaseServer, amqpUrl, ...rest }) => rest)(o),
      rounds: [],
      median: { ordersPerSecond: {}, ratios: {} },
      targets: { ofRaw: null, overOnePerTx: null, eventsOfMulti: null, relayKeepsUp: null },
      loadavgAfter: [],
    };
    say(`machine: ${report.machine.cpus} CPU, ${report.machine.memGiB} GiB, node ${report.machine.node}, redis ${report.machine.redis}, ${report.durability.version}; load ${report.machine.loadavg.join(' ')}`);

    for (let round = 1; round <= o.rounds; round++) {
      const r: Round = { ratios: {} };
      report.rounds.push(r);
      say(`round ${round} of ${o.rounds}`);
      if (o.cases.includes('raw')) {
        // Both a single connection and as many transactions in flight as the pipeline has lanes.
        await resetTables(base);
        say(`  (b) raw INSERTs, ${o.rawBatch}/transaction, 1 connection ...`);
        r.raw1 = await rawInserts(base, o.orders, o.rawBatch, 1);
        await resetTables(base);
        say(`  (b) raw INSERTs, ${o.rawBatch}/transaction, ${o.lanes} connections ...`);
        r.rawLanes = await rawInserts(base, o.orders, o.rawBatch, o.lanes);
      }
      for (const kind of ['multi', 'timer', 'events', 'hot'] as const) {
        if (!o.cases.includes(kind)) continue;
        await resetTables(base);
        const events = kind === 'events' ? await benchExchange(o.amqpUrl, `bench-drain-${process.pid}`) : null;
        r[kind] = await withContainer(`${kind[0]}${round}`, async (c) => {
          // events: the relay runs beside the pipeline, from the start, as in a worker (or after the drain).
          if (events && !o.relayAfter) await c.startEventRelay();
          const voucherCount = kind === 'hot' ? 1 : o.vouchers;
          say(`  pipeline, ${voucherCount} voucher(s): pre-filling ${o.orders} admissions ...`);
          const sale = await prefill(c, kind === 'hot' ? 2n : 1n, voucherCount, o.orders);
          say(`    pre-filled at ${sale.admitsPerSecond} admissions/s; draining ...`);
          const profileFile = o.profile ? fileURLToPath(new URL(`./profiles/${kind}-${process.pid}-${round}.cpuprofile`, import.meta.url)) : undefined;
          // timer: the same drain with the payment timer polling beside it (EXPIRY_POLL_MS).
          const result = await drainWithPipeline(c, sale, { workers: o.workers, breakdown: o.breakdown, profileFile, timer: kind === 'timer' });
          if (events && o.relayAfter) await c.startEventRelay();
          const caughtUp = events ? await relayCatchUp(c, sale, events.queued) : null;
          const verified = await verifySale(c, sale);
          if (caughtUp && !caughtUp.ok) verified.problems.push(caughtUp.problem!);
          verified.ok = verified.problems.length === 0;
          if (!verified.ok) say(`    VERIFICATION FAILED: ${verified.problems.join('; ')}`);
          return { ...result, ...verified, admitsPerSecond: sale.admitsPerSecond, ...(caughtUp ? { catchUpSeconds: caughtUp.seconds } : {}) };
        }, events ? { EVENTS_AMQP_URL: o.amqpUrl, EVENTS_EXCHANGE: events.exchange, EVENTS_BATCH: String(o.eventsBatch) } : undefined).finally(() => events?.remove());
      }
      if (o.cases.includes('seed')) {
        await resetTables(base);
        r.seed = await withContainer(`s${round}`, async (c) => {
          say(`  (a) one order per transaction: pre-filling ${o.seedOrders} admissions ...`);
          const sale = await prefill(c, 3n, 1, o.seedOrders);
          say('    draining ...');
          const result = await drainOnePerTransaction(c, sale, o.seedCount);
          if (!result.ok) say(`    VERIFICATION FAILED: ${result.problems.join('; ')}`);
          return result;
        });
      }
      // Ratios within the round (measured minutes apart at most), against the faster raw figure:
      // the stricter comparison.
      const raw = Math.max(r.raw1?.ordersPerSecond ?? 0, r.rawLanes?.ordersPerSecond ?? 0);
      const seed = r.seed?.ordersPerSecond ?? 0;
      for (const kind of ['multi', 'timer', 'events', 'hot'] as const) {
        const p = r[kind]?.ordersPerSecond;
        if (p === undefined) continue;
        if (raw) r.ratios[`${kind}/raw`] = r2(p / raw);
        if (seed) r.ratios[`${kind}/onePerTx`] = r2(p / seed);
      }
      if (r.timer && r.multi) r.ratios['timer/multi'] = r2(r.timer.ordersPerSecond / r.multi.ordersPerSecond);
      if (r.events && r.multi) r.ratios['events/multi'] = r2(r.events.ordersPerSecond / r.multi.ordersPerSecond);
    }

    for (const row of ROWS) {
      const xs = report.rounds.flatMap((r) => (r[row] ? [r[row].ordersPerSecond] : []));
      if (xs.length) report.median.ordersPerSecond[row] = Math.round(median(xs));
    }
    for (const k of Object.keys(report.rounds[0]?.ratios ?? {})) {
      report.median.ratios[k] = r2(median(report.rounds.map((r) => r.ratios[k] ?? 0)));
    }
    const ofRaw = report.median.ratios['multi/raw'];
    const overSeed = report.median.ratios['multi/onePerTx'];
    if (ofRaw !== undefined) report.targets.ofRaw = ofRaw >= TARGET_OF_RAW;
    if (overSeed !== undefined) report.targets.overOnePerTx = overSeed >= TARGET_OVER_ONE_PER_TX;
    const eventsOfMulti = report.median.ratios['events/multi'];
    if (eventsOfMulti !== undefined) report.targets.eventsOfMulti = eventsOfMulti >= TARGET_EVENTS_OF_MULTI;
    const catchUps = report.rounds.flatMap((r) => (r.events?.catchUpSeconds === undefined ? [] : [r.events.catchUpSeconds]));
    if (catchUps.length) report.targets.relayKeepsUp = catchUps.every((sec) => sec <= TARGET_CATCH_UP_S);
    report.loadavgAfter = (await readMachine(base.redis)).loadavg;

    if (o.json) console.log(JSON.stringify(report, null, 2));
    else console.log(render(report));
    const failed = report.rounds.some((r) => ROWS.some((row) => r[row]?.ok === false));
    process.exitCode = failed ? 1 : 0;
  } finally {
    await deleteKeys(base.redis, base.keys.pattern());
    await base.close();
    await dropDatabase(databaseUrl);
  }
}

function render(r: Report): string {
  const d = r.durability;
  const lines = [
    `database: ${d.version}; ${Object.entries(d.settings).map(([k, v]) => `${k}=${v}`).join(' ')} ` +
      `(commit flushes: ${d.commitFlushes ? 'yes' : 'NO'}; server defaults: ${d.allDefaults === null ? 'unknown' : d.allDefaults ? 'yes' : 'NO'})`,
    `redis: appendonly=${d.redis.appendonly} appendfsync=${d.redis.appendfsync} save="${d.redis.save}"`,
    `machine: ${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.memGiB} GiB, node ${r.machine.node}, redis ${r.machine.redis}; ` +
      `load ${r.machine.loadavg.join(' ')} -> ${r.loadavgAfter.join(' ')}`,
    `pipeline: SHARDS=${r.config.shards} PIPELINE_LANES=${r.config.lanes} PIPELINE_BATCH=${r.config.batch}, ` +
      (r.config.workers ? `${r.config.workers} worker process(es)` : 'in this process'),
    '',
  ];
  const labels: Record<Row, string> = {
    raw1: `(b) raw INSERT, ${r.config.rawBatch}/tx, 1 connection`,
    rawLanes: `(b) raw INSERT, ${r.config.rawBatch}/tx, ${r.config.lanes} connections`,
    multi: `pipeline, ${r.config.vouchers} vouchers on ${Math.min(r.config.vouchers, r.config.shards)} shards`,
    timer: 'same, with the payment timer running',
    events: 'same, order events on (outbox + relay)',
    hot: 'pipeline, 1 hot voucher (1 shard)',
    seed: `(a) one order per tx, XREADGROUP COUNT ${r.config.seedCount}`,
  };
  const pad = (s: string, n: number) => s.padEnd(n);
  const num = (s: string | number, n: number) => String(s).padStart(n);
  lines.push(`${pad('case', 46)}${num('round', 6)}${num('orders', 8)}${num('seconds', 9)}${num('orders/s', 10)}  ${pad('cpu s bench/database/redis/other', 33)}check`);
  for (const row of ROWS) {
    r.rounds.forEach((round, i) => {
      const m = round[row];
      if (!m) return;
      const check =
        (m.ok === undefined ? '' : m.ok ? 'ok' : `FAILED: ${m.problems?.join('; ')}`) +
        (m.retries ? `, ${m.retries} batch retries (deadlocks)` : '') +
        (m.catchUpSeconds === undefined ? '' : `, outbox empty ${m.catchUpSeconds} s after the drain`);
      const cpu = `${m.cpu.bench} / ${m.cpu.database} / ${m.cpu.redis} / ${m.cpu.other}`;
      lines.push(`${pad(labels[row], 46)}${num(i + 1, 6)}${num(m.orders, 8)}${num(m.seconds.toFixed(2), 9)}${num(m.ordersPerSecond, 10)}  ${pad(cpu, 33)}${check}`);
    });
    const med = r.median.ordersPerSecond[row];
    if (med !== undefined && r.rounds.length > 1) lines.push(`${pad(labels[row], 46)}${num('median', 6)}${num('', 17)}${num(med, 10)}`);
  }
  lines.push('', 'ratios (median over rounds of each round\'s ratio; raw = the faster raw figure):');
  for (const [k, v] of Object.entries(r.median.ratios)) lines.push(`  ${pad(k, 18)} ${v}`);
  const verdict = (b: boolean | null) => (b === null ? 'not measured' : b ? 'met' : 'NOT met');
  lines.push(`target pipeline (multi) >= ${TARGET_OF_RAW * 100}% of raw: ${verdict(r.targets.ofRaw)}`);
  lines.push(`target pipeline (multi) >= ${TARGET_OVER_ONE_PER_TX}x one-per-tx: ${verdict(r.targets.overOnePerTx)}`);
  lines.push(`target events on >= ${TARGET_EVENTS_OF_MULTI * 100}% of multi: ${verdict(r.targets.eventsOfMulti)}`);
  lines.push(`target relay keeps up (outbox empty <= ${TARGET_CATCH_UP_S} s after the drain): ${verdict(r.targets.relayKeepsUp)}`);
  r.rounds.forEach((round, i) => {
    for (const kind of ['multi', 'hot'] as const) {
      const p = round[kind];
      if (p?.breakdown && p.laneMs) {
        lines.push('', `breakdown (${kind}, round ${i + 1}): lane time ${p.laneMs} ms = busy lanes × wall`);
        let accounted = 0;
        for (const [k, v] of Object.entries(p.breakdown).sort((a, b) => b[1].ms - a[1].ms)) {
          accounted += v.ms;
          lines.push(`  ${pad(k, 32)}${num(v.ms, 8)} ms ${num(((100 * v.ms) / p.laneMs).toFixed(1), 6)}%  ${num(v.count, 7)} calls  ${num((v.ms / v.count).toFixed(2), 8)} ms/call`);
        }
        const rest = p.laneMs - accounted;
        lines.push(`  ${pad('rest (read, JS, waiting)', 32)}${num(rest, 8)} ms ${num(((100 * rest) / p.laneMs).toFixed(1), 6)}%`);
      }
      const prof = p?.profile;
      if (prof) {
        lines.push('', `CPU profile (${kind}, round ${i + 1}): ${prof.file}, busy ${prof.busyMs} ms; self time by pipeline stage:`);
        for (const [a, ms] of prof.byStage) lines.push(`  ${pad(a, 60)}${num(ms, 7)} ms ${num(((100 * ms) / prof.busyMs).toFixed(1), 6)}%`);
        lines.push('  by area:');
        for (const [a, ms] of prof.byArea) lines.push(`  ${pad(a, 60)}${num(ms, 7)} ms`);
        lines.push('  top functions (self):');
        for (const [f, ms] of prof.byFunction) lines.push(`  ${pad(f, 90)}${num(ms, 7)} ms`);
      }
    }
  });
  return lines.join('\n');
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
