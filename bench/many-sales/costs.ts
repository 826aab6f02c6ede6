// What a stretch of a sale cost each process: the server's CPU (/proc of its pid), Redis' CPU and
// commands (INFO: exact on a Redis of the bench's own, everyone's on a shared one), and the
// database server's CPU (its processes machine-wide: on a shared server, other clients' work too).
import type { Redis } from 'ioredis';
import type { Db } from '../../src/infra/db/database.js';
import { redisCpuUs } from '../admission/own-redis.js';
import { cpuMeter } from '../drain/probes.js';

export interface Costs {
  serverUs: number;
  redisUs: number;
  /** Redis commands, the bench's own INFO calls left out. */
  redisCalls: number;
  /** Of which script calls (EVALSHA: admit-n.lua for the claims, settle-n.lua for the pipeline, …). */
  scriptCalls: number;
  /** Calls by command name. */
  byCommand: Record<string, number>;
  databaseUs: number;
}

async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const [, name, n] of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (name !== 'info') calls.set(name!, Number(n));
  return calls;
}

const sum = (calls: Record<string, number>, names?: string[]) => Object.entries(calls).reduce((n, [name, c]) => (!names || names.includes(name) ? n + c : n), 0);

/** Starts measuring; each call of the returned function gives the costs since the start. */
export async function costMeter(serverCpuUs: () => number, redis: Redis, db: Db): Promise<() => Promise<Costs>> {
  const database = cpuMeter(db);
  const server = serverCpuUs();
  const redisCpu = await redisCpuUs(redis);
  const calls = await commandCalls(redis);
  return async () => {
    const byCommand = Object.fromEntries([...(await commandCalls(redis))].map(([name, n]) => [name, n - (calls.get(name) ?? 0)]).filter(([, n]) => n));
    return {
      serverUs: serverCpuUs() - server,
      redisUs: (await redisCpuUs(redis)) - redisCpu,
      redisCalls: sum(byCommand),
      scriptCalls: sum(byCommand, ['evalsha', 'eval']),
      byCommand,
      databaseUs: database().database * 1e6,
    };
  };
}
