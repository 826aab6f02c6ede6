import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claimOutcomeClass, createMetrics } from '../src/metrics.js';
import { CONSUMER_GROUP, streamBacklog } from '../src/pipeline/maintenance.js';
import { burst, createVoucher, range, startTestApp, suiteScope } from './support/helpers.js';
import { waitForDrain } from './support/invariants.js';
import { waitFor } from '../support/wait.js';

/** The value of one sample line of /metrics (`name{labels} value`), or undefined. */
function sample(text: string, line: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

// A long block keeps the lane's last read (the first batch) as the reading while the test scrapes.
const t = await startTestApp(suiteScope(), 'metrics', { PIPELINE_BLOCK_MS: '20000', EXPIRY_POLL_MS: '100' });

describe('metrics (unit)', () => {
  it('when claim answers are classed, then there are three outcome classes', () => {
    assert.deepEqual([202, 201, 409, 429, 503, 500].map(claimOutcomeClass), ['accepted', 'accepted', 'refused', 'refused', 'unavailable', 'unavailable']);
  });

  it('when nothing runs a pipeline, then the lag gauge reads 0 and follows its probe once one is set', async () => {
    const m = createMetrics();
    assert.match(await m.registry.metrics(), /^seckill_pipeline_lag_seconds 0$/m);
    m.watchPipelineLag(() => 1.5);
    assert.match(await m.registry.metrics(), /^seckill_pipeline_lag_seconds 1.5$/m);
  });
});

describe('metrics of a sale (claim latency, pipeline lag, expiry lateness)', () => {
  it('when claims are answered, then each is one observation of the latency histogram by outcome class', async () => {
    const v = await createVoucher(t, { stock: 3, paymentTimeoutSeconds: 1 });
    const admitted = await burst(t, v.id, range(1, 5));
    assert.equal(admitted.length, 3);
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.equal(sample(text, 'seckill_claim_duration_seconds_count{outcome="accepted"}'), 3);
    assert.equal(sample(text, 'seckill_claim_duration_seconds_count{outcome="refused"}'), 2);
    assert.equal(sample(text, 'seckill_claim_duration_seconds_bucket{le="+Inf",outcome="accepted"}'), 3);
    assert.ok(sample(text, 'seckill_claim_duration_seconds_sum{outcome="accepted"}')! > 0);

    // Not a wait for a condition: it ages the entries, so they are 400+ ms old when the pipeline starts: its first read reports them that old.
    await new Promise((resolve) => setTimeout(resolve, 400));
    await t.c.startPipeline();
    await waitForDrain(t.c, v.id);
    const drained = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const lag = sample(drained, 'seckill_pipeline_lag_seconds')!;
    assert.ok(lag >= 0.4 && lag < 30, `lag ${lag}`);
    assert.equal(sample(drained, 'seckill_stream_backlog'), 0, 'every admitted order stored');

    // Unpaid orders due 1 s after storage, expired by the timer polling every 100 ms.
    t.c.startExpiry();
    const expired = await waitFor('three expiries observed', async () => {
      const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      return sample(text, 'seckill_expiry_lateness_seconds_count') === 3 ? text : null;
    });
    const lateness = sample(expired, 'seckill_expiry_lateness_seconds_sum')!;
    assert.ok(lateness >= 0 && lateness < 3 * 5, `lateness sum ${lateness}`);
  });
});

describe('stream backlog', () => {
  it('counts the entries of a stream not acknowledged by the consumer group: delivered or not', async () => {
    const stream = `${t.c.keys.prefix}:backlog-test`;
    await t.c.redis.xgroup('CREATE', stream, CONSUMER_GROUP, '0', 'MKSTREAM');
    for (let i = 0; i < 3; i++) await t.c.redis.xadd(stream, '*', 'd', String(i));
    assert.equal(await streamBacklog(t.c.redis, stream), 3, 'not delivered yet');
    const read = (await t.c.redis.xreadgroup('GROUP', CONSUMER_GROUP, 'c1', 'COUNT', 2, 'STREAMS', stream, '>')) as [string, [string, string[]][]][];
    assert.equal(await streamBacklog(t.c.redis, stream), 3, '2 delivered and pending, 1 not delivered');
    await t.c.redis.xack(stream, CONSUMER_GROUP, read[0]![1][0]![0]);
    assert.equal(await streamBacklog(t.c.redis, stream), 2);
    assert.equal(await streamBacklog(t.c.redis, `${stream}:absent`), 0);
  });
});

