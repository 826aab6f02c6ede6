// What the benchmark reads around the measurements: the servers' durability settings, the machine,
// CPU time per process (on a 2-core box Node, the database and Redis compete for the same cores),
// and an optional per-query-kind breakdown of the pipeline's batches. What differs between
// MariaDB/MySQL and PostgreSQL here (settings, process names) is one entry of SERVERS per database.
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import type { RedisClient } from '../../src/infra/redis/client.js';
import { sql, type LogEvent } from 'kysely';
import { createDb, type Db } from '../../src/infra/db/database.js';
import { dialectOf, type SqlDialect } from '../../src/infra/db/dialect.js';
import type { Scripts } from '../../src/infra/redis/scripts/index.js';
import { machineBusyUs, processCpuUs } from '../../src/loadgen/machine.js';

/** The server's durability settings as read from it (names and values as the server spells them). */
interface ServerDurability {
  version: string;
  settings: Record<string, string>;
  /** A commit returns only once its log record is on the disk. */
  commitFlushes: boolean;
  /** Where each setting's value comes from, as the server says it; null when it cannot say. */
  origins: Record<string, string> | null;
  /** Every setting still has its built-in default value (null: cannot tell). */
  allDefaults: boolean | null;
}

export interface Durability extends ServerDurability {
  database: SqlDialect['name'];
  redis: { appendonly: string; appendfsync: string; save: string };
}

interface Server {
  readDurability(db: Db): Promise<ServerDurability>;
  /** /proc/<pid>/comm of the server's processes. */
  readonly processNames: readonly string[];
}

const MYSQL_SETTINGS = ['innodb_flush_log_at_trx_commit', 'sync_binlog', 'log_bin', 'innodb_doublewrite', 'innodb_flush_method', 'innodb_buffer_pool_size'];
const POSTGRES_SETTINGS = ['fsync', 'synchronous_commit', 'wal_sync_method', 'full_page_writes', 'shared_buffers'];

const SERVERS: Record<SqlDialect['name'], Server> = {
  mysql: {
    async readDurability(db) {
      const { rows } = await sql<Record<string, string | number>>`select @@version as version,
        ${sql.join(MYSQL_SETTINGS.map((name) => sql`${sql.raw(`@@${name}`)} as ${sql.id(name)}`))}`.execute(db);
      const r = rows[0]!;
      let origins: Record<string, string> | null = null;
      let allDefaults: boolean | null = null;
      try {
        // MariaDB's origins: COMPILE-TIME = the built-in default, CONFIG = a config file, SQL = SET GLOBAL.
        const vars = await sql<{ name: string; value: string | null; def: string | null; origin: string }>`select VARIABLE_NAME as name,
          GLOBAL_VALUE as value, DEFAULT_VALUE as def, GLOBAL_VALUE_ORIGIN as origin from information_schema.SYSTEM_VARIABLES
          where VARIABLE_NAME in (${sql.join(MYSQL_SETTINGS.map((n) => n.toUpperCase()))})`.execute(db);
        origins = Object.fromEntries(vars.rows.map((v) => [v.name.toLowerCase(), v.origin]));
        // log_bin has no DEFAULT_VALUE (it is a start-up option); it counts as default when never set.
        allDefaults = vars.rows.every((v) => v.origin === 'COMPILE-TIME' || v.value === v.def);
      } catch {
        // Not MariaDB: the values are still printed.
      }
      const settings = Object.fromEntries(MYSQL_SETTINGS.map((name) => [name, String(r[name])]));
      return { version: String(r.version), settings, commitFlushes: settings.innodb_flush_log_at_trx_commit === '1', origins, allDefaults };
    },
    processNames: ['mariadbd', 'mysqld'],
  },
  postgres: {
    async readDurability(db) {
      const { rows: v } = await sql<{ version: string }>`select version() as version`.execute(db);
      // source: 'default', 'configuration file', 'command line', ...; boot_val: the built-in value.
      const { rows } = await sql<{ name: string; value: string; source: string; builtIn: boolean }>`select name,
        current_setting(name) as value, source, (source = 'default' or setting = boot_val) as "builtIn"
        from pg_settings where name in (${sql.join(POSTGRES_SETTINGS)})`.execute(db);
      const settings = Object.fromEntries(POSTGRES_SETTINGS.map((name) => [name, rows.find((r) => r.name === name)?.value ?? 'unknown']));
      return {
        // "PostgreSQL 15.14 (Debian 15.14-0+deb12u1) on x86_64-pc-linux-gnu, compiled by ...": the part before " on ".
        version: v[0]!.version.replace(/ on .*$/s, ''),
        settings,
        // Every synchronous_commit level but off waits for the local WAL flush (the others add replicas).
        commitFlushes: settings.fsync === 'on' && settings.synchronous_commit !== 'off',
        origins: Object.fromEntries(rows.map((r) => [r.name, r.source])),
        // As on MariaDB, a config file that sets the built-in value counts as default (Debian's sets shared_buffers).
        allDefaults: rows.length === POSTGRES_SETTINGS.length && rows.every((r) => r.builtIn),
      };
    },
    // A process per connection, all named after the postmaster.
    processNames: ['postgres'],
  },
};

const serverOf = (db: Db) => SERVERS[dialectOf(db).name];

export async function readDurability(db: Db, redis: RedisClient): Promise<Durability> {
  const conf = async (name: string) => String(((await redis.config('GET', name)) as string[])[1] ?? '');
  return {
    database: dialectOf(db).name,
    ...(await serverOf(db).readDurability(db)),
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

function findPids(names: readonly string[]): number[] {
  try {
    return readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return names.includes(readFileSync(`/proc/${d}/comm`, 'utf8').trim());
        } catch {
          return false;
        }
      })
      .map(Number);
  } catch {
    return [];
  }
}

const cpuSecondsOwn = (pid: number) => processCpuUs(pid) / 1e6;

/**
 * CPU seconds of `pid` with its exited children's: PostgreSQL's connections are processes that
 * come and go, and one that exits during a window leaves the sum of live processes but lands in
 * its parent's (the postmaster's) children time, so the sum over a group stays monotonic.
 */
const cpuSecondsWithChildren = (pid: number) => processCpuUs(pid, { withExitedChildren: true }) / 1e6;

/** CPU seconds of the processes named `names`, listed anew at each call (connections come and go). */
const groupSeconds = (names: readonly string[]) => findPids(names).reduce((s, p) => s + cpuSecondsWithChildren(p), 0);

/** `other`: busy CPU of every other process (interference from whatever else runs on the box). */
export type CpuSample = Record<'bench' | 'database' | 'redis' | 'other', number>;

/** Busy CPU seconds of the whole machine. */
const machineBusy = () => (machineBusyUs() ?? 0) / 1e6;

/** CPU seconds since the call of the bench, `db`'s server and Redis; `workers` (child pids) count as the bench's. */
export function cpuMeter(db: Db, workers: number[] = []): () => CpuSample {
  const { processNames } = serverOf(db);
  const read = () => ({
    // Own time only: the worker processes are counted by pid (and not waited for yet).
    bench: [process.pid, ...workers].reduce((s, p) => s + cpuSecondsOwn(p), 0),
    database: groupSeconds(processNames),
    redis: groupSeconds(['redis-server']),
    all: machineBusy(),
  });
  const start = read();
  return () => {
    const end = read();
    const d = (k: keyof typeof end) => end[k] - start[k];
    return {
      bench: round2(d('bench')),
      database: round2(d('database')),
      redis: round2(d('redis')),
      other: round2(Math.max(0, d('all') - d('bench') - d('database') - d('redis'))),
    };
  };
}

const round2 = (n: number) => Math.round(n * 100) / 100;

// ---------------------------------------------------------------------------------------------
// Breakdown: lane time per query kind. The pipeline runs on a Kysely instance of our own whose
// log hook times every statement, begin and commit included (they pass through executeQuery).

// Kysely quotes identifiers (`orders` on MySQL, "orders" on PostgreSQL); the pipeline's hand-built
// statements (src/pipeline/bulk-sql.ts) do not.
const table = (name: string) => `[\`"]?${name}[\`"]?`;
const KINDS: [RegExp, string][] = [
  // MySQL: SET TRANSACTION ISOLATION LEVEL …, then BEGIN; PostgreSQL: START TRANSACTION ISOLATION LEVEL ….
  [/^(begin|start transaction|set transaction)/i, 'begin'],
  [/^commit/i, 'commit'],
  // The batch's order counts, which also return its clock (store-orders.ts, orders/order-counts.ts).
  [new RegExp(`^insert into ${table('voucher_order_counts')}`, 'i'), 'count orders + clock'],
  [new RegExp(`^select .* from ${table('orders')}`, 'is'), 'select already stored'],
  [new RegExp(`^select .* from ${table('vouchers')}.*for update`, 'is'), 'lock voucher row'],
  [new RegExp(`^select .* from ${table('user_quantities')}.*for update`, 'is'), 'lock buyer rows'],
  [new RegExp(`^update ${table('vouchers')}`, 'i'), 'update stock'],
  [new RegExp(`^insert into ${table('user_quantities')}`, 'i'), 'upsert buyer quantities'],
  [new RegExp(`^insert into ${table('orders')}`, 'i'), 'insert orders'],
  [new RegExp(`^insert into ${table('order_events')}`, 'i'), 'insert order events'],
];

export interface Breakdown {
  db: Db;
  scripts: Scripts;
  /** Milliseconds of lane time per kind, and how often each ran. */
  report(): Record<string, { ms: number; count: number }>;
  destroy(): Promise<void>;
}

/** The pipeline's database handle on a pool of its own whose log hook times every statement. */
export function createBreakdown(databaseUrl: string, scripts: Scripts): Breakdown {
  const totals = new Map<string, { ms: number; count: number }>();
  const add = (kind: string, ms: number) => {
    const t = totals.get(kind) ?? { ms: 0, count: 0 };
    t.ms += ms;
    t.count += 1;
    totals.set(kind, t);
  };
  const log = (e: LogEvent) => {
    const kind = KINDS.find(([re]) => re.test(e.query.sql))?.[1] ?? 'other';
    add(e.level === 'error' ? `${kind} (error)` : kind, e.queryDurationMillis);
  };
  const db = createDb(databaseUrl, 10, { log });

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
  [/node_modules\/pg(-protocol)?\//, /./, 'pg (packets, other)'],
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
