// A flood of distinct unknown voucher ids at the unauthenticated GET /api/vouchers/:id: how many
// database statements and how much server CPU it costs.
//   node --import tsx bench/unknown-ids/run.ts [--ids 20000] [--connections 50]
// The server (server.ts) runs in a process of its own with 3 vouchers, on a throw-away database
// and key prefix, and counts every statement its pool runs. The ids are distinct and no voucher's:
// half snowflakes of the last and the next day (plausible ids), half anywhere in the 63 bits.
// BENCH_DATABASE_SERVER picks the database server (default mysql://root@127.0.0.1:3306).
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { EPOCH_MS } from '../../src/ids/snowflake.js';
import { machineInfo, processCpuUs } from '../../src/loadgen/machine.js';
import { readFlags } from '../support/flags.js';
import { nextMessage } from '../support/child-messages.js';

const { ids, connections } = readFlags({ ids: 20_000, connections: 50 });

const name = `bench_unknown_${process.pid}`;
const databaseServer = process.env.BENCH_DATABASE_SERVER || 'mysql://root@127.0.0.1:3306';
const server = fork(fileURLToPath(new URL('./server.ts', import.meta.url)), [], {
  execArgv: ['--import', 'tsx'],
  env: { ...process.env, BENCH_DATABASE_URL: `${databaseServer}/${name}`, BENCH_REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379', BENCH_PREFIX: name },
});
const next = (type: string) => nextMessage<Record<string, number>>(server, type);
const queries = async () => {
  const answer = next('queries');
  server.send({ type: 'queries' });
  return (await answer).n!;
};

function unknownIds(n: number): string[] {
  const out = new Set<string>();
  const day = 86_400_000;
  while (out.size < n) {
    const id =
      out.size % 2
        ? (BigInt(Date.now() - EPOCH_MS + Math.floor((Math.random() * 2 - 1) * day)) << 22n) | BigInt(Math.floor(Math.random() * 2 ** 22))
        : BigInt.asUintN(63, (BigInt(Math.floor(Math.random() * 2 ** 53)) << 10n) | BigInt(Math.floor(Math.random() * 1024)));
    if (id > 0n) out.add(id.toString());
  }
  return [...out];
}

try {
  const { port } = await next('ready');
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections });
  const list = unknownIds(ids);
  const statuses = new Map<number, number>();
  const queriesBefore = await queries();
  const cpuBefore = processCpuUs(server.pid!);
  const started = performance.now();
  let i = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (i < list.length) {
        const res = await pool.request({ method: 'GET', path: `/api/vouchers/${list[i++]}` });
        await res.body.dump();
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      }
    }),
  );
  const wallS = (performance.now() - started) / 1000;
  const cpuMs = (processCpuUs(server.pid!) - cpuBefore) / 1000;
  const statements = (await queries()) - queriesBefore;
  await pool.close();
  const m = machineInfo();
  console.log(`machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}, ${m.platform}; database ${databaseServer}`);
  console.log(`${ids} distinct unknown ids, ${connections} connections: answers ${JSON.stringify(Object.fromEntries(statuses))}`);
  console.log(
    `database statements ${statements} (${(statements / ids).toFixed(4)} per request) · ${Math.round(ids / wallS)} req/s · ` +
      `server CPU ${Math.round(cpuMs)} ms (${((cpuMs * 1000) / ids).toFixed(0)} µs per request) · wall ${wallS.toFixed(2)} s`,
  );
} finally {
  if (server.exitCode === null) {
    server.send({ type: 'stop' });
    await once(server, 'exit');
  }
}
