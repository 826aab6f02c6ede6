import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff } from '../src/retry-backoff.js';

describe('Backoff', () => {
  it('when attempts keep failing, then each wait doubles up to the cap, and a success starts over', () => {
    const backoff = new Backoff(100, 500);
    assert.deepEqual([backoff.next(), backoff.next(), backoff.next(), backoff.next()], [100, 200, 400, 500]);
    assert.equal(backoff.current, 500);
    backoff.reset();
    assert.equal(backoff.next(), 100);
  });
});
