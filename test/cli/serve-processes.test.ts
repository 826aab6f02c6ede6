// `seckill serve` with API_PROCESSES=2: a supervisor and two HTTP processes on one port, each a
// whole instance. Real child processes, real Redis and MariaDB.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, describe, it } from 'node:test';
import { createTokenService } from '../../src/auth/tokens.js';
import { JsonClient } from '../../src/loadgen/http-client.js';
import { decodeId } from '../../src/ids/snowflake.js';
import { processData } from '../support/helpers.js';
import { runSeckill, startSeckill } from '../../support/processes.js';
import { waitFor } from '../../support/wait.js';

// CLAIM_IDLE_MS: the killed process's unstored entries are taken over within a second.
const env = { ...processData('procs'), JWT_SECRET: 's', LOG_LEVEL: 'info', API_PROCESSES: '2', CLAIM_IDLE_MS: '1000' };

/** `seckill serve` as a supervisor; `listening()` is the pid and address of every process that listened. */
function startServe(port: number) {
  const serve = startSeckill(['serve'], { env: { ...env, PORT: String(port) } });
  after(() => serve.stop()); // when the test fails before its own SIGTERM
  const listening = () =>
    serve.lines.flatMap((line) => {
      const match = /"pid":(\d+).*listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
      return match ? [{ pid: Number(match[1]), address: match[2]! }] : [];
    });
  return Object.assign(serve, { listening });
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
  it('when two processes share the port, then both sell, a killed one is replaced, and SIGTERM stops them all with exit 0', { timeout: 150_000 }, async () => {
    const serve = startServe(0);
    await waitFor('two HTTP processes listening', () => serve.listening().length === 2, 60_000);
    await waitFor('both pipelines started', () => serve.lines.filter((l) => l.includes('order pipeline started')).length === 2, 60_000);
    const [first, second] = serve.listening();
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
      await waitFor('a replacement process', () => serve.listening().length === 3, 60_000);
      assert.ok(!alive(first!.pid));
      const admin = await tokens.sign({ userId: 1n, admin: true }, 60);
      const stats = async () => (await client.request('GET', `/api/vouchers/${voucher}/stats`, { token: admin })).body;
      await waitFor('every admitted order stored', async () => (await stats()).inFlight === 0, 30_000);
      // Both stores end as the claims say, whichever process stored which order.
      const { code, stdout, stderr } = await runSeckill(['audit', '--voucher', voucher, '--json'], { env });
      assert.equal(code, 0, `${stdout}${stderr}`);
      const audit = JSON.parse(stdout) as { ok: boolean; sold: number; dbStock: number; redisStock: number };
      assert.deepEqual({ ok: audit.ok, sold: audit.sold, dbStock: audit.dbStock, redisStock: audit.redisStock }, { ok: true, sold: 20, dbStock: 0, redisStock: 0 }, stdout);
    } finally {
      client.close();
    }
    assert.equal(await serve.stop('SIGTERM'), 0);
    for (const { pid } of serve.listening()) assert.ok(!alive(pid), `process ${pid} stopped`);
  });

  it('when the port is taken, then start-up fails with a non-zero exit and no process left behind', { timeout: 90_000 }, async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const serve = startServe(port);
      assert.notEqual(await serve.exit, 0);
      assert.equal(serve.listening().length, 0);
      assert.ok(serve.lines.some((l) => l.includes('an HTTP process failed to start')), serve.lines.join('\n'));
      // The supervisor exits only once every child has exited (stop() waits for them).
      assert.ok(serve.lines.some((l) => l.includes('EADDRINUSE')), 'the cause is reported');
    } finally {
      blocker.close();
    }
  });
});
