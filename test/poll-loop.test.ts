import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { PollLoop, type PollLoopOptions } from '../src/poll-loop.js';
import { Backoff } from '../src/retry-backoff.js';
import { waitFor } from '../support/wait.js';

/** Longer than any test: a round that waits the interval is never followed by another by itself. */
const INTERVAL_MS = 60_000;

/** A loop whose rounds are counted and, in turn, do what `outcomes` says (then find nothing more). */
function countedLoop(outcomes: ('more' | 'idle' | 'fail' | (() => Promise<void>))[], options: Partial<PollLoopOptions> = {}) {
  let rounds = 0;
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const loop = PollLoop.start({
    name: 'test loop',
    log,
    intervalMs: INTERVAL_MS,
    round: async () => {
      const outcome = outcomes[rounds++] ?? 'idle';
      if (outcome === 'fail') throw new Error('store down');
      if (typeof outcome === 'function') await outcome();
      return outcome === 'more';
    },
    ...options,
  });
  return { loop, lines, rounds: () => rounds };
}

describe('PollLoop', () => {
  it('when a round leaves more work waiting, then the next one runs at once', async () => {
    const { loop, rounds } = countedLoop(['more', 'more', 'idle']);
    await waitFor('three rounds', () => rounds() === 3);
    await sleep(50);
    assert.equal(rounds(), 3, 'the third found nothing more: the loop waits the interval');
    await loop.close();
  });

  it('when woken while waiting or during a round, then the next round runs without waiting the interval', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const { loop, rounds } = countedLoop(['idle', () => held]);
    await waitFor('the first round', () => rounds() === 1);
    loop.wake();
    await waitFor('a round after the wake', () => rounds() === 2);
    loop.wake(); // while the second round runs
    release();
    await waitFor('a round after the wake during a round', () => rounds() === 3);
    await loop.close();
  });

  it('when rounds fail, then the outage is logged once, a wake does not cut the back-off short, and the recovery is logged', async () => {
    const failures: unknown[] = [];
    const { loop, lines, rounds } = countedLoop(['fail', 'fail', 'idle'], { backoff: new Backoff(300, 300), onFailed: (err) => failures.push(err) });
    await waitFor('the first round', () => rounds() === 1);
    loop.wake();
    await sleep(100);
    assert.equal(rounds(), 1, 'still backing off');
    await waitFor('the round after the outage', () => rounds() === 3);
    assert.equal(failures.length, 2);
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg]),
      [
        [40, 'test loop failed; retrying'],
        [30, 'test loop: working again'],
      ],
    );
    await loop.close();
  });

  it('when closed while waiting, then it stops at once, and closing again is harmless', async () => {
    const { loop, rounds } = countedLoop([]);
    await waitFor('the first round', () => rounds() === 1);
    const began = Date.now();
    await loop.close();
    await loop.close();
    assert.ok(Date.now() - began < INTERVAL_MS / 10, 'the interval was not waited out');
    assert.equal(rounds(), 1);
  });

  it('when closed during a round, then that round finishes and no other starts', async () => {
    let finished = false;
    const { loop, rounds } = countedLoop([
      async () => {
        await sleep(50);
        finished = true;
      },
    ]);
    await waitFor('the round to begin', () => rounds() === 1);
    await loop.close();
    assert.ok(finished, 'close waited for the round in flight');
    assert.equal(rounds(), 1);
  });
});
