// GET /readyz: each dependency's state and latency. Ready (200) while both stores answer, even
// slowly ("degraded": slow, or Redis lost its data in the last minute); 503 when one is down.
// A dependency that does not answer within PROBE_DEADLINE_MS is down: a database that stops
// sending bytes without closing its sockets would otherwise hold the probe (and the load
// balancer asking it) for as long as the driver waits.
// The answer is public: it says which store is down and since when, never why. A driver's
// message names hosts, ports and users ("Access denied for user …"); it goes to the log, once
// each time a store goes down, not once per probe.
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Db } from './infra/db/database.js';
import type { DependencyState, RedisHealth, RedisWatch } from './infra/redis/redis-watch.js';

const SLOW_DB_MS = 250;
/** After another database server began answering (a failover), the database is reported degraded this long. */
const SERVER_CHANGE_REPORTED_MS = 60_000;
export const PROBE_DEADLINE_MS = 800;

export interface DependencyReport {
  state: DependencyState;
  latencyMs: number | null;
  error?: string;
}

export interface DatabaseReport extends DependencyReport {
  /** When another server than the one before began answering (consistency/lost-orders.ts). */
  serverChangedAt?: string;
}

export interface Readiness {
  status: 'ready' | 'degraded' | 'unavailable';
  redis: RedisHealth;
  database: DatabaseReport;
}

/** Resolves as `probe` does, or rejects once `ms` have passed (the probe itself goes on). */
function withinDeadline<T>(probe: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([probe, deadline]).finally(() => clearTimeout(timer));
}

async function databaseReport(db: Db, deadlineMs: number): Promise<DependencyReport> {
  const started = performance.now();
  try {
    await withinDeadline(sql`select 1`.execute(db), deadlineMs);
    const latencyMs = Math.round((performance.now() - started) * 10) / 10;
    return { state: latencyMs > SLOW_DB_MS ? 'degraded' : 'ok', latencyMs };
  } catch (err) {
    return { state: 'down', latencyMs: null, error: (err as Error).message };
  }
}

export interface ReadinessDeps {
  redisWatch: Pick<RedisWatch, 'check' | 'current'>;
  db: Db;
  /** When another database server began answering (kept in Redis by the workers' watch). */
  databaseChangedAt?: () => Promise<string | null>;
  deadlineMs?: number;
}

/** The database's report, degraded for a minute after a change of server (a failover: what it lost is being stored again). */
async function databaseWithChange(report: Promise<DependencyReport>, changedAt: Promise<string | null>): Promise<DatabaseReport> {
  const [database, at] = await Promise.all([report, changedAt.catch(() => null)]);
  if (!at) return database;
  const recent = Date.now() - Date.parse(at) < SERVER_CHANGE_REPORTED_MS;
  return { ...database, state: recent && database.state === 'ok' ? 'degraded' : database.state, serverChangedAt: at };
}

export function readinessCheck({ redisWatch, db, databaseChangedAt = async () => null, deadlineMs = PROBE_DEADLINE_MS }: ReadinessDeps): () => Promise<Readiness> {
  return async () => {
    const [redisAnswered, database] = await Promise.all([
      withinDeadline(redisWatch.check(), deadlineMs).then(() => true, () => false),
      databaseWithChange(databaseReport(db, deadlineMs), withinDeadline(databaseChangedAt(), deadlineMs)),
    ]);
    const redis: RedisHealth = redisAnswered ? redisWatch.current() : { ...redisWatch.current(), state: 'down', latencyMs: null, error: `no answer within ${deadlineMs} ms` };
    const states = [redis.state, database.state];
    const status = states.includes('down') ? 'unavailable' : states.includes('degraded') ? 'degraded' : 'ready';
    return { status, redis, database };
  };
}

/** One store as /readyz shows it: `downSince` is when this process first saw it down. */
export interface PublicDependency {
  state: DependencyState;
  latencyMs: number | null;
  downSince?: string;
}

export interface ReadinessAnswer {
  status: Readiness['status'];
  redis: PublicDependency & Pick<RedisHealth, 'dataLostAt' | 'dataLosses'>;
  database: PublicDependency & Pick<DatabaseReport, 'serverChangedAt'>;
}

const NAMES = { redis: 'Redis', database: 'the database' } as const;

/** `check` as /readyz answers it: errors logged (warn) at each change into or out of `down`, never shown. */
export function publicReadiness(check: () => Promise<Readiness>, log: Pick<Logger, 'warn'>): () => Promise<ReadinessAnswer> {
  const downSince: Partial<Record<keyof typeof NAMES, string>> = {};
  const view = (name: keyof typeof NAMES, report: DependencyReport): PublicDependency => {
    const since = downSince[name];
    if (report.state === 'down' && since === undefined) {
      downSince[name] = new Date().toISOString();
      log.warn({ dependency: name, reason: report.error }, `${NAMES[name]} is down: /readyz answers 503 until it answers again`);
    } else if (report.state !== 'down' && since !== undefined) {
      delete downSince[name];
      log.warn({ dependency: name, downSince: since }, `${NAMES[name]} answers again`);
    }
    return { state: report.state, latencyMs: report.latencyMs, ...(downSince[name] ? { downSince: downSince[name] } : {}) };
  };
  return async () => {
    const { status, redis, database } = await check();
    return {
      status,
      redis: { ...view('redis', redis), ...(redis.dataLostAt ? { dataLostAt: redis.dataLostAt } : {}), dataLosses: redis.dataLosses },
      database: { ...view('database', database), ...(database.serverChangedAt ? { serverChangedAt: database.serverChangedAt } : {}) },
    };
  };
}
