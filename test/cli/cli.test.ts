import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createTokenService } from '../../src/auth/tokens.js';
import { JsonClient } from '../../src/loadgen/http-client.js';
import { processData } from '../support/helpers.js';
import { runSeckill, startSeckill } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

describe('seckill command', () => {
  it('token: prints a token for the user, signed with JWT_SECRET', async () => {
    const { code, stdout, stderr } = await runSeckill(['token', '--user', '42', '--admin', '--ttl', '60'], { env: { JWT_SECRET: 'cli-secret' } });
    assert.equal(code, 0, stderr);
    const principal = createTokenService('cli-secret').verify(`Bearer ${stdout.trim()}`);
    assert.deepEqual(principal, { userId: 42n, admin: true });
    assert.throws(() => createTokenService('other-secret').verify(`Bearer ${stdout.trim()}`), /invalid token/);
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
