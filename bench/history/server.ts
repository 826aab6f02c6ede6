// One `seckill serve` process (API and workers, default settings) on a database and key prefix,
// timed from spawn to ready, with its CPU time and resident memory read from /proc.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { processCpuUs } from '../../src/loadgen/machine.js';
import { type Running, startSeckill } from '../../support/processes.js';
import { waitFor } from '../../support/wait.js';
import { freePorts } from '../../support/free-ports.js';

export const JWT_SECRET = 'history-bench-secret-of-at-least-32-bytes';

export interface Server {
  origin: string;
  pid: number;
  /** Spawn to the first 200 from /readyz (migrations, connections, worker start). */
  readyMs: number;
  /** The last lines of its output. */
  tail(lines?: number): string;
  cpuUs(): number;
  rssMiB(): number;
  stop(): Promise<void>;
}

export async function startServer(env: Record<string, string>): Promise<Server> {
  const port = await freePorts(1);
  const origin = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const proc: Running = startSeckill(['serve'], {
    env: { JWT_SECRET, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
  });
  await waitFor(
    () => `seckill serve to be ready:\n${proc.lines.slice(-20).join('\n')}`,
    async () => {
      if (proc.exited) throw new Error(`seckill serve exited:\n${proc.lines.slice(-30).join('\n')}`);
      const res = await request(`${origin}/readyz`).catch(() => null);
      await res?.body.dump();
      return res?.statusCode === 200;
    },
    300_000,
    20,
  );
  const readyMs = performance.now() - started;
  const pid = proc.child.pid!;
  return {
    origin,
    pid,
    readyMs,
    tail: (n = 20) => proc.lines.slice(-n).join('\n'),
    cpuUs: () => processCpuUs(pid),
    rssMiB: () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024,
    async stop() {
      const code = await proc.stop('SIGTERM');
      if (code !== 0) console.error(`seckill serve exited with ${code}:\n${proc.lines.slice(-20).join('\n')}`);
    },
  };
}
