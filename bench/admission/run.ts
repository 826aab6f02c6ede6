// Admission benchmark: the real claim endpoint against a bare Fastify endpoint, same run, same
// machine, each server in its own child process (server.ts). See README.md.
//   node --import tsx bench/admission/run.ts [--rounds 3] [--duration 10] [--connections 64]
//        [--warmup 2] [--tokens 300000] [--scenarios bare,admission,soldout] [--profile] [--json]
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { createSigner } from 'fast-jwt';
import { Redis } from 'ioredis';
import { machineBusyUs } from '../../src/loadgen/machine.js';
import { readFlags } from '../support/flags.js';
import { type OwnRedis, redisCpuUs, startOwnRedis } from './own-redis.js';
import { type Command, durabilityKnobOf, nodeLineOf, parseScenario, type Scenario, type ServerEnv, type ServerMessage, traceRatioOf } from './protocol.js';
import { OtlpReceiver } from '../../support/otlp-receiver.js';
import { nodeOfLine } from '../support/node-lines.js';
import { median } from '../support/stats.js';

/** Server CPU per admission over the bare endpoint's server CPU per request, same round. */
const TARGET_CPU_RATIO = 1.8;
const TARGET_P99_MS = 20;
/** ADMIT_DURABILITY=fsync against memory on the same kind of private Redis, same round. */
const TARGET_FSYNC_RATIO = 0.7;
const TARGET_FSYNC_P99_MS = 25;
/** A sold-out rejection (answered from memory) against the bare endpoint, same round. */
const TARGET_SOLDOUT_RATIO = 0.8;
/** Admission with both token buckets on against admission without, same round. */
const TARGET_BUCKETS_RATIO = 0.9;
/** Server CPU per admission with tracing on at a 1 % sample against off, same round. */
const TARGET_TRACE1_CPU_RATIO = 1.05;
/** On 2 cores, anything more than this much foreign CPU visibly slows the run. */
const OTHER_CORES_WARN = 0.2;

const note = (text: string) => process.stderr.write(`${text}\n`); // stdout stays clean for --json

function options() {
  const v = readFlags(
    { rounds: 1, duration: 10, connections: 64, warmup: 2, tokens: 300_000, scenarios: 'bare,admission,soldout', profile: false, json: false },
    { warmup: 0 },
  );
  return {
    ...v,
    scenarios: v.scenarios.split(',').map((s) => parseScenario(s.trim())),
    redisUrl: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
    mysqlServer: process.env.BENCH_MYSQL_SERVER ?? 'mysql://root@127.0.0.1:3306',
  };
}
type Options = ReturnType<typeof options>;

/**
 * One token per user (users 1..count), signed before any load, so that every request comes from a
 * different buyer (perUserLimit is 1) and the server's verification cache never hits.
 */
function signTokens(secret: string, count: number) {
  const sign = createSigner({ key: secret, algorithm: 'HS256' });
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const headers = Array.from({ length: count }, (_, i) => `Bearer ${sign({ sub: String(i + 1), exp })}`);
  let used = 0;
  return {
    next: () => headers[used++ % count]!,
    /** Each scenario has its own voucher, so users may start again at 1. */
    rewind: () => void (used = 0),
    /** A repeated user is refused (LIMIT_EXCEEDED): the scenario's figures would be wrong. */
    wrapped: () => used > count,
  };
}
type Tokens = ReturnType<typeof signTokens>;

async function startServer(scenario: Scenario, env: ServerEnv) {
  const line = nodeLineOf(scenario);
  const child = spawn(line === undefined ? process.execPath : nodeOfLine(line), ['--import', 'tsx', fileURLToPath(new URL('./server.ts', import.meta.url)), scenario.label], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting: ((m: ServerMessage) => void)[] = [];
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exited = true;
      for (const w of waiting.splice(0)) w({ type: 'error', message: `server exited with code ${code}` });
      resolve();
    }),
  );
  createInterface({ input: child.stdout }).on('line', (line) => {
    let message: ServerMessage;
    try {
      message = JSON.parse(line) as ServerMessage;
    } catch {
      return note(`[${scenario.label}] ${line}`);
    }
    const waiter = waiting.shift();
    if (waiter) waiter(message);
    else if (message.type === 'error') note(`[${scenario.label}] ${message.message}`);
  });
  const next = () => new Promise<ServerMessage>((resolve) => (exited ? resolve({ type: 'error', message: 'server exited' }) : waiting.push(resolve)));
  const request = async <T extends ServerMessage['type']>(command: Command, expect: T) => {
    const reply = next();
    child.stdin.write(`${command}\n`);
    const m = await reply;
    if (m.type !== expect) throw new Error(`${scenario.label}: ${m.type === 'error' ? m.message : `unexpected ${m.type}`}`);
    return m as Extract<ServerMessage, { type: T }>;
  };

  const ready = await next();
  if (ready.type !== 'ready') {
    child.kill('SIGTERM');
    throw new Error(`${scenario.label} failed to start: ${ready.type === 'error' ? ready.message : ready.type}`);
  }
  return {
    ready,
    request,
    async stop() {
      if (exited) return;
      child.stdin.end('stop\n');
      await exit;
    },
  };
}

interface Load {
  rps: number;
  p50: number;
  p99: number;
  max: number;
  status: Record<string, number>;
  sent: number;
  answered: number;
  errors: number;
}

/**
 * `seconds` of closed-loop load, then a drain: each connection stops after its pending response
 * instead of being cut off (autocannon's own stop destroys sockets with requests in flight), so
 * every admission the server made is counted and the stock check is exact.
 */
function load(port: number, path: string, seconds: number, connections: number, tokens: Tokens, keyed: boolean): Promise<Load> {
  return new Promise((resolve, reject) => {
    const clients: autocannon.Client[] = [];
    const latencies: number[] = [];
    const status: Record<string, number> = {};
    let sent = 0;
    let idempotencyKeys = 0;
    let inWindow = 0;
    let windowOpen = true;
    const started = performance.now();
    let windowS = seconds;
    const instance = autocannon(
      {
        url: `http://127.0.0.1:${port}${path}`,
        connections,
        duration: seconds + 15, // backstop only: the drain ends the run
        timeout: 10,
        sampleInt: 100, // autocannon notices that every client is done at its next sample tick
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
        setupClient(client) {
          clients.push(client);
          client.on('request', () => sent++);
        },
        requests: [
          {
            setupRequest(request) {
              request.headers.authorization = tokens.next();
              if (keyed) request.headers['idempotency-key'] = `k${++idempotencyKeys}`;
              return request;
            },
          },
        ],
      },
      (err, result) => {
        if (err) return reject(err);
        // Full-precision percentiles over every response (autocannon's histogram rounds to 1 ms).
        const sorted = Float64Array.from(latencies).sort();
        const at = (q: number) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? 0;
        resolve({ rps: inWindow / windowS, p50: at(0.5), p99: at(0.99), max: at(1), status, sent, answered: latencies.length, errors: result.errors });
      },
    );
    instance.on('response', (_client, code, _bytes, ms) => {
      if (windowOpen) inWindow++;
      status[code] = (status[code] ?? 0) + 1;
      latencies.push(ms);
    });
    setTimeout(() => {
      windowOpen = false;
      windowS = (performance.now() - started) / 1000;
      for (const client of clients) client.responseMax = client.reqsMade; // see autocannon.d.ts
    }, seconds * 1000);
  });
}


interface Result {
  scenario: string;
  round: number;
  load: Load;
  /** req/s over bare's in the same round; null when either run was disturbed. */
  ratio: number | null;
  /**
   * CPU µs per answered request in the measured run. On 2 cores the load generator, the server
   * and Redis share the machine: these explain the throughput, and drift less than req/s.
   */
  cpuUs: { server: number; redis: number; loadgen: number };
  /** Cores busy with anything else (other processes, kernel) during the measured run. */
  otherCores: number | null;
  /** Other work used more than OTHER_CORES_WARN cores: the medians leave this run out. */
  disturbed: boolean;
  /** 202 responses (warm-up included) against Redis stock taken; null where no stock is taken. */
  check: { accepted: number; taken: number; ok: boolean } | null;
  tokensWrapped: boolean;
  profile: string | null;
}

async function runScenario(scenario: Scenario, round: number, o: Options, tokens: Tokens, secret: string, redis: Redis, otlp: OtlpReceiver | null): Promise<Result> {
  // Redis prefix and database name: unique per run and scenario, at most 32 of [A-Za-z0-9_].
  const name = `bench_admission_${process.pid}_${round}_${o.scenarios.indexOf(scenario)}`;
  note(`[${scenario.label} #${round}] starting (${name})`);
  const knob = durabilityKnobOf(scenario);
  const own: OwnRedis | null = knob ? await startOwnRedis(knob) : null;
  const redisCpu = () => (own ? own.cpuUs() : redisCpuUs(redis));
  const traced = traceRatioOf(scenario) !== undefined && otlp ? { BENCH_OTLP_URL: otlp.url } : {};
  const server = await startServer(scenario, { BENCH_NAME: name, BENCH_JWT_SECRET: secret, BENCH_REDIS_URL: own?.url ?? o.redisUrl, BENCH_MYSQL_SERVER: o.mysqlServer, ...traced }).catch(
    async (err: unknown) => {
      await own?.stop();
      throw err;
    },
  );
  const watching = scenario.knobs.includes('console') ? watchLive(server.ready.port, server.ready.path, secret) : null;
  try {
    const { port, path, stock } = server.ready;
    tokens.rewind();
    const keyed = scenario.knobs.includes('keyed');
    const warm = o.warmup ? await load(port, path, o.warmup, o.connections, tokens, keyed) : null;
    if (o.profile) await server.request('profile-start', 'profile');
    const cpu = async () => ({
      at: performance.now(),
      server: (await server.request('state', 'state')).cpuUs,
      redis: await redisCpu(),
      self: process.cpuUsage(),
      machine: machineBusyUs(),
    });
    const before = await cpu();
    const measured = await load(port, path, o.duration, o.connections, tokens, keyed);
    const after = await cpu();
    const profile = o.profile ? (await server.request('profile-stop', 'profile')).file : null;
    const per = (us: number) => us / measured.answered;
    const selfUs = (c: NodeJS.CpuUsage) => c.user + c.system;
    const cpuUs = { server: after.server - before.server, redis: after.redis - before.redis, loadgen: selfUs(after.self) - selfUs(before.self) };
    const other = after.machine === null || before.machine === null ? null : after.machine - before.machine - cpuUs.server - cpuUs.redis - cpuUs.loadgen;
    const otherCores = other === null ? null : Math.max(0, other / ((after.at - before.at) * 1000));

    let check: Result['check'] = null;
    if (scenario.base !== 'bare' && !scenario.knobs.includes('stub-claim')) {
      const stockAfter = (await server.request('state', 'state')).stock;
      // The drain lets every request be answered (unanswered ones are reported), so this is an equality.
      const accepted = (warm?.status['202'] ?? 0) + (measured.status['202'] ?? 0);
      const taken = stock! - stockAfter!;
      check = { accepted, taken, ok: accepted === taken };
    }
    if (watching && (await watching.snapshots()) < o.duration) throw new Error(`+console: ${await watching.snapshots()} live snapshots in ${o.duration} s`);
    return {
      scenario: scenario.label,
      round,
      load: measured,
      ratio: null,
      cpuUs: { server: per(cpuUs.server), redis: per(cpuUs.redis), loadgen: per(cpuUs.loadgen) },
      otherCores,
      disturbed: (otherCores ?? 0) > OTHER_CORES_WARN,
      check,
      tokensWrapped: scenario.base !== 'bare' && tokens.wrapped(),
      profile,
    };
  } finally {
    watching?.stop();
    await server.stop();
    await own?.stop();
  }
}

/**
 * The console's live stream of the scenario's voucher, read as a browser reads it, for `+console`:
 * counts the snapshots that arrive (the run fails if fewer than one a second came).
 */
function watchLive(port: number, claimPath: string, secret: string) {
  const voucherId = claimPath.split('/')[3];
  const token = createSigner({ key: secret, algorithm: 'HS256' })({ sub: '1', role: 'admin', exp: Math.floor(Date.now() / 1000) + 3600 });
  const abort = new AbortController();
  let text = '';
  const reading = (async () => {
    const res = await fetch(`http://127.0.0.1:${port}/api/vouchers/${voucherId}/live`, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
    if (!res.ok || !res.body) throw new Error(`live stream answered ${res.status}`);
    for await (const chunk of res.body.pipeThrough(new TextDecoderStream())) text += chunk;
  })().catch((err: Error) => {
    if (err.name !== 'AbortError') throw err;
  });
  return {
    snapshots: async () => text.split('event: snapshot\n').length - 1,
    stop: () => {
      abort.abort();
      void reading;
    },
  };
}

function machine() {
  const version = (cmd: string, args: string[]) => {
    try {
      return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return 'unknown';
    }
  };
  return {
    cpus: os.availableParallelism(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    redis: version('redis-server', ['--version']),
    mariadb: version('mariadb', ['--version']),
  };
}

/**
 * Per scenario, the median of each figure over the undisturbed rounds (all rounds when every one
 * was disturbed); the ratio is the median of per-round ratios.
 */
function medians(results: Result[]) {
  return [...new Set(results.map((r) => r.scenario))].map((scenario) => {
    const all = results.filter((r) => r.scenario === scenario);
    const runs = all.some((r) => !r.disturbed) ? all.filter((r) => !r.disturbed) : all;
    const m = (pick: (r: Result) => number | null) => {
      const xs = runs.map(pick).filter((x): x is number => x !== null);
      return xs.length ? median(xs) : null;
    };
    return {
      scenario,
      rounds: runs.map((r) => r.round),
      rps: m((r) => r.load.rps)!,
      ratio: m((r) => r.ratio),
      p50: m((r) => r.load.p50)!,
      p99: m((r) => r.load.p99)!,
      cpuUs: { server: m((r) => r.cpuUs.server)!, redis: m((r) => r.cpuUs.redis)!, loadgen: m((r) => r.cpuUs.loadgen)! },
    };
  });
}

/** Median over the rounds where both ran undisturbed of `a`'s server CPU per request over `b`'s. */
function sameRoundCpuRatio(results: Result[], a: string, b: string): number | null {
  const ratios = results
    .filter((r) => r.scenario === a && !r.disturbed)
    .flatMap((r) => results.filter((o) => o.scenario === b && o.round === r.round && !o.disturbed).map((o) => r.cpuUs.server / o.cpuUs.server));
  return ratios.length ? median(ratios) : null;
}

/** Median over the rounds where both ran undisturbed of `a`'s req/s over `b`'s. */
function sameRoundRatio(results: Result[], a: string, b: string): number | null {
  const ratios: number[] = [];
  for (const x of results) {
    const y = results.find((r) => r.scenario === b && r.round === x.round);
    if (x.scenario === a && y && !x.disturbed && !y.disturbed) ratios.push(x.load.rps / y.load.rps);
  }
  return ratios.length ? median(ratios) : null;
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}

const f = (n: number | null, digits = 1) => (n === null ? '-' : n.toFixed(digits));
const pct = (n: number | null) => (n === null ? '-' : `${(n * 100).toFixed(1)}%`);

function report(results: Result[], o: Options): { text: string; verdict: object; ok: boolean } {
  const rows = table(
    ['scenario', 'round', 'req/s', 'vs bare', 'p50 ms', 'p99 ms', 'max ms', 'server µs', 'redis µs', 'loadgen µs', 'other cores', 'errors', 'status codes'],
    results.map((r) => [
      r.scenario, String(r.round), f(r.load.rps, 0), pct(r.ratio), f(r.load.p50, 2), f(r.load.p99, 2), f(r.load.max, 2),
      f(r.cpuUs.server), f(r.cpuUs.redis), f(r.cpuUs.loadgen), f(r.otherCores, 2), String(r.load.errors),
      Object.entries(r.load.status).map(([c, n]) => `${c}:${n}`).join(' '),
    ]),
  );
  const med = medians(results);
  const medRows = table(
    ['scenario', 'rounds', 'req/s', 'vs bare', 'p50 ms', 'p99 ms', 'server µs', 'redis µs', 'loadgen µs'],
    med.map((m) => [m.scenario, m.rounds.join(','), f(m.rps, 0), pct(m.ratio), f(m.p50, 2), f(m.p99, 2), f(m.cpuUs.server), f(m.cpuUs.redis), f(m.cpuUs.loadgen)]),
  );
  const admission = med.find((m) => m.scenario === 'admission');
  const clustered = med.find((m) => m.scenario === 'admission+cluster');
  const soldout = med.find((m) => m.scenario === 'soldout');
  const buckets = sameRoundRatio(results, 'admission+buckets', 'admission');
  const targets = (m: typeof admission, label: string) => {
    const cpuRatio = sameRoundCpuRatio(results, label, 'bare');
    return {
      ratio: m?.ratio ?? null,
      cpuRatio,
      cpuRatioOk: cpuRatio !== null ? cpuRatio <= TARGET_CPU_RATIO : null,
      p99Ms: m?.p99 ?? null,
      p99Ok: m ? m.p99 <= TARGET_P99_MS : null,
    };
  };
  const fsync = med.find((m) => m.scenario === 'admission+fsync');
  const privateRedis = med.find((m) => m.scenario === 'admission+private');
  const replica = med.find((m) => m.scenario === 'admission+replica');
  const fsyncRatio = sameRoundRatio(results, 'admission+fsync', 'admission+private');
  const redisCpuRatio = (m: typeof fsync) => (m && privateRedis ? m.cpuUs.redis / privateRedis.cpuUs.redis : null);
  const verdict = {
    ...targets(admission, 'admission'),
    /** The same targets for the API in two processes (API_PROCESSES=2), when measured. */
    cluster: clustered ? targets(clustered, 'admission+cluster') : null,
    soldoutRatio: soldout?.ratio ?? null,
    soldoutOk: soldout?.ratio != null ? soldout.ratio >= TARGET_SOLDOUT_RATIO : null,
    bucketsRatio: buckets,
    bucketsOk: buckets !== null ? buckets >= TARGET_BUCKETS_RATIO : null,
    /** Server CPU per admission with tracing on (1 % and 100 % sampled) over off, same round. */
    trace1CpuRatio: sameRoundCpuRatio(results, 'admission+trace1', 'admission'),
    trace100CpuRatio: sameRoundCpuRatio(results, 'admission+trace100', 'admission'),
    /** What each ADMIT_DURABILITY costs, against memory on a private Redis of the same kind. */
    durability: privateRedis
      ? {
          fsyncRatio,
          fsyncRatioOk: fsyncRatio !== null ? fsyncRatio >= TARGET_FSYNC_RATIO : null,
          fsyncP99Ms: fsync?.p99 ?? null,
          fsyncP99Ok: fsync ? fsync.p99 <= TARGET_FSYNC_P99_MS : null,
          fsyncRedisCpuRatio: redisCpuRatio(fsync),
          replicaRatio: sameRoundRatio(results, 'admission+replica', 'admission+private'),
          replicaP99Ms: replica?.p99 ?? null,
          replicaRedisCpuRatio: redisCpuRatio(replica),
        }
      : null,
  };
  const met = (ok: boolean | null) => (ok ? 'met' : 'NOT met');
  const lines = [
    `${o.connections} connections, ${o.duration} s measured after ${o.warmup} s warm-up, ${o.rounds} round(s), one user per request`,
    '"µs" = CPU µs per answered request (user + system) of the server child, Redis and the load generator;',
    '"other cores" = CPU used by anything else meanwhile (other processes compete for the same cores)',
    '',
    rows,
    '',
    `median over the undisturbed rounds:`,
    medRows,
    '',
  ];
  const notMeasured = 'not measured (no undisturbed round of both)';
  for (const [label, t] of [['admission', admission && verdict], ['admission+cluster', verdict.cluster]] as const) {
    if (!t) continue;
    if (results.some((r) => r.scenario === 'bare')) {
      lines.push(`${label} / bare, req/s: ${t.ratio === null ? notMeasured : pct(t.ratio)}`);
      const cpu = t.cpuRatio === null ? notMeasured : `${f(t.cpuRatio, 2)}x (target <= ${TARGET_CPU_RATIO}x: ${met(t.cpuRatioOk)})`;
      lines.push(`${label} / bare, server CPU per request: ${cpu}`);
    }
    if (t.p99Ms !== null) lines.push(`${label} p99: ${f(t.p99Ms, 2)} ms (target <= ${TARGET_P99_MS} ms: ${met(t.p99Ok)})`);
  }
  const d = verdict.durability;
  if (d) {
    if (fsync) {
      const ratio = d.fsyncRatio === null ? notMeasured : `${pct(d.fsyncRatio)} (target >= ${TARGET_FSYNC_RATIO * 100}%: ${met(d.fsyncRatioOk)})`;
      lines.push(`admission+fsync / admission+private, req/s: ${ratio}; Redis CPU per admission ${f(d.fsyncRedisCpuRatio, 2)}x`);
      lines.push(`admission+fsync p99: ${f(d.fsyncP99Ms, 2)} ms (target <= ${TARGET_FSYNC_P99_MS} ms: ${met(d.fsyncP99Ok)})`);
    }
    if (replica) {
      lines.push(`admission+replica / admission+private, req/s: ${d.replicaRatio === null ? notMeasured : pct(d.replicaRatio)}; p99 ${f(d.replicaP99Ms, 2)} ms; Redis CPU per admission (master + replica) ${f(d.replicaRedisCpuRatio, 2)}x`);
    }
  }
  if (soldout && results.some((r) => r.scenario === 'bare')) {
    const ratio = verdict.soldoutRatio === null ? notMeasured : `${pct(verdict.soldoutRatio)} (target >= ${TARGET_SOLDOUT_RATIO * 100}%: ${met(verdict.soldoutOk)})`;
    lines.push(`soldout / bare: ${ratio}`);
  }
  if (results.some((r) => r.scenario === 'admission+buckets') && admission) {
    const ratio = buckets === null ? notMeasured : `${pct(buckets)} (target >= ${TARGET_BUCKETS_RATIO * 100}%: ${met(verdict.bucketsOk)})`;
    lines.push(`admission+buckets / admission: ${ratio}`);
  }
  for (const [label, ratio, target] of [['trace1', verdict.trace1CpuRatio, TARGET_TRACE1_CPU_RATIO], ['trace100', verdict.trace100CpuRatio, null]] as const) {
    if (!results.some((r) => r.scenario === `admission+${label}`) || !admission) continue;
    const goal = target === null ? '' : ` (target <= ${target}x: ${met(ratio !== null && ratio <= target)})`;
    lines.push(`admission+${label} / admission, server CPU per request: ${ratio === null ? notMeasured : `${f(ratio, 3)}x${goal}`}`);
  }
  for (const r of results) {
    const tag = `${r.scenario} #${r.round}`;
    if (r.tokensWrapped) lines.push(`INVALID ${tag}: users repeated; raise --tokens`);
    if (r.disturbed) lines.push(`WARNING ${tag}: other processes used ${f(r.otherCores, 2)} cores meanwhile; left out of the medians`);
    if (r.load.sent !== r.load.answered) lines.push(`WARNING ${tag}: ${r.load.sent - r.load.answered} request(s) unanswered`);
    if (r.check) lines.push(`check ${tag}: ${r.check.accepted} × 202, ${r.check.taken} unit(s) taken from Redis stock: ${r.check.ok ? 'OK' : 'MISMATCH'}`);
    if (r.profile) lines.push(`profile ${tag}: ${r.profile}`);
  }
  const ok = results.every((r) => !r.tokensWrapped && r.load.sent === r.load.answered && (r.check?.ok ?? true));
  return { text: lines.join('\n'), verdict, ok };
}

async function main(): Promise<void> {
  const o = options();
  const secret = randomBytes(32).toString('base64url');
  note(`signing ${o.tokens} tokens...`);
  const tokens = signTokens(secret, o.tokens);
  const redis = new Redis(o.redisUrl, { connectionName: 'bench-driver' });
  // Spans go somewhere real (an HTTP round trip per export), counted and dropped.
  const otlp = o.scenarios.some((s) => traceRatioOf(s) !== undefined) ? await OtlpReceiver.start({ keep: false }) : null;
  const results: Result[] = [];
  try {
    for (let round = 1; round <= o.rounds; round++) {
      for (const scenario of o.scenarios) results.push(await runScenario(scenario, round, o, tokens, secret, redis, otlp));
      // Compare within a round: the VM's speed drifts over minutes, two scenarios seconds apart less so.
      const bare = results.find((r) => r.round === round && r.scenario === 'bare');
      if (bare) for (const r of results) if (r.round === round && !r.disturbed && !bare.disturbed) r.ratio = r.load.rps / bare.load.rps;
    }
  } finally {
    await redis.quit();
    if (otlp) note(`OTLP receiver: ${otlp.count} spans in ${otlp.requests} exports`);
    await otlp?.close();
  }
  const { text, verdict, ok } = report(results, o);
  if (o.json) {
    note(text);
    const { redisUrl: _r, mysqlServer: _m, scenarios, ...opts } = o;
    const json = { machine: machine(), options: { ...opts, scenarios: scenarios.map((s) => s.label) }, results, medians: medians(results), verdict, ok };
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  } else {
    const m = machine();
    process.stdout.write(`${m.cpus} CPUs, ${m.memoryGiB} GiB, node ${m.node}, ${m.redis}, ${m.mariadb}\n\n${text}\n`);
  }
  process.exitCode = ok ? 0 : 1;
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exitCode = 1;
});
