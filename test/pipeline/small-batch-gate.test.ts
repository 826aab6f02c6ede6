// The lanes' turn for small batches: one at a time, in the order asked, and a batch that fails
// does not keep the next from its turn.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SmallBatchGate } from '../../src/pipeline/small-batch-gate.js';

describe('the small-batch turn of the pipeline lanes', () => {
  it('when three lanes ask for the turn at once, then their batches run one after the other in the order asked, a failing one included', async () => {
    const gate = new SmallBatchGate();
    const log: string[] = [];
    let running = 0;
    const batch = (name: string, ms: number, fail = false) =>
      gate.run(async () => {
        running += 1;
        assert.equal(running, 1, 'one small batch at a time');
        log.push(`${name} start`);
        await sleep(ms);
        log.push(`${name} end`);
        running -= 1;
        if (fail) throw new Error(`${name} failed`);
        return name;
      });
    const results = await Promise.allSettled([batch('a', 20), batch('b', 5, true), batch('c', 1)]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.deepEqual(log, ['a start', 'a end', 'b start', 'b end', 'c start', 'c end']);
  });
});
