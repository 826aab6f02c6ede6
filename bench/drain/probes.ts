// What the benchmark reads around the measurements: the servers' durability settings, the machine,
// CPU time per process (on a 2-core box Node, MariaDB and Redis compete for the same cores), and
// an optional per-query-kind breakdown of the pipeline's batches.
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import type { RedisClient } from '../../src/infra/redis/redis-client.js';
import { Kysely, MysqlDialect, sql, type LogEvent } from 'kysely';
import { createPool } from 'mysql2';
import type { Db } from '../../src/infra/db/database.js';
import type { Database } from '../../src/infra/db/types.js';
import type { Scripts } from '../../src/infra/redis/scripts/index.js';
import { machineBusyUs, processCpuUs } from '../../src/loadgen/machine.js';

export interface Durability {
  version: string;
  innodb_flush_log_at_trx_commit: number;
  sync_binlog: number;
  log_bin: number;
  innodb_doublewrite: number;
  innodb_flush_method: string;
  innodb_buffer_pool_size: number;
  /** Commit waits for the redo log to reach the disk (the server default, flush_log_at_trx_commit = 1). */
  commitFlushes: boolean;
  /**
   * Where each durability setting's value comes from (MariaDB's information_schema.SYSTEM_VARIABLES:
   * COMPILE-TIME = the built-in default, CONFIG = a config file, SQL = SET GLOBAL); null elsewhere.
   */
  origins: Record<string, string> | null;
  /** Every durability setting still has its built-in default value (null: cannot tell). */
  allDefaults: boolean | null;
  redis: { appendonly: string; appendfsync: string; save: string };
}

export async function readDurability(db: Db, redis: RedisClient): Promise<Durability> {
  const { rows } = await sql<Record<string, string | number>>`select @@version as version,
    @@innodb_flush_log_at_trx_commit as trx_commit, @@sync_binlog as sync_binlog, @@log_bin as log_bin,
    @@innodb_doublewrite as doublewrite, @@innodb_flush_method as flush_method,
    @@innodb_buffer_pool_size as pool`.execute(db);
  const r = rows[0]!;
  let origins: Record<string, string> | null = null;
  let allDefaults: boolean | null = null;
  try {
    const vars = await sql<{ name: string; value: string | null; def: string | null; origin: string }>`select VARIABLE_NAME as name,
      GLOBAL_VALUE as value, DEFAULT_VALUE as def, GLOBAL_VALUE_ORIGIN as origin from information_schema.SYSTEM_VARIABLES
      where VARIABLE_NAME in ('INNODB_FLUSH_LOG_AT_TRX_COMMIT', 'SYNC_BINLOG', 'LOG_BIN', 'INNODB_DOUBLEWRITE', 'INNODB_FLUSH_METHOD')`.execute(db);
    origins = Object.fromEntries(vars.rows.map((v) => [v.name.toLowerCase(), v.origin]));
    // log_bin has no DEFAULT_VALUE (it is a start-up option); it counts as default when never set.
    allDefaults = vars.rows.every((v) => v.origin === 'COMPILE-TIME' || v.value === v.def);
  } catch {
    // Not MariaDB: the values above are still printed.
  }
  const conf = async (name: string) => String(((await redis.config('GET', name)) as string[])[1] ?? '');
  const trxCommit = Number(r.trx_commit);
  return {
    version: String(r.version),
    innodb_flush_log_at_trx_commit: trxCommit,
    sync_binlog: Number(r.sync_binlog),
    log_bin: Number(r.log_bin),
    innodb_doublewrite: Number(r.doublewrite),
    innodb_flush_method: String(r.flush_method),
    innodb_buffer_pool_size: Number(r.pool),
    commitFlushes: trxCommit === 1,
    origins,
    allDefaults,
    redis: { appendonly: await conf('appendonly'), appendfsync: await conf('appendfsync'), save: await conf('save') },
  };
}

export interface Machine {
  cpus: number;
  cpuModel: string;
  memGiB: number;
  node: string;
  redis: string;
  loadavg: number[];
}

export async function readMachine(redis: RedisClient): Promise<Machine> {
  const info = await redis.info('server');
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    redis: /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown',
    loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

// ---------------------------------------------------------------------------------------------
// CPU seconds per process, from /proc (Linux only; empty elsewhere).

function findPids(comm: string): number[] {
  try {
    return readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return readFileSync(`/proc/${d}/comm`, 'utf8').trim() === comm;
        } catch {
          return false;
        }
      })
      .map(Number);
  } catch {
    return [];
  }
}

const cpuSeconds = (pid: number) => processCpuUs(pid) / 1e6;

/** `other`: busy CPU of every other process (interference from whatever else runs on the box). */
export type CpuSample = Record<'bench' | 'mariadb' | 'redis' | 'other', number>;

/** Busy CPU seconds of the whole machine. */
const machineBusy = () => (machineBusyUs() ?? 0) / 1e6;

/** CPU seconds since the call; `workers` (child pids) count as the bench's. */
export function cpuMeter(workers: number[] = []): () => CpuSample {
  const mariadb = [...findPids('mariadbd'), ...findPids('mysqld')];
  const redis = findPids('redis-server');
  const read = () => ({
    bench: [process.pid, ...workers].reduce((s, p) => s + cpuSeconds(p), 0),
    mariadb: mariadb.reduce((s, p) => s + cpuSeconds(p), 0),
    redis: redis.reduce((s, p) => s + cpuSeconds(p), 0),
    all: machineBusy(),
  });
  const start = read();
  return () => {
    const end = read();
    const d = (k: keyof typeof end) => end[k] - start[k];
    return {
      bench: round2(d('bench')),
      mariadb: round2(d('mariadb')),
      redis: round2(d('redis')),
      other: round2(Math.max(0, d('all') - d('bench') - d('mariadb') - d('redis'))),
    };
  };
}

const round2 = (n: number) => Math.round(n * 100) / 100;

// ---------------------------------------------------------------------------------------------
// Breakdown: lane time per query kind. The pipeline runs on a Kysely instance of our own whose
// log hook times every statement, begin and commit included (they pass through executeQuery).

const KINDS: [RegExp, string][] = [
  [/^begin/i, 'begin'],
  [/^commit/i, 'commit'],
  [/^select .* from `orders`/is, 'select already stored'],
  [/^select .* from `vouchers`.*for update/is, 'lock voucher row'],
  [/^select .* from `user_quantities`.*for update/is, 'lock buyer rows'],
  [/^update `vouchers`/i, 'update stock'],
  [/^insert into `user_quantities`/i, 'upsert buyer quantities'],
  [/^insert into `orders`/i, 'insert orders'],
];

export interface Breakdown {
  db: Db;
  scripts: Scripts;
  /** Milliseconds of lane time per kind, and how often each ran. */
  report(): Record<string, { ms: number; count: number }>;
  destroy(): Promise<void>;
}

/** Same pool options as src/infra/db/database.ts (not exported there). */
export function createBreakdown(databaseUrl: string, scripts: Scripts): Breakdown {
  const totals = new Map<string, { ms: number; count: number }>();
  const add = (kind: string, ms: number) => {
    const t = totals.get(kind) ?? { ms: 0, count: 0 };
    t.ms += ms;
    t.count += 1;
    totals.set(kind, t);
  };
  const u = new URL(databaseUrl);
  const pool = createPool({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password),
    database: u.pathname.slice(1),
    supportBigNumbers: true,
    bigNumberStrings: true,
    timezone: 'Z',
    dateStrings: false,
    connectionLimit: 10,
  });
  const log = (e: LogEvent) => {
    const kind = KINDS.find(([re]) => re.test(e.query.sql))?.[1] ?? 'other';
    add(e.level === 'error' ? `${kind} (error)` : kind, e.queryDurationMillis);
  };
  const db = new Kysely<Database>({ dialect: new MysqlDialect({ pool }), log });

  // A lane settles a batch with one script call per shard.
  const timed: Scripts = {
    ...scripts,
    async settle(group, shard, orders) {
      const start = performance.now();
      try {
        return await scripts.settle(group, shard, orders);
      } finally {
        add('settle (Redis, per batch)', performance.now() - start);
      }
    },
  };
  return {
    db,
    scripts: timed,
    report: () => Object.fromEntries([...totals].map(([k, v]) => [k, { ms: Math.round(v.ms), count: v.count }])),
    destroy: () => db.destroy(),
  };
}

// ---------------------------------------------------------------------------------------------
// CPU profile of this process over one window (the drain), summarised by self time.

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  file: string;
  busyMs: number;
  /** Self time charged to the nearest pipeline stage on the stack (STAGES). */
  byStage: [string, number][];
  byArea: [string, number][];
  byFunction: [string, number][];
}

export async function startProfile(): Promise<(file: string) => Promise<ProfileSummary>> {
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return async (file) => {
    const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
    session.disconnect();
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const { dirname } = await import('node:path');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(profile));
    return summarise(file, profile);
  };
}

// Nearest matching frame from the leaf up decides the stage. Continuations after an `await` run
// with the async function on top, so they land in the function's stage too.
const STAGES: [RegExp, RegExp, string][] = [
  [/pipeline\/consumer\.ts$/, /^settle$/, 'settle: one script call per shard and batch'],
  [/infra\/redis\/scripts\.ts$/, /^settle$/, 'settle: one script call per shard and batch'],
  [/pipeline\/store-orders\.ts$/, /^(alreadyStored)$/, 'store: select already stored'],
  [/pipeline\/store-orders\.ts$/, /^(insertOrders)$/, 'store: insert orders'],
  [/pipeline\/store-orders\.ts$/, /./, 'store: lock, check, update, upsert'],
  [/pipeline\/(consumer|entries)\.ts$/, /^(loop|parseEntry|handle|isMalformed)$/, 'read + parse entries'],
  [/pipeline\/consumer\.ts$/, /^(maintain|reclaim|trim|forgetDeadConsumers)$/, 'maintenance'],
  [/bench\/drain\//, /./, 'benchmark (polling)'],
  [/node_modules\/ioredis\//, /./, 'ioredis (reply parsing, other)'],
  [/node_modules\/mysql2\//, /./, 'mysql2 (packets, other)'],
  [/node_modules\/kysely\//, /./, 'kysely (other)'],
];

function summarise(file: string, p: CpuProfile): ProfileSummary {
  const byId = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOf = new Map<number, string>();
  const stage = (id: number): string => {
    const known = stageOf.get(id);
    if (known) return known;
    const f = byId.get(id)!;
    const own = STAGES.find(([url, name]) => url.test(f.url) && name.test(f.functionName))?.[2];
    const up = parent.get(id);
    const result = own ?? (f.functionName === '(garbage collector)' ? 'garbage collector' : up === undefined ? 'other' : stage(up));
    stageOf.set(id, result);
    return result;
  };
  const stages = new Map<string, number>();
  const area = new Map<string, number>();
  const fn = new Map<string, number>();
  let busy = 0;
  p.samples.forEach((id, i) => {
    const f = byId.get(id)!;
    const us = p.timeDeltas[i] ?? 0;
    if (f.functionName === '(idle)') return;
    busy += us;
    stages.set(stage(id), (stages.get(stage(id)) ?? 0) + us);
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f.url)?.[1];
    const local = /\/((?:src|bench)\/.+)$/.exec(f.url)?.[1];
    const a = pkg ?? local ?? (f.url.startsWith('node:') ? `node:${f.url.slice(5).split('/')[0]}` : f.url || f.functionName);
    area.set(a, (area.get(a) ?? 0) + us);
    const name = `${f.functionName || '(anonymous)'} ${a}:${f.lineNumber + 1}`;
    fn.set(name, (fn.get(name) ?? 0) + us);
  });
  const top = (m: Map<string, number>, n: number): [string, number][] =>
    [...m].sort((x, y) => y[1] - x[1]).slice(0, n).map(([k, us]) => [k, Math.round(us / 1000)]);
  return { file, busyMs: Math.round(busy / 1000), byStage: top(stages, 20), byArea: top(area, 12), byFunction: top(fn, 20) };
}
