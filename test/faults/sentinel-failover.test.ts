// The Redis master dies (kill -9) under load; Sentinel promotes a replica and the service follows
// by itself. With ADMIT_DURABILITY=replica every 202 was on a replica before it was answered, so
// none is lost (the memory policy: sentinel-failover-memory.test.ts).
import { describe, it } from 'node:test';
import { failoverSale } from '../support/failover.js';
import { assertInvariants } from '../support/invariants.js';

describe('Sentinel failover under load, ADMIT_DURABILITY=replica', () => {
  it('when the master is killed, then the service follows the promoted replica and no acknowledged order is lost', { timeout: 120_000 }, async (ctx) => {
    const { t, v, sale } = await failoverSale('failover-replica', 'replica', ctx);
    const truth = await assertInvariants(t.c, v.id, sale.admitted());
    ctx.diagnostic(`${sale.admitted().length} admitted, ${truth.orders.length} stored, ${sale.answers.filter((a) => a.status === 503).length} answered 503 during the failover`);
  });
});
