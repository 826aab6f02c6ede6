import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeId, EPOCH_MS, Snowflake } from '../../src/ids/snowflake.js';

describe('Snowflake ids', () => {
  it('encodes time, worker and sequence, and decodes them back', () => {
    const now = EPOCH_MS + 123_456_789;
    const id = new Snowflake(513, { now: () => now }).next();
    assert.deepEqual(decodeId(id), { timestampMs: now, workerId: 513, sequence: 0 });
  });

  it('is strictly increasing within one generator, across many ids per millisecond', () => {
    let now = EPOCH_MS + 1000;
    let calls = 0;
    const gen = new Snowflake(1, { now: () => (++calls % 5000 === 0 ? ++now : now) });
    let last = -1n;
    for (let i = 0; i < 50_000; i++) {
      const id = gen.next();
      assert.ok(id > last);
      last = id;
    }
  });

  it('when the 4096 ids of a millisecond are used up, then it moves to the next millisecond instead of repeating', () => {
    const now = EPOCH_MS + 5000;
    const gen = new Snowflake(2, { now: () => now });
    const ids = Array.from({ length: 4097 }, () => gen.next());
    assert.equal(new Set(ids).size, 4097);
    assert.equal(decodeId(ids[4095]!).timestampMs, now);
    assert.equal(decodeId(ids[4096]!).timestampMs, now + 1);
  });

  it('when the clock moves backwards, then it keeps issuing increasing ids from the last timestamp and reports the drift once', () => {
    let now = EPOCH_MS + 10_000;
    const drifts: number[] = [];
    const gen = new Snowflake(3, { now: () => now, onClockBackwards: (d) => drifts.push(d) });
    const before = gen.next();
    now -= 2_000;
    const during = [gen.next(), gen.next(), gen.next()];
    assert.ok(during.every((id) => id > before));
    assert.ok(during[0]! < during[1]! && during[1]! < during[2]!);
    assert.equal(decodeId(during[2]!).timestampMs, EPOCH_MS + 10_000);
    assert.deepEqual(drifts, [2_000]);
    now += 3_000; // the wall clock passes the logical one again
    const after = gen.next();
    assert.equal(decodeId(after).timestampMs, EPOCH_MS + 11_000);
  });

  it('never issues a timestamp at or below the high-water mark it starts after', () => {
    const gen = new Snowflake(4, { now: () => EPOCH_MS + 100, startAfterMs: EPOCH_MS + 500 });
    assert.equal(decodeId(gen.next()).timestampMs, EPOCH_MS + 501);
  });

  it('rejects worker ids outside 0..1023', () => {
    assert.throws(() => new Snowflake(1024), RangeError);
    assert.throws(() => new Snowflake(-1), RangeError);
  });
});
