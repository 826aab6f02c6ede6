// GET /readyz: each dependency's state and latency. Ready (200) while both stores answer, even
// slowly ("degraded": slow, or Redis lost its data in the last minute); 503 when one is down.
import { sql } from 'kysely';
import type { Db } from './infra/db/database.js';
import type { DependencyState, RedisHealth, RedisWatch } from './infra/redis/redis-watch.js';

const SLOW_DB_MS = 250;

export interface DependencyReport {
  state: DependencyState;
  latencyMs: number | null;
  error?: string;
}

export interface Readiness {
  status: 'ready' | 'degraded' | 'unavailable';
  redis: RedisHealth;
  database: DependencyReport;
}

async function databaseReport(db: Db): Promise<DependencyReport> {
  const started = performance.now();
  try {
    await sql`select 1`.execute(db);
    const latencyMs = Math.round((performance.now() - started) * 10) / 10;
    return { state: latencyMs > SLOW_DB_MS ? 'degraded' : 'ok', latencyMs };
  } catch (err) {
    return { state: 'down', latencyMs: null, error: (err as Error).message };
  }
}

export function readinessCheck({ redisWatch, db }: { redisWatch: Pick<RedisWatch, 'check' | 'current'>; db: Db }): () => Promise<Readiness> {
  return async () => {
    const [, database] = await Promise.all([redisWatch.check(), databaseReport(db)]);
    const redis = redisWatch.current();
    const states = [redis.state, database.state];
    const status = states.includes('down') ? 'unavailable' : states.includes('degraded') ? 'degraded' : 'ready';
    return { status, redis, database };
  };
}
