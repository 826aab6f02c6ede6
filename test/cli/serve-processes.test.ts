// `seckill serve` with API_PROCESSES=2: a supervisor and two HTTP processes on one port, each a
// whole instance. Real child processes, real Redis and MariaDB.
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { createTokenService } from '../../src/auth/tokens.js';
import { JsonClient } from '../../src/loadgen/http-client.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { decodeId } from '../../src/ids/snowflake.js';
import { deleteKeys, MYSQL_SERVER, REDIS_URL, uniqueName } from '../support/helpers.js';
import { waitFor } from '../support/wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const name = uniqueName('procs');
// CLAIM_IDLE_MS: the killed process's unstored entries are taken over within a second.
const env = { DATABASE_URL: `${MYSQL_SERVER}/${name}`, REDIS_PREFIX: name, JWT_SECRET: 's', LOG_LEVEL: 'info', API_PROCESSES: '2', CLAIM_IDLE_MS: '1000' };

/** `seckill serve` as a supervisor; collects the pid and address of every process that listened. */
function startServe(port: number) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port) },
  }) as ChildProcessWithoutNullStreams;
  const listening: { pid: number; address: string }[] = [];
  const lines: string[] = [];
  let out = '';
  const onOutput = (chunk: Buffer) => {
    out += chunk.toString();
    for (let end = out.indexOf('\n'); end >= 0; end = out.indexOf('\n')) {
      const line = out.slice(0, end);
      out = out.slice(end + 1);
      lines.push(line);
      const match = /"pid":(\d+).*listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
      if (match) listening.push({ pid: Number(match[1]), address: match[2]! });
    }
  };
  child.stdout.on('data', onOutput);
  child.stderr.on('data', onOutput);
  const exit = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, listening, lines, exit };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('seckill serve with API_PROCESSES=2', () => {
  after(async () => {
    await dropDatabase(`${MYSQL_SERVER}/${name}`);
    const redis = new Redis(REDIS_URL);
    await deleteKeys(redis, `${name}:*`);
    redis.disconnect();
  });

  it('when two processes share the port, then both sell, a killed one is replaced, and SIGTERM stops them all with exit 0', { timeout: 150_000 }, async () => {
    const serve = startServe(0);
    await waitFor('two HTTP processes listening', () => serve.listening.length === 2, 60_000);
    await waitFor('both pipelines started', () => serve.lines.filter((l) => l.includes('order pipeline started')).length === 2, 60_000);
    const [first, second] = serve.listening;
    assert.equal(first!.address, second!.address, 'one port for both');
    assert.notEqual(first!.pid, second!.pid);
    const client = new JsonClient(first!.address);
    const tokens = createTokenService('s');
    try {
      const created = await client.request('POST', '/api/vouchers', {
        token: await tokens.sign({ userId: 1n, admin: true }, 60),
        body: { title: 'two processes', kind: 'seckill', stock: 20, beginAt: new Date(Date.now() - 1000).toISOString(), endAt: new Date(Date.now() + 60_000).toISOString() },
      });
      assert.equal(created.status, 201);
      const voucher = String(created.body.id);
      // A connection per buyer: the supervisor hands connections to the processes in turn. The
      // first four one after the other (each process gets two, whatever the load of the box),
      // then the rest all at once.
      const claimAlone = async (i: number) => {
        const buyer = new JsonClient(first!.address, 1);
        try {
          return await buyer.request('POST', `/api/vouchers/${voucher}/orders`, { token: await tokens.sign({ userId: BigInt(100 + i), admin: false }, 60), body: {} });
        } finally {
          buyer.close();
        }
      };
      const claims = [];
      for (let i = 0; i < 4; i++) claims.push(await claimAlone(i));
      claims.push(...(await Promise.all(Array.from({ length: 26 }, (_, i) => claimAlone(4 + i)))));
      const admitted = claims.filter((r) => r.status === 202).map((r) => BigInt(String(r.body.orderId)));
      assert.equal(admitted.length, 20, 'every unit sold once');
      assert.equal(claims.filter((r) => r.body.code === 'SOLD_OUT').length, 10);
      assert.equal(new Set(admitted).size, 20);
      // Each process leased an id-generator worker id of its own: both answered claims.
      assert.equal(new Set(admitted.map((id) => decodeId(id).workerId)).size, 2, 'claims answered by both processes');
      // Whichever process a scrape reaches, /metrics counts the claims of both.
      const metrics = await fetch(`${first!.address}/metrics`).then((r) => r.text());
      const claimed = (outcome: string) => Number(new RegExp(`^seckill_claims_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(metrics)?.[1] ?? 0);
      assert.equal(claimed('admitted'), 20, metrics);
      // A process that has seen the voucher sold out answers from memory (sold_out_cached).
      assert.equal(claimed('sold_out') + claimed('sold_out_cached'), 10, metrics);

      process.kill(first!.pid, 'SIGKILL');
      await waitFor('a replacement process', () => serve.listening.length === 3, 60_000);
      assert.ok(!alive(first!.pid));
      const admin = await tokens.sign({ userId: 1n, admin: true }, 60);
      const stats = async () => (await client.request('GET', `/api/vouchers/${voucher}/stats`, { token: admin })).body;
      await waitFor('every admitted order stored', async () => (await stats()).inFlight === 0, 30_000);
      // Both stores end as the claims say, whichever process stored which order.
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/main.ts', 'audit', '--voucher', voucher, '--json'], {
        cwd: ROOT,
        env: { ...process.env, ...env },
      });
      const audit = JSON.parse(stdout) as { ok: boolean; sold: number; dbStock: number; redisStock: number };
      assert.deepEqual({ ok: audit.ok, sold: audit.sold, dbStock: audit.dbStock, redisStock: audit.redisStock }, { ok: true, sold: 20, dbStock: 0, redisStock: 0 }, stdout);
    } finally {
      client.close();
      serve.child.kill('SIGTERM');
    }
    assert.equal(await serve.exit, 0);
    for (const { pid } of serve.listening) assert.ok(!alive(pid), `process ${pid} stopped`);
  });

  it('when the port is taken, then start-up fails with a non-zero exit and no process left behind', { timeout: 90_000 }, async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const serve = startServe(port);
      assert.notEqual(await serve.exit, 0);
      assert.equal(serve.listening.length, 0);
      assert.ok(serve.lines.some((l) => l.includes('an HTTP process failed to start')), serve.lines.join('\n'));
      // The supervisor exits only once every child has exited (stop() waits for them).
      assert.ok(serve.lines.some((l) => l.includes('EADDRINUSE')), 'the cause is reported');
    } finally {
      blocker.close();
    }
  });
});
