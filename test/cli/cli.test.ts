import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createTokenService } from '../../src/auth/tokens.js';
import { JsonClient } from '../../src/loadgen/http-client.js';
import { processData } from '../support/helpers.js';
import { runSeckill, startSeckill } from '../../support/processes.js';
import { waitFor } from '../../support/wait.js';

describe('seckill command', () => {
  it('token: prints a token for the user, signed with JWT_SECRET, living --ttl seconds', async () => {
    const { code, stdout, stderr } = await runSeckill(['token', '--user', '42', '--admin', '--ttl', '60'], { env: { JWT_SECRET: 'cli-secret' } });
    assert.equal(code, 0, stderr);
    const principal = createTokenService('cli-secret').verify(`Bearer ${stdout.trim()}`);
    assert.deepEqual({ ...principal, expiresAt: undefined }, { userId: 42n, admin: true, service: false, expiresAt: undefined });
    assert.ok(Math.abs(principal.expiresAt! - (Date.now() + 60_000)) < 5_000, 'expires in a minute');
    assert.throws(() => createTokenService('other-secret').verify(`Bearer ${stdout.trim()}`), /invalid token/);
  });

  it('token: lives JWT_MAX_TTL_SECONDS when --ttl is left out and that is shorter than an hour', async () => {
    const { code, stdout, stderr } = await runSeckill(['token', '--user', '42'], { env: { JWT_SECRET: 'cli-secret', JWT_MAX_TTL_SECONDS: '600' } });
    assert.equal(code, 0, stderr);
    const { expiresAt } = createTokenService('cli-secret').verify(`Bearer ${stdout.trim()}`);
    assert.ok(Math.abs(expiresAt! - (Date.now() + 600_000)) < 5_000, 'expires in 600 s');
  });

  it('token: refuses --ttl 0 (no expiry) with a one-line message naming JWT_MAX_TTL_SECONDS and exit code 2', async () => {
    const { code, stdout, stderr } = await runSeckill(['token', '--user', '42', '--ttl', '0']);
    assert.equal(code, 2, stderr);
    assert.equal(stderr.trim(), 'seckill: --ttl 0 means no expiry, allowed only when JWT_MAX_TTL_SECONDS is 0 (it is 86400)');
    assert.equal(stdout, '');
  });

  it('token: refuses a user id that is not a positive 64-bit integer', async () => {
    const { code, stderr } = await runSeckill(['token', '--user', 'abc']);
    assert.equal(code, 1);
    assert.match(stderr, /--user must be a positive 64-bit decimal id/);
  });

  it('stops at start-up with a one-line message naming an invalid variable', async () => {
    const { code, stderr } = await runSeckill(['serve'], { env: { PORT: 'eighty' } });
    assert.equal(code, 2);
    assert.equal(stderr.trim(), 'seckill: invalid PORT: expected an integer, got "eighty"');
  });

  it('serve: refuses with exit code 2 to listen beyond loopback with the built-in JWT_SECRET', async () => {
    // Were it not refused, it would fail on its own: an address of no interface (TEST-NET-1), stores that do not answer.
    const env = { HOST: '192.0.2.1', DATABASE_URL: 'mysql://root@127.0.0.1:1/none', REDIS_URL: 'redis://127.0.0.1:1' };
    const { code, stderr } = await runSeckill(['serve'], { env, timeoutMs: 30_000 });
    assert.equal(code, 2, stderr);
    assert.equal(
      stderr.trim(),
      'seckill: JWT_SECRET is the built-in development secret and HOST 192.0.2.1 is not a loopback address: anyone could sign an admin token; set JWT_SECRET to a random secret of at least 32 bytes',
    );
  });

  it('config: prints the configuration with the JWT secret and the password of every URL redacted', async () => {
    const { code, stdout, stderr } = await runSeckill(['config'], {
      env: { JWT_SECRET: 'top-secret', DATABASE_URL: 'mysql://shop:db-pass@db.example:3306/shop', REDIS_URL: 'redis://:redis-pass@cache.example:6379', EVENTS_AMQP_URL: 'amqp://mq:mq-pass@mq.example:5672' },
    });
    assert.equal(code, 0, stderr);
    const printed = JSON.parse(stdout);
    assert.equal(printed.jwtSecret, '<redacted>');
    assert.equal(printed.databaseUrl, 'mysql://shop:<redacted>@db.example:3306/shop');
    assert.equal(printed.redisUrl, 'redis://:<redacted>@cache.example:6379');
    assert.equal(printed.eventsAmqpUrl, 'amqp://mq:<redacted>@mq.example:5672');
    for (const secret of ['top-secret', 'db-pass', 'redis-pass', 'mq-pass']) assert.ok(!stdout.includes(secret), secret);
  });

  describe('serve', () => {
    const data = processData('serve');

    it('migrates, serves, sells through the in-process pipeline, and exits 0 on SIGTERM', async () => {
      const serve = startSeckill(['serve'], { env: { ...data, PORT: '0', JWT_SECRET: 's', LOG_LEVEL: 'info' } });
      after(() => serve.stop()); // when the test fails before its own SIGTERM
      const [, address] = await serve.line(/listening at (http:\/\/127\.0\.0\.1:\d+)/);
      const client = new JsonClient(address!);
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
      }
      assert.equal(await serve.stop('SIGTERM'), 0);
    });
  });
});
