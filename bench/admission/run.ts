// Admission benchmark driver: the real claim endpoint against a bare Fastify endpoint, same run,
// same machine, each server in its own child process (server.ts).
//   node --import tsx bench/admission/run.ts [--duration 10] [--warmup 2] [--connections 64]
//        [--tokens 300000] [--scenarios bare,admission,soldout] [--rounds 1] [--profile] [--json]
// Every request carries its own user's bearer token and the body {} (the bare endpoint gets the
// same bytes, so both servers parse the same requests). Scenarios may carry investigation knobs,
// e.g. admission+sync-hmac (protocol.ts). --rounds N repeats the scenario sequence N times
// (fresh children each round) and reports medians: on a shared VM the speed drifts within minutes,
// and a ratio of two scenarios measured seconds apart is steadier than either figure alone. --profile writes a CPU profile of each server child for
// its measured window to bench/admission/profiles/ (summarise with profile-summary.ts).
// See README.md in this directory for what the numbers mean.
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { SignJWT } from 'jose';
import { type Command, parseScenario, type Scenario, type ServerEnv, type ServerMessage } from './protocol.js';

const SERVER_SCRIPT = fileURLToPath(new URL('./server.ts', import.meta.url));
const TARGET_RATIO = 0.6;
const TARGET_P99_MS = 20;
/** Upper bound on the drain after the window closes (a response may take up to the timeout). */
const DRAIN_LIMIT_S = 15;
const REQUEST_TIMEOUT_S = 10;

// ---------------------------------------------------------------------------------------------
// Options

interface Options {
  duration: number;
  warmup: number;
  connections: number;
  tokens: number;
  scenarios: Scenario[];
  rounds: number;
  profile: boolean;
  json: boolean;
  redisUrl: string;
  mysqlServer: string;
}

function wholeNumber(name: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got "${raw}"`);
  return n;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '2' },
      connections: { type: 'string', default: '64' },
      tokens: { type: 'string', default: '300000' },
      scenarios: { type: 'string', default: 'bare,admission,soldout' },
      rounds: { type: 'string', default: '1' },
      profile: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  return {
    duration: wholeNumber('duration', values.duration, 1),
    warmup: wholeNumber('warmup', values.warmup, 0),
    connections: wholeNumber('connections', values.connections, 1),
    tokens: wholeNumber('tokens', values.tokens, 1),
    scenarios: values.scenarios.split(',').map((s) => parseScenario(s.trim())),
    rounds: wholeNumber('rounds', values.rounds, 1),
    profile: values.profile,
    json: values.json,
    redisUrl: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
    mysqlServer: process.env.BENCH_MYSQL_SERVER ?? 'mysql://root@127.0.0.1:3306',
  };
}

/** Progress goes to stderr so that `--json > file` captures only the result. */
const note = (text: string) => process.stderr.write(`${text}\n`);

// ---------------------------------------------------------------------------------------------
// Tokens: one per user, signed before any load so that signing never competes with the servers.

interface TokenPool {
  /** `Bearer <jwt>` of the next unused user. */
  next(): string;
  /** Starts again at user 1 (each scenario has its own voucher, so users may repeat across them). */
  rewind(): void;
  used(): number;
  /** Times the pool ran out and users repeated (a repeated user is refused: the run is invalid). */
  wraps(): number;
}

async function signTokens(secret: string, count: number): Promise<TokenPool> {
  const key = new TextEncoder().encode(secret);
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const headers: string[] = new Array(count);
  const CHUNK = 1000;
  for (let start = 0; start < count; start += CHUNK) {
    const jobs: Promise<void>[] = [];
    for (let i = start; i < Math.min(count, start + CHUNK); i++) {
      // The claims TokenService.sign({userId, admin:false}) writes: sub, iat, exp; users 1..count.
      jobs.push(
        new SignJWT({})
          .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
          .setSubject(String(i + 1))
          .setIssuedAt()
          .setExpirationTime(exp)
          .sign(key)
          .then((jwt) => void (headers[i] = `Bearer ${jwt}`)),
      );
    }
    await Promise.all(jobs);
  }
  let cursor = 0;
  let wraps = 0;
  return {
    next() {
      if (cursor === count) {
        cursor = 0;
        wraps++;
      }
      return headers[cursor++]!;
    },
    rewind() {
      cursor = 0;
      wraps = 0;
    },
    used: () => wraps * count + cursor,
    wraps: () => wraps,
  };
}

// ---------------------------------------------------------------------------------------------
// Server children

type Ready = Extract<ServerMessage, { type: 'ready' }>;
type State = Extract<ServerMessage, { type: 'state' }>;

interface ServerHandle {
  ready: Ready;
  state(): Promise<State>;
  request(command: Command): Promise<ServerMessage>;
  stop(): Promise<void>;
}

async function startServer(scenario: Scenario, env: ServerEnv): Promise<ServerHandle> {
  const tag = `[${scenario.label}]`;
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ['--import', 'tsx', SERVER_SCRIPT, scenario.label], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stderr.on('data', (chunk: Buffer) => process.stderr.write(`${tag} ${chunk.toString()}`));
  const waiting: ((message: ServerMessage) => void)[] = [];
  let exited = false;
  createInterface({ input: child.stdout }).on('line', (line) => {
    let message: ServerMessage;
    try {
      message = JSON.parse(line) as ServerMessage;
    } catch {
      process.stderr.write(`${tag} ${line}\n`);
      return;
    }
    const waiter = waiting.shift();
    if (waiter) waiter(message);
    else if (message.type === 'error') note(`${tag} ${message.message}`);
  });
  const exit = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exited = true;
      // Whoever still waits gets an error instead of hanging.
      for (const waiter of waiting.splice(0)) waiter({ type: 'error', message: `server exited with code ${code}` });
      resolve();
    }),
  );
  const next = () =>
    new Promise<ServerMessage>((resolve) => (exited ? resolve({ type: 'error', message: 'server exited' }) : waiting.push(resolve)));

  const ready = await next();
  if (ready.type !== 'ready') {
    child.kill('SIGTERM');
    throw new Error(`${scenario.label} server failed to start: ${ready.type === 'error' ? ready.message : ready.type}`);
  }
  const request = async (command: Command) => {
    const reply = next();
    child.stdin.write(`${command}\n`);
    const message = await reply;
    if (message.type === 'error') throw new Error(`${scenario.label} server: ${message.message}`);
    return message;
  };
  return {
    ready,
    request,
    async state() {
      const message = await request('state');
      if (message.type !== 'state') throw new Error(`${scenario.label} server: expected state, got ${message.type}`);
      return message;
    },
    async stop() {
      if (exited) return;
      const reply = next();
      child.stdin.end('stop\n');
      const message = await reply;
      if (message.type === 'error') note(`${tag} ${message.message}`);
      await exit;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Load

interface LoadStats {
  /** Length of the measured window (the drain after it is not counted in req/s). */
  seconds: number;
  /** Responses that arrived inside the window, per second. */
  rps: number;
  /** Latency of every response (ms), including the few that drained after the window. */
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number };
  /** Every response by status code. */
  status: Record<string, number>;
  non2xx: number;
  sent: number;
  answered: number;
  /** Connection errors and timeouts (autocannon counts a timeout as an error too). */
  errors: number;
  timeouts: number;
}

/** Growable array of latencies; percentiles by sorting (a few hundred thousand values). */
class Latencies {
  private values = new Float64Array(1 << 16);
  private n = 0;
  add(ms: number): void {
    if (this.n === this.values.length) {
      const bigger = new Float64Array(this.values.length * 2);
      bigger.set(this.values);
      this.values = bigger;
    }
    this.values[this.n++] = ms;
  }
  summary(): LoadStats['latencyMs'] {
    const sorted = this.values.slice(0, this.n).sort();
    const at = (q: number) => (this.n === 0 ? 0 : sorted[Math.min(this.n - 1, Math.max(0, Math.ceil(q * this.n) - 1))]!);
    let sum = 0;
    for (const v of sorted) sum += v;
    return { mean: this.n ? sum / this.n : 0, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) };
  }
}

/**
 * Runs `seconds` of closed-loop load, then drains: each connection stops after its pending
 * response instead of being cut off, so every request the server admitted is also counted here
 * (autocannon's own duration stop destroys sockets with requests in flight).
 */
function load(port: number, path: string, seconds: number, connections: number, tokens: TokenPool): Promise<LoadStats> {
  return new Promise((resolve, reject) => {
    const clients: autocannon.Client[] = [];
    const latencies = new Latencies();
    const status = new Map<number, number>();
    let sent = 0;
    let answered = 0;
    let inWindow = 0;
    let windowOpen = true;
    const started = performance.now();
    let windowMs = seconds * 1000;

    const instance = autocannon(
      {
        url: `http://127.0.0.1:${port}${path}`,
        connections,
        pipelining: 1,
        duration: seconds + DRAIN_LIMIT_S, // backstop only: the drain below ends the run
        timeout: REQUEST_TIMEOUT_S,
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
              return request;
            },
          },
        ],
      },
      (err, result) => {
        clearTimeout(windowTimer);
        if (err) return reject(err);
        let non2xx = 0;
        for (const [code, n] of status) if (code < 200 || code > 299) non2xx += n;
        resolve({
          seconds: windowMs / 1000,
          rps: inWindow / (windowMs / 1000),
          latencyMs: latencies.summary(),
          status: Object.fromEntries([...status.entries()].sort(([a], [b]) => a - b).map(([c, n]) => [String(c), n])),
          non2xx,
          sent,
          answered,
          errors: result.errors,
          timeouts: result.timeouts,
        });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
      answered++;
      if (windowOpen) inWindow++;
      status.set(statusCode, (status.get(statusCode) ?? 0) + 1);
      latencies.add(responseTimeMs);
    });
    const windowTimer = setTimeout(() => {
      windowOpen = false;
      windowMs = performance.now() - started;
      // Each connection ends after the response it is waiting for (see autocannon.d.ts).
      for (const client of clients) client.responseMax = client.reqsMade;
    }, seconds * 1000);
  });
}

// ---------------------------------------------------------------------------------------------
// CPU accounting: on 2 cores the load generator, the server and Redis share the machine, so the
// CPU each of them spends per request says more than a profile of one of them.

interface Cpu {
  /** µs of CPU per answered request of the measured run (drain included). */
  serverUsPerRequest: number;
  redisUsPerRequest: number;
  loadGeneratorUsPerRequest: number;
  /** Share of one core each used during the measured run. */
  serverCores: number;
  redisCores: number;
  loadGeneratorCores: number;
}

/** Redis server CPU (user + system, µs); includes any other client of the same Redis. */
async function redisCpuUs(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return Math.round((field('used_cpu_user') + field('used_cpu_sys')) * 1e6);
}

async function cpuSnapshot(server: ServerHandle, redis: Redis) {
  const self = process.cpuUsage();
  return { at: performance.now(), server: await server.state(), redis: await redisCpuUs(redis), self: self.user + self.system };
}

function cpuBetween(a: Awaited<ReturnType<typeof cpuSnapshot>>, b: Awaited<ReturnType<typeof cpuSnapshot>>, requests: number): Cpu {
  const wallUs = (b.at - a.at) * 1000;
  const server = b.server.cpuUs - a.server.cpuUs;
  const redis = b.redis - a.redis;
  const self = b.self - a.self;
  const per = (us: number) => (requests ? us / requests : 0);
  return {
    serverUsPerRequest: per(server),
    redisUsPerRequest: per(redis),
    loadGeneratorUsPerRequest: per(self),
    serverCores: server / wallUs,
    redisCores: redis / wallUs,
    loadGeneratorCores: self / wallUs,
  };
}

// ---------------------------------------------------------------------------------------------
// Scenarios

interface Check {
  /** 202 responses of warm-up and measured run together. */
  accepted: number;
  /** Redis stock when the server became ready minus Redis stock after the load. */
  stockTaken: number;
  /** Requests that never got a response (timeouts, dropped connections): may or may not have taken a unit. */
  unanswered: number;
  ok: boolean;
}

interface ScenarioResult {
  scenario: string;
  round: number;
  voucherId: string | null;
  stats: LoadStats;
  cpu: Cpu;
  /** Distinct users that sent a request (warm-up included). */
  users: number;
  tokenWraps: number;
  /** null for bare and for stub-claim (no stock is taken there). */
  check: Check | null;
  profile: string | null;
}

async function runScenario(
  scenario: Scenario,
  round: number,
  index: number,
  o: Options,
  tokens: TokenPool,
  secret: string,
  redis: Redis,
): Promise<ScenarioResult> {
  // Redis prefix and database name: at most 32 of [A-Za-z0-9_], unique per run and scenario.
  const name = `bench_admission_${process.pid}_${index}`;
  const tag = o.rounds > 1 ? `[${scenario.label} #${round}]` : `[${scenario.label}]`;
  note(`${tag} starting server (Redis prefix and database ${name})`);
  const server = await startServer(scenario, {
    BENCH_NAME: name,
    BENCH_JWT_SECRET: secret,
    BENCH_REDIS_URL: o.redisUrl,
    BENCH_MYSQL_SERVER: o.mysqlServer,
  });
  try {
    const { port, path, voucherId, stock: stockBefore } = server.ready;
    tokens.rewind();
    let warm: LoadStats | null = null;
    if (o.warmup > 0) {
      note(`${tag} warm-up ${o.warmup}s (discarded)`);
      warm = await load(port, path, o.warmup, o.connections, tokens);
    }
    if (o.profile) await server.request('profile-start');
    note(`${tag} measuring ${o.duration}s at ${o.connections} connections`);
    const before = await cpuSnapshot(server, redis);
    const stats = await load(port, path, o.duration, o.connections, tokens);
    const after = await cpuSnapshot(server, redis);
    const profile = o.profile ? ((await server.request('profile-stop')) as { file: string | null }).file : null;

    let check: Check | null = null;
    if (scenario.base !== 'bare' && !scenario.knobs.includes('stub-claim')) {
      const stockAfter = after.server.stock;
      if (stockBefore === null || stockAfter === null) throw new Error(`${scenario.label}: voucher state missing in Redis`);
      const accepted = (warm?.status['202'] ?? 0) + (stats.status['202'] ?? 0);
      const unanswered = (warm ? warm.sent - warm.answered : 0) + (stats.sent - stats.answered);
      const stockTaken = stockBefore - stockAfter;
      // Exact when every request was answered; otherwise each unanswered one may have taken a unit.
      check = { accepted, stockTaken, unanswered, ok: stockTaken >= accepted && stockTaken - accepted <= unanswered };
    }
    return {
      scenario: scenario.label,
      round,
      voucherId,
      stats,
      cpu: cpuBetween(before, after, stats.answered),
      users: tokens.used(),
      tokenWraps: tokens.wraps(),
      check,
      profile,
    };
  } finally {
    await server.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

function version(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

function machine() {
  return {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    redis: version('redis-server', ['--version']),
    mariadb: version('mariadb', ['--version']),
  };
}

const fixed = (n: number, digits = 2) => n.toFixed(digits);

function grid(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const last = header.length - 1;
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 || i === last ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** Rows of one round, or the per-scenario medians (round 0). "vs bare" compares within the round. */
function tables(results: ScenarioResult[]): string {
  const label = (r: ScenarioResult) => (r.round > 0 && results.some((x) => x.round !== r.round) ? `${r.scenario} #${r.round}` : r.scenario);
  const bareOf = (r: ScenarioResult) => results.find((x) => x.scenario === 'bare' && x.round === r.round);
  const vsBare = (r: ScenarioResult) => {
    const bare = bareOf(r);
    return bare ? `${fixed((r.stats.rps / bare.stats.rps) * 100, 1)}%` : '-';
  };
  const load = grid(
    ['scenario', 'req/s', 'vs bare', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'responses', 'non-2xx', 'errors', 'status codes'],
    results.map((r) => [
      label(r),
      fixed(r.stats.rps, 0),
      vsBare(r),
      fixed(r.stats.latencyMs.p50),
      fixed(r.stats.latencyMs.p90),
      fixed(r.stats.latencyMs.p99),
      fixed(r.stats.latencyMs.max),
      String(r.stats.answered),
      String(r.stats.non2xx),
      `${r.stats.errors}${r.stats.timeouts ? ` (${r.stats.timeouts} timeouts)` : ''}`,
      Object.entries(r.stats.status)
        .map(([c, n]) => `${c}:${n}`)
        .join(' '),
    ]),
  );
  const cpu = grid(
    ['scenario', 'server µs/req', 'redis µs/req', 'loadgen µs/req', 'server cores', 'redis cores', 'loadgen cores'],
    results.map((r) => [
      label(r),
      fixed(r.cpu.serverUsPerRequest, 1),
      fixed(r.cpu.redisUsPerRequest, 1),
      fixed(r.cpu.loadGeneratorUsPerRequest, 1),
      fixed(r.cpu.serverCores),
      fixed(r.cpu.redisCores),
      fixed(r.cpu.loadGeneratorCores),
    ]),
  );
  return `${load}\n\nCPU during the measured run (user + system):\n${cpu}`;
}

interface Verdict {
  ratio: number | null;
  ratioOk: boolean | null;
  admissionP99Ms: number | null;
  p99Ok: boolean | null;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Median of the per-round ratios (each pairs scenarios measured seconds apart) and of the p99s. */
function verdict(results: ScenarioResult[]): Verdict {
  const ratios: number[] = [];
  const p99s: number[] = [];
  for (const admission of results.filter((r) => r.scenario === 'admission')) {
    p99s.push(admission.stats.latencyMs.p99);
    const bare = results.find((r) => r.scenario === 'bare' && r.round === admission.round);
    if (bare) ratios.push(admission.stats.rps / bare.stats.rps);
  }
  const ratio = ratios.length ? median(ratios) : null;
  const p99 = p99s.length ? median(p99s) : null;
  return {
    ratio,
    ratioOk: ratio === null ? null : ratio >= TARGET_RATIO,
    admissionP99Ms: p99,
    p99Ok: p99 === null ? null : p99 <= TARGET_P99_MS,
  };
}

/** One row per scenario with the median of every figure over the rounds (round 0). */
function medians(results: ScenarioResult[]): ScenarioResult[] {
  const labels = [...new Set(results.map((r) => r.scenario))];
  return labels.map((label) => {
    const runs = results.filter((r) => r.scenario === label);
    const m = (pick: (r: ScenarioResult) => number) => median(runs.map(pick));
    const sum = (pick: (r: ScenarioResult) => number) => runs.reduce((acc, r) => acc + pick(r), 0);
    const status: Record<string, number> = {};
    for (const r of runs) for (const [code, n] of Object.entries(r.stats.status)) status[code] = (status[code] ?? 0) + n;
    return {
      scenario: label,
      round: 0,
      voucherId: null,
      stats: {
        seconds: m((r) => r.stats.seconds),
        rps: m((r) => r.stats.rps),
        latencyMs: {
          mean: m((r) => r.stats.latencyMs.mean),
          p50: m((r) => r.stats.latencyMs.p50),
          p90: m((r) => r.stats.latencyMs.p90),
          p99: m((r) => r.stats.latencyMs.p99),
          max: m((r) => r.stats.latencyMs.max),
        },
        status,
        non2xx: sum((r) => r.stats.non2xx),
        sent: sum((r) => r.stats.sent),
        answered: sum((r) => r.stats.answered),
        errors: sum((r) => r.stats.errors),
        timeouts: sum((r) => r.stats.timeouts),
      },
      cpu: {
        serverUsPerRequest: m((r) => r.cpu.serverUsPerRequest),
        redisUsPerRequest: m((r) => r.cpu.redisUsPerRequest),
        loadGeneratorUsPerRequest: m((r) => r.cpu.loadGeneratorUsPerRequest),
        serverCores: m((r) => r.cpu.serverCores),
        redisCores: m((r) => r.cpu.redisCores),
        loadGeneratorCores: m((r) => r.cpu.loadGeneratorCores),
      },
      users: Math.max(...runs.map((r) => r.users)),
      tokenWraps: Math.max(...runs.map((r) => r.tokenWraps)),
      check: null,
      profile: null,
    };
  });
}

/** Users repeated on a voucher: later requests are refused (LIMIT_EXCEEDED), so the run says nothing. */
const invalid = (r: ScenarioResult) => r.scenario !== 'bare' && r.tokenWraps > 0;

function summary(results: ScenarioResult[], v: Verdict, o: Options): string {
  const out = [
    `${o.connections} connections, ${o.duration}s measured after ${o.warmup}s warm-up, one distinct user per request` +
      (o.rounds > 1 ? `, ${o.rounds} rounds` : ''),
    '',
    tables(results),
    '',
  ];
  if (o.rounds > 1) out.push(`median over ${o.rounds} rounds ("vs bare": ratio of the medians; the verdict uses the median of per-round ratios):`, tables(medians(results)), '');
  const met = (ok: boolean | null) => (ok ? 'met' : 'NOT met');
  const of = o.rounds > 1 ? ' (median of rounds)' : '';
  if (v.ratio !== null) out.push(`admission / bare throughput${of}: ${fixed(v.ratio * 100, 1)}%  (target >= ${TARGET_RATIO * 100}%: ${met(v.ratioOk)})`);
  if (v.admissionP99Ms !== null) out.push(`admission p99${of}: ${fixed(v.admissionP99Ms)} ms  (target <= ${TARGET_P99_MS} ms: ${met(v.p99Ok)})`);
  for (const r of results) {
    const name = o.rounds > 1 ? `${r.scenario} #${r.round}` : r.scenario;
    if (invalid(r)) out.push(`INVALID ${name}: the token pool ran out after ${r.users} requests and users repeated; raise --tokens`);
    if (!r.check) continue;
    const c = r.check;
    const exact = c.unanswered === 0 ? ' (every request answered)' : ` (${c.unanswered} unanswered request(s) may each have taken one)`;
    out.push(`correctness ${name}: 202 responses ${c.accepted}, Redis stock taken ${c.stockTaken}${exact}: ${c.ok ? 'OK' : 'MISMATCH'}`);
  }
  for (const r of results) if (r.profile) out.push(`cpu profile ${o.rounds > 1 ? `${r.scenario} #${r.round}` : r.scenario}: ${r.profile}`);
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  const secret = randomBytes(32).toString('base64url');
  const t0 = performance.now();
  note(`signing ${o.tokens} user tokens...`);
  const tokens = await signTokens(secret, o.tokens);
  note(`signed in ${fixed((performance.now() - t0) / 1000, 1)}s`);

  const redis = new Redis(o.redisUrl, { connectionName: 'bench-driver' });
  const results: ScenarioResult[] = [];
  try {
    for (let round = 1; round <= o.rounds; round++) {
      for (const [i, scenario] of o.scenarios.entries()) {
        const index = (round - 1) * o.scenarios.length + i;
        results.push(await runScenario(scenario, round, index, o, tokens, secret, redis));
      }
    }
  } finally {
    await redis.quit();
  }

  const v = verdict(results);
  const text = summary(results, v, o);
  const ok = results.every((r) => (r.check ? r.check.ok : true) && !invalid(r));
  if (o.json) {
    note(`\n${text}`);
    const report = {
      machine: machine(),
      options: { duration: o.duration, warmup: o.warmup, connections: o.connections, tokens: o.tokens, rounds: o.rounds },
      scenarios: results,
      medians: o.rounds > 1 ? medians(results) : undefined,
      verdict: { ...v, targetRatio: TARGET_RATIO, targetP99Ms: TARGET_P99_MS },
      ok,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    process.stdout.write(`\n${text}\n`);
  }
  process.exitCode = ok ? 0 : 1;
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exitCode = 1;
});
