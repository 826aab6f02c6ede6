// Redis answers from another master that holds older voucher state (what a replica promoted by a
// failover has when it missed the old master's last admissions): no claim is admitted on that
// state before it is verified against the database, so nothing admitted afterwards fails there.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { claim, createVoucher, range, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';
import { startPrivateRedis } from '../../support/private-redis.js';
import { waitFor } from '../../support/wait.js';

// Kept on disk (AOF always) so the restart keeps the old state and gives the server a new
// replication id, as a promotion does; the data epoch survives, so this is no data loss.
const redis = await startPrivateRedis({ appendfsync: 'always' });
// The watch checks rarely here: the claims themselves must find the change.
const t = await startTestApp(suiteScope(), 'master-change', { REDIS_URL: redis.url, RECONCILE_INTERVAL_MS: '0', REDIS_CHECK_INTERVAL_MS: '60000' });
after(() => redis.stop()); // after the app: after hooks run in order
await t.c.startWorkers();

/** The voucher's keys as they are now, to put back later (a replica's older copy). */
async function copyOf(keys: string[]): Promise<() => Promise<void>> {
  const dumps = await Promise.all(keys.map((k) => t.c.redis.dumpBuffer(k)));
  return async () => {
    for (const [i, key] of keys.entries()) {
      await t.c.redis.del(key);
      if (dumps[i]) await t.c.redis.restore(key, 0, dumps[i]!);
    }
  };
}

/** A claim answered by Redis again (while the connection comes back, claims are answered 503). */
async function claimOnceBack(voucherId: string, userId: number, idempotencyKey: string) {
  let res = await claim(t, voucherId, userId, { idempotencyKey });
  for (let i = 0; res.statusCode === 503 && i < 100; i++) {
    await new Promise((r) => setTimeout(r, 50));
    res = await claim(t, voucherId, userId, { idempotencyKey });
  }
  return res;
}

describe('a Redis master change', () => {
  it('when the new master holds state older than the database, then claims wait for its verification and none is admitted on the old state', { timeout: 60_000 }, async () => {
    const v = await createVoucher(t, { stock: 10, perUserLimit: 1 });
    const id = BigInt(v.id);
    const putBack = await copyOf([t.c.keys.voucher(id), t.c.keys.buyers(id), t.c.keys.idempotency(id)]);
    const sold = await Promise.all(range(1, 4).map((u) => claim(t, v.id, u, { idempotencyKey: `k${u}` })));
    assert.deepEqual(sold.map((r) => r.statusCode), [202, 202, 202, 202]);
    await waitForDrain(t.c, v.id);

    // The new master: stock 10, no buyer, no idempotency record, as before the four were sold.
    await putBack();
    await redis.kill();
    await redis.restart();

    // A buyer whose order is stored asks again (its key is unknown there): not a second unit.
    const again = await claimOnceBack(v.id, 1, 'k1-again');
    assert.equal(again.statusCode, 409, again.body);
    assert.equal(again.json().code, 'LIMIT_EXCEEDED');
    // Six units are left, not ten.
    const rest = await Promise.all(range(5, 8).map((u) => claimOnceBack(v.id, u, `k${u}`)));
    assert.deepEqual(rest.map((r) => r.json().code ?? r.statusCode).sort(), [...Array(6).fill(202), 'SOLD_OUT', 'SOLD_OUT']);

    await waitForDrain(t.c, v.id);
    const admitted = [...sold, ...rest].filter((r) => r.statusCode === 202).map((r) => r.json().orderId as string);
    const truth = await assertInvariants(t.c, v.id, admitted);
    assert.deepEqual(truth.orders.filter((o) => o.status === 'failed'), [], 'no 202 on state the database could not fulfil');
    assert.equal(truth.orders.length, 10);

    // The watch says so too, at its next check.
    await t.c.redisWatch.check();
    await waitFor('the master change counted', async () => ((await t.c.metrics.redisMasterChanges.get()).values[0]?.value ?? 0) === 1);
  });

  it('when the watch notices the change, then it verifies every live voucher before any claim comes', { timeout: 60_000 }, async () => {
    const v = await createVoucher(t, { stock: 10, perUserLimit: 1 });
    const id = BigInt(v.id);
    const putBack = await copyOf([t.c.keys.voucher(id), t.c.keys.buyers(id), t.c.keys.idempotency(id)]);
    assert.equal((await claim(t, v.id, 1)).statusCode, 202);
    await waitForDrain(t.c, v.id);
    await putBack();
    await redis.kill();
    await redis.restart();

    const shard = t.c.keys.shardOf(id);
    await waitFor('the watch to verify the voucher', async () => {
      await t.c.redisWatch.check();
      return (await t.c.scripts.masterOf(id, shard).catch(() => null))?.verified === true;
    });
    assert.equal(await t.c.redis.hget(t.c.keys.voucher(id), 'stock'), '9', 'the unit the database sold is gone from Redis');
    assert.equal(await t.c.redis.hget(t.c.keys.buyers(id), '1'), '1');
  });
});
