// The outbox gauges read the database at each scrape: a database that stops answering must not
// hang /metrics, or Prometheus loses every other series of the process with it.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createMetrics } from '../../src/metrics.js';

it('when the outbox reading does not come, then a scrape still answers after its deadline, the outbox gauges unknown, one query in flight', async () => {
  const metrics = createMetrics();
  let queries = 0;
  metrics.watchEventOutbox(() => {
    queries += 1;
    return new Promise(() => {}); // a silent database
  });
  metrics.stored.inc(3);
  for (let scrape = 0; scrape < 2; scrape++) {
    const started = performance.now();
    const text = await metrics.registry.metrics();
    assert.ok(performance.now() - started < 2_000, 'the scrape waited for the database');
    assert.match(text, /^seckill_events_oldest_unsent_age_seconds Nan$/m);
    assert.match(text, /^seckill_orders_stored_total 3$/m);
  }
  assert.equal(queries, 1, 'the next scrape shares the query still running');
});
