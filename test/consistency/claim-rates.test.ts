import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claimCounters, ratesBetween } from '../../src/consistency/claim-rates.js';

describe('claim rates from the metrics text', () => {
  it('reads seckill_claims_total by outcome and nothing else', () => {
    const text = [
      '# HELP seckill_claims_total x',
      'seckill_claims_total{outcome="admitted"} 12',
      'seckill_claims_total{outcome="sold_out"} 3',
      'seckill_orders_stored_total 9',
    ].join('\n');
    assert.deepEqual(claimCounters(text), { admitted: 12, sold_out: 3 });
  });

  it('turns two readings into per-second rates; a counter that went down (restart) counts 0', () => {
    assert.deepEqual(ratesBetween({ admitted: 10, sold_out: 5 }, { admitted: 30, sold_out: 2, replayed: 1 }, 2), { admitted: 10, sold_out: 0, replayed: 0.5 });
    assert.deepEqual(ratesBetween({}, { admitted: 1 }, 0), {});
  });
});
