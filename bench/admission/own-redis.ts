// A Redis of a scenario's own (durability knobs), from scripts/redis-topology.sh on free ports:
// its URL for the server child, and the CPU its processes (master, and replica if any) used.
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePorts } from '../../support/free-ports.js';
import { DURABILITY_KNOBS, type DurabilityKnob } from './protocol.js';

const run = promisify(execFile);
const TOPOLOGY = fileURLToPath(new URL('../../scripts/redis-topology.sh', import.meta.url));


export interface OwnRedis {
  url: string;
  /** CPU µs (user + system) used so far by the topology's servers. */
  cpuUs(): Promise<number>;
  stop(): Promise<void>;
}

export async function redisCpuUs(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

export async function startOwnRedis(knob: DurabilityKnob): Promise<OwnRedis> {
  const [kind, ...options] = DURABILITY_KNOBS[knob].topology;
  const servers = kind === 'replica' ? 2 : 1;
  const port = await freePorts(servers);
  const args = ['--port', String(port), '--dir', mkdtempSync(join(tmpdir(), 'bench-redis-'))];
  await run('bash', [TOPOLOGY, kind!, 'up', ...args, ...options]);
  const clients = Array.from({ length: servers }, (_, i) => new Redis(port + i, '127.0.0.1', { connectionName: 'bench-driver' }));
  return {
    url: `redis://127.0.0.1:${port}`,
    cpuUs: async () => (await Promise.all(clients.map(redisCpuUs))).reduce((a, b) => a + b, 0),
    async stop() {
      for (const c of clients) c.disconnect();
      await run('bash', [TOPOLOGY, kind!, 'down', ...args]);
    },
  };
}
