// Redis-side costs of admission on one server and on a Redis Cluster, from each master's own
// counters (INFO cpu, INFO commandstats), in one run:
//   (a) Redis CPU per admitted claim on one server (batched admit calls, the shipped defaults, and
//       with the per-buyer bucket off);
//   (b) many vouchers on a 3-master cluster: each master's share of admit calls and Redis CPU;
//   (c) one hot voucher at the same offered load with segments: 1 and segments: 3 (each master's
//       Redis CPU per second), and the most it admits on the cluster against one server;
//   (d) the same hot voucher when Redis is the limit: each master held to a few per cent of a core
//       (a CPU quota of its own cgroup), segments: 1 against segments: 3, as fast as it goes.
//   node --import tsx bench/cluster/run.ts [--seconds 6] [--rate 2000] [--concurrency 128]
//        [--vouchers 24] [--shards 48] [--capped 5] [--capped-concurrency 512] [--rounds 1] [--json]
// The driver is in the process of the app (Fastify's inject: no sockets), the same for every case,
// so the Redis figures are the point; the throughput ratio compares like with like. Each case
// has its own Redis prefix and database, removed at the end; the topologies are private
// (scripts/redis-topology.sh on free ports) and stopped at the end.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmdirSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { type Container, createContainer } from '../../src/container.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { freePorts } from '../../support/free-ports.js';
import { readFlags } from '../support/flags.js';
import { median } from '../support/stats.js';

const run = promisify(execFile);
const TOPOLOGY = fileURLToPath(new URL('../../scripts/redis-topology.sh', import.meta.url));
const MYSQL_SERVER = process.env.BENCH_MYSQL_SERVER ?? 'mysql://root@127.0.0.1:3306';

const flags = readFlags({ seconds: 6, rate: 2000, concurrency: 128, vouchers: 24, shards: 48, capped: 5, 'capped-concurrency': 512, rounds: 1, json: false });
const { seconds: SECONDS, rate: RATE, concurrency: CONCURRENCY, vouchers: VOUCHERS, shards: SHARDS, rounds: ROUNDS, capped: CAPPED_PERCENT } = flags;
const CAPPED_CONCURRENCY = flags['capped-concurrency'];
const say = (line: string) => process.stderr.write(`${line}\n`);

// --- topologies --------------------------------------------------------------------------------

interface Topology {
  /** REDIS_URL or REDIS_CLUSTER_NODES for the app. */
  env: Record<string, string>;
  /** One connection per master, for its counters. */
  masters: Redis[];
  stop(): Promise<void>;
}

async function startTopology(kind: 'single' | 'cluster'): Promise<Topology> {
  const port = await freePorts(kind === 'single' ? 1 : 3, { clusterBus: kind === 'cluster' });
  const args = [kind, 'up', '--port', String(port), '--dir', mkdtempSync(join(tmpdir(), `bench-${kind}-`))];
  // No replicas: on a 2-core box their CPU would come out of the same two cores as everything
  // else, which a one-server comparison does not pay (a real cluster's replicas run elsewhere).
  const { stdout } = await run('bash', [TOPOLOGY, ...args, ...(kind === 'cluster' ? ['--replicas', '0'] : [])]);
  const [name, value] = stdout.trim().split('=') as [string, string];
  const masters = (kind === 'single' ? [port] : [port, port + 1, port + 2]).map((p) => new Redis(p, '127.0.0.1', { connectionName: 'bench-counters' }));
  return {
    env: { [name]: value },
    masters,
    async stop() {
      for (const m of masters) m.disconnect();
      await run('bash', [TOPOLOGY, kind, 'down', ...args.slice(2)]);
    },
  };
}

// --- (d): a master held to a share of a core --------------------------------------------------

/** The cgroup CPU controller: v1's `cpu` hierarchy, or v2's (cpu.max); null when neither is writable. */
function cpuCgroupRoot(): { dir: string; v2: boolean } | null {
  for (const [dir, v2] of [['/sys/fs/cgroup/cpu', false], ['/sys/fs/cgroup', true], ['/sys/fs/cgroup/unified', true]] as const) {
    if (existsSync(`${dir}/${v2 ? 'cgroup.subtree_control' : 'cpu.cfs_quota_us'}`)) return { dir, v2 };
  }
  return null;
}

/**
 * Holds process `pid` to `percent` of one core, in a cgroup of its own; returns what lifts it. The
 * quota is per 20 ms, so a held Redis waits at most that long for its turn: far inside the
 * command timeout.
 */
function capCpu(pid: number, percent: number): () => void {
  const root = cpuCgroupRoot();
  if (!root) throw new Error('no writable cgroup cpu controller (needs root): run with --capped 0');
  const dir = `${root.dir}/seckill-bench-${pid}`;
  mkdirSync(dir, { recursive: true });
  const period = 20_000;
  const quota = Math.max(1_000, Math.round((period * percent) / 100)); // the kernel's least quota is 1 ms
  if (root.v2) {
    if (!existsSync(`${dir}/cpu.max`)) throw new Error(`cgroup v2 without the cpu controller for ${root.dir}'s children: run with --capped 0`);
    writeFileSync(`${dir}/cpu.max`, `${quota} ${period}`);
  } else {
    writeFileSync(`${dir}/cpu.cfs_period_us`, String(period));
    writeFileSync(`${dir}/cpu.cfs_quota_us`, String(quota));
  }
  writeFileSync(`${dir}/cgroup.procs`, String(pid));
  return () => {
    // Back to the parent group, then the empty group can go.
    writeFileSync(`${root.dir}/cgroup.procs`, String(pid));
    rmdirSync(dir);
  };
}

async function pidOf(node: Redis): Promise<number> {
  return Number(/^process_id:(\d+)/m.exec(await node.info('server'))?.[1]);
}

/** What one master has done so far: CPU µs (user + system), script calls and their µs. */
interface Counters {
  cpuUs: number;
  scriptCalls: number;
  scriptUs: number;
}

async function countersOf(node: Redis): Promise<Counters> {
  const info = (await node.info('cpu')) + (await node.info('commandstats'));
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  const evalsha = /^cmdstat_evalsha:calls=(\d+),usec=(\d+)/m.exec(info);
  return { cpuUs: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6, scriptCalls: Number(evalsha?.[1] ?? 0), scriptUs: Number(evalsha?.[2] ?? 0) };
}

const minus = (a: Counters, b: Counters): Counters => ({ cpuUs: a.cpuUs - b.cpuUs, scriptCalls: a.scriptCalls - b.scriptCalls, scriptUs: a.scriptUs - b.scriptUs });

// --- the app and its load ----------------------------------------------------------------------

interface Bench {
  c: Container;
  app: Awaited<ReturnType<typeof buildApp>>;
  close(): Promise<void>;
}

let nextName = 0;
async function startApp(topology: Topology, overrides: Record<string, string> = {}): Promise<Bench> {
  const name = `bench_cluster_${process.pid}_${nextName++}`;
  const config = loadConfig({
    ...topology.env,
    DATABASE_URL: `${MYSQL_SERVER}/${name}`,
    REDIS_PREFIX: name,
    JWT_SECRET: 'bench-secret',
    LOG_LEVEL: 'warn',
    SHARDS: String(SHARDS),
    ...overrides,
  });
  const c = await createContainer(config, pino({ level: config.logLevel }), { migrate: true });
  const app = await buildApp(c.appDeps);
  await app.ready();
  return {
    c,
    app,
    async close() {
      await app.close();
      await c.close();
      await dropDatabase(config.databaseUrl);
    },
  };
}

async function createVoucher(b: Bench, segments: number): Promise<string> {
  const res = await b.app.inject({
    method: 'POST',
    url: '/api/vouchers',
    headers: { authorization: `Bearer ${await b.c.tokens.sign({ userId: 1n, admin: true }, 3600)}` },
    payload: { title: 'bench', kind: 'seckill', stock: 10_000_000, segments, beginAt: new Date(Date.now() - 60_000).toISOString(), endAt: new Date(Date.now() + 3_600_000).toISOString() },
  });
  if (res.statusCode !== 201) throw new Error(`voucher not created: ${res.statusCode} ${res.body}`);
  return res.json().id as string;
}

let nextUser = 1_000_000;

/**
 * Claims from fresh users on `vouchers` (round robin) for SECONDS: `concurrency` at a time, or
 * paced at `rate` per second. Returns the 202 answers.
 */
async function load(b: Bench, vouchers: string[], { rate, concurrency }: { rate?: number; concurrency: number }): Promise<number> {
  const until = performance.now() + SECONDS * 1000;
  const startedAt = performance.now();
  let sent = 0;
  let admitted = 0;
  const one = async () => {
    const user = nextUser++;
    const res = await b.app.inject({
      method: 'POST',
      url: `/api/vouchers/${vouchers[sent++ % vouchers.length]}/orders`,
      headers: { authorization: `Bearer ${await b.c.tokens.sign({ userId: BigInt(user), admin: false }, 600)}` },
    });
    if (res.statusCode === 202) admitted += 1;
    else if (res.statusCode !== 429) throw new Error(`claim answered ${res.statusCode} ${res.body}`);
  };
  const worker = async () => {
    while (performance.now() < until) {
      if (rate) {
        const due = startedAt + (sent / rate) * 1000;
        if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
        if (performance.now() >= until) break;
      }
      await one();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return admitted;
}

interface Measured {
  admitted: number;
  seconds: number;
  perMaster: Counters[];
}

async function measure(topology: Topology, b: Bench, vouchers: string[], options: { rate?: number; concurrency: number }): Promise<Measured> {
  await load(b, vouchers, { ...options, concurrency: Math.min(options.concurrency, 16) }); // warm-up: JIT, connections, scripts
  const before = await Promise.all(topology.masters.map(countersOf));
  const t0 = performance.now();
  const admitted = await load(b, vouchers, options);
  const seconds = (performance.now() - t0) / 1000;
  const after = await Promise.all(topology.masters.map(countersOf));
  return { admitted, seconds, perMaster: after.map((a, i) => minus(a, before[i]!)) };
}

const sum = (list: Counters[]) => list.reduce((a, b) => ({ cpuUs: a.cpuUs + b.cpuUs, scriptCalls: a.scriptCalls + b.scriptCalls, scriptUs: a.scriptUs + b.scriptUs }));
const perAdmission = (m: Measured) => ({ cpuUs: sum(m.perMaster).cpuUs / m.admitted, scriptUs: sum(m.perMaster).scriptUs / m.admitted, claimsPerCall: m.admitted / sum(m.perMaster).scriptCalls });
const fixed = (n: number, digits = 1) => n.toFixed(digits);

// --- the cases ---------------------------------------------------------------------------------

async function oneRound() {
  const single = await startTopology('single');
  const cluster = await startTopology('cluster');
  try {
    // (a) one server, one voucher, as much as the driver sends.
    let b = await startApp(single);
    const hotSingle = await measure(single, b, [await createVoucher(b, 1)], { concurrency: CONCURRENCY });
    await b.close();
    b = await startApp(single, { BUCKET_USER_RATE: '0' });
    const noBucket = await measure(single, b, [await createVoucher(b, 1)], { concurrency: CONCURRENCY });
    await b.close();

    // (b) the cluster, many vouchers of one segment each.
    b = await startApp(cluster);
    const many = await Promise.all(Array.from({ length: VOUCHERS }, () => createVoucher(b, 1)));
    const spread = await measure(cluster, b, many, { concurrency: CONCURRENCY });
    // (c) one hot voucher at the same offered load: one segment, then three; then as much as it takes.
    const k1 = await measure(cluster, b, [await createVoucher(b, 1)], { rate: RATE, concurrency: CONCURRENCY });
    const hot3 = await createVoucher(b, 3);
    const k3 = await measure(cluster, b, [hot3], { rate: RATE, concurrency: CONCURRENCY });
    const k3Max = await measure(cluster, b, [hot3], { concurrency: CONCURRENCY });
    // (d) Redis the limit: every master held to CAPPED_PERCENT of a core; many buyers at a time.
    let capped: { k1: Measured; k3: Measured } | undefined;
    if (CAPPED_PERCENT > 0) {
      const lifts: (() => void)[] = [];
      try {
        for (const pid of await Promise.all(cluster.masters.map(pidOf))) lifts.push(capCpu(pid, CAPPED_PERCENT));
        const k1Capped = await measure(cluster, b, [await createVoucher(b, 1)], { concurrency: CAPPED_CONCURRENCY });
        const k3Capped = await measure(cluster, b, [await createVoucher(b, 3)], { concurrency: CAPPED_CONCURRENCY });
        capped = { k1: k1Capped, k3: k3Capped };
      } finally {
        for (const lift of lifts) lift();
      }
    }
    await b.close();
    return { hotSingle, noBucket, spread, k1, k3, k3Max, capped };
  } finally {
    await cluster.stop();
    await single.stop();
  }
}

const rounds: Awaited<ReturnType<typeof oneRound>>[] = [];
for (let r = 0; r < ROUNDS; r++) {
  say(`round ${r + 1} of ${ROUNDS}`);
  rounds.push(await oneRound());
}

const shares = (m: Measured, pick: (c: Counters) => number) => {
  const total = m.perMaster.reduce((n, c) => n + pick(c), 0);
  return m.perMaster.map((c) => pick(c) / total);
};
const cpuPerSecond = (m: Measured) => m.perMaster.map((c) => c.cpuUs / 1e6 / m.seconds);
const callsPerSecond = (m: Measured) => m.perMaster.map((c) => c.scriptCalls / m.seconds);

const report = rounds.map((r) => ({
  a: {
    defaults: { admissionsPerSecond: r.hotSingle.admitted / r.hotSingle.seconds, ...perAdmission(r.hotSingle) },
    bucketOff: { admissionsPerSecond: r.noBucket.admitted / r.noBucket.seconds, ...perAdmission(r.noBucket) },
  },
  b: { callShares: shares(r.spread, (c) => c.scriptCalls), cpuShares: shares(r.spread, (c) => c.cpuUs), admissionsPerSecond: r.spread.admitted / r.spread.seconds },
  c: {
    offeredPerSecond: RATE,
    k1CpuPerSecond: cpuPerSecond(r.k1),
    k3CpuPerSecond: cpuPerSecond(r.k3),
    k1CallsPerSecond: callsPerSecond(r.k1),
    k3CallsPerSecond: callsPerSecond(r.k3),
    k1: perAdmission(r.k1),
    k3: perAdmission(r.k3),
    k1Admitted: r.k1.admitted / r.k1.seconds,
    k3Admitted: r.k3.admitted / r.k3.seconds,
    clusterK3Max: r.k3Max.admitted / r.k3Max.seconds,
    singleMax: r.hotSingle.admitted / r.hotSingle.seconds,
  },
  d: r.capped && {
    percentOfCore: CAPPED_PERCENT,
    k1Admitted: r.capped.k1.admitted / r.capped.k1.seconds,
    k3Admitted: r.capped.k3.admitted / r.capped.k3.seconds,
    k1CpuPerSecond: cpuPerSecond(r.capped.k1),
    k3CpuPerSecond: cpuPerSecond(r.capped.k3),
    k1: perAdmission(r.capped.k1),
    k3: perAdmission(r.capped.k3),
  },
}));

const last = report[report.length - 1]!;
const lines = [
  `machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}; ${SECONDS} s per case, concurrency ${CONCURRENCY}, SHARDS ${SHARDS}, ${ROUNDS} round(s) (medians below)`,
  `(a) one server, one voucher: Redis CPU per admission ${fixed(median(report.map((r) => r.a.defaults.cpuUs)))} µs (scripts ${fixed(median(report.map((r) => r.a.defaults.scriptUs)))} µs, ${fixed(median(report.map((r) => r.a.defaults.claimsPerCall)))} claims per admit call) at ${fixed(median(report.map((r) => r.a.defaults.admissionsPerSecond)), 0)}/s; bucket off: ${fixed(median(report.map((r) => r.a.bucketOff.cpuUs)))} µs (scripts ${fixed(median(report.map((r) => r.a.bucketOff.scriptUs)))} µs)`,
  `(b) ${VOUCHERS} vouchers on 3 masters: admit-call shares ${last.b.callShares.map((s) => `${fixed(s * 100)}%`).join(' / ')}, CPU shares ${last.b.cpuShares.map((s) => `${fixed(s * 100)}%`).join(' / ')} (last round)`,
  `(c) one hot voucher at ${RATE}/s offered: Redis CPU per master (cores) K=1 ${last.c.k1CpuPerSecond.map((x) => fixed(x, 3)).join(' / ')}, K=3 ${last.c.k3CpuPerSecond.map((x) => fixed(x, 3)).join(' / ')} (admitted ${fixed(last.c.k1Admitted, 0)}/s and ${fixed(last.c.k3Admitted, 0)}/s)`,
  `    admit calls per second per master: K=1 ${last.c.k1CallsPerSecond.map((x) => fixed(x, 0)).join(' / ')}, K=3 ${last.c.k3CallsPerSecond.map((x) => fixed(x, 0)).join(' / ')} (last round)`,
  `    most admitted: cluster K=3 ${fixed(median(report.map((r) => r.c.clusterK3Max)), 0)}/s, one server K=1 ${fixed(median(report.map((r) => r.c.singleMax)), 0)}/s: ${fixed((100 * median(report.map((r) => r.c.clusterK3Max / r.c.singleMax))))}%`,
];
if (last.d) {
  const d = report.map((r) => r.d!);
  lines.push(
    `(d) every master held to ${CAPPED_PERCENT}% of a core, ${CAPPED_CONCURRENCY} claims at a time: K=1 ${fixed(median(d.map((x) => x.k1Admitted)), 0)}/s, K=3 ${fixed(median(d.map((x) => x.k3Admitted)), 0)}/s: ${fixed(median(d.map((x) => x.k3Admitted / x.k1Admitted)), 2)}× (claims per call ${fixed(last.d.k1.claimsPerCall)} and ${fixed(last.d.k3.claimsPerCall)}, last round)`,
  );
}
for (const line of lines) say(line);
if (flags.json) process.stdout.write(`${JSON.stringify({ options: { SECONDS, RATE, CONCURRENCY, VOUCHERS, SHARDS, CAPPED_PERCENT, CAPPED_CONCURRENCY, ROUNDS }, rounds: report }, null, 2)}\n`);
process.exit(0);
