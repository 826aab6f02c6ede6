import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claimCounters, latencyBuckets, latencyQuantileMs, pipelineLag, ratesBetween } from '../../src/console/claim-rates.js';

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

describe('claim latency and pipeline lag from the metrics text', () => {
  const text = (counts: number[]) =>
    ['0.001', '0.005', '0.01', '+Inf'].map((le, i) => `seckill_claim_duration_seconds_bucket{outcome="accepted",le="${le}"} ${counts[i]}`).join('\n') +
    '\nseckill_pipeline_lag_seconds 0.25\n';

  it('takes the quantiles of the claims between two readings, as the bucket bounds that hold them', () => {
    const before = latencyBuckets(text([10, 10, 10, 10]));
    const after = latencyBuckets(text([60, 105, 109, 110])); // 100 claims: 50 ≤ 1 ms, 45 ≤ 5 ms, 4 ≤ 10 ms, 1 above
    assert.equal(latencyQuantileMs(before, after, 0.5), 1);
    assert.equal(latencyQuantileMs(before, after, 0.95), 5);
    assert.equal(latencyQuantileMs(before, after, 0.99), 10);
    assert.equal(latencyQuantileMs(before, after, 1), null, 'beyond the last bound: unknown');
    assert.equal(latencyQuantileMs(after, after, 0.5), null, 'no claims in between');
  });

  it('reads the pipeline lag, or null where there is none', () => {
    assert.equal(pipelineLag(text([0, 0, 0, 0])), 0.25);
    assert.equal(pipelineLag('seckill_claims_total{outcome="admitted"} 3\n'), null);
  });
});
