import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createTokenService } from '../../src/auth/tokens.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { JsonClient } from '../../src/loadgen/http-client.js';
import { deleteKeys, MYSQL_SERVER, REDIS_URL, uniqueName } from '../support/helpers.js';
import { waitFor } from '../support/wait.js';
import { Redis } from 'ioredis';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
const seckill = (args: string[], env: Record<string, string> = {}) =>
  run(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], { cwd: ROOT, env: { ...process.env, ...env } });

describe('seckill command', () => {
  it('token: prints a token for the user, signed with JWT_SECRET', async () => {
    const { stdout } = await seckill(['token', '--user', '42', '--admin', '--ttl', '60'], { JWT_SECRET: 'cli-secret' });
    const principal = createTokenService('cli-secret').verify(`Bearer ${stdout.trim()}`);
    assert.deepEqual(principal, { userId: 42n, admin: true });
    assert.throws(() => createTokenService('other-secret').verify(`Bearer ${stdout.trim()}`), /invalid token/);
  });

  it('token: refuses a user id that is not a positive 64-bit integer', async () => {
    await assert.rejects(seckill(['token', '--user', 'abc']), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /--user must be a positive 64-bit decimal id/);
      return true;
    });
  });

  it('stops at start-up with a one-line message naming an invalid variable', async () => {
    await assert.rejects(seckill(['serve'], { PORT: 'eighty' }), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 2);
      assert.equal(err.stderr.trim(), 'seckill: invalid PORT: expected an integer, got "eighty"');
      return true;
    });
  });

  describe('serve', () => {
    const name = uniqueName('serve');
    after(async () => {
      await dropDatabase(`${MYSQL_SERVER}/${name}`);
      const redis = new Redis(REDIS_URL);
      await deleteKeys(redis, `${name}:*`);
      redis.disconnect();
    });

    it('migrates, serves, sells through the in-process pipeline, and exits 0 on SIGTERM', async () => {
      const env = { DATABASE_URL: `${MYSQL_SERVER}/${name}`, REDIS_PREFIX: name, PORT: '0', JWT_SECRET: 's', LOG_LEVEL: 'info' };
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], { cwd: ROOT, env: { ...process.env, ...env } });
      const exit = new Promise<number | null>((resolve) => child.once('exit', resolve));
      const address = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const match = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
          if (match) resolve(match[1]!);
        });
        child.once('exit', () => reject(new Error(`serve exited early: ${out}`)));
      });
      const client = new JsonClient(address);
      try {
        assert.equal((await client.request('GET', '/healthz')).status, 200);
        assert.equal((await client.request('GET', '/readyz')).status, 200);
        const tokens = createTokenService('s');
        const created = await client.request('POST', '/api/vouchers', {
          token: await tokens.sign({ userId: 1n, admin: true }, 60),
          body: { title: 'cli', kind: 'seckill', stock: 2, beginAt: new Date(Date.now() - 1000).toISOString(), endAt: new Date(Date.now() + 60_000).toISOString() },
        });
        assert.equal(created.status, 201);
        const buyer = await tokens.sign({ userId: 7n, admin: false }, 60);
        const claimed = await client.request('POST', `/api/vouchers/${created.body.id}/orders`, { token: buyer, body: {} });
        assert.equal(claimed.status, 202);
        const status = await waitFor('the order to leave processing', async () => {
          const current = String((await client.request('GET', `/api/orders/${claimed.body.orderId}`, { token: buyer })).body.status);
          return current !== 'processing' && current;
        }, 15_000, 50);
        assert.equal(status, 'pending_payment');
        const metrics = await client.request('GET', '/metrics');
        assert.equal(metrics.status, 200);
      } finally {
        client.close();
        child.kill('SIGTERM');
      }
      assert.equal(await exit, 0);
    });
  });
});
