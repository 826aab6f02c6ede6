import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import type { Reconciler } from '../../src/consistency/reconciler.js';
import { ReconcileSchedule } from '../../src/consistency/schedule.js';
import { testRedis } from '../support/helpers.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { waitFor } from '../../support/wait.js';

// BullMQ adds a scheduled job's successor when a worker takes the job. A master change while a
// reconciliation is in progress (the new master never had its job, nor the successor) leaves
// nothing scheduled: finishing the job there fails with "Missing key for job repeat:reconcile:…",
// and the schedule is made again.

describe('the reconcile schedule', () => {
  const { redis, keys } = testRedis('rec-schedule');

  it('when its keys vanish while a reconciliation is in progress, then it schedules itself again', { timeout: 30_000 }, async () => {
    let passes = 0;
    let release: () => void = () => undefined;
    const firstHeld = new Promise<void>((resolve) => (release = resolve));
    let firstStarted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (firstStarted = resolve));
    // Only the schedule is under test: a reconciler that counts its passes and holds the first one.
    const reconciler: Reconciler = {
      reconcileVoucher: async () => assert.fail('not called'),
      async reconcileAll() {
        passes += 1;
        if (passes === 1) {
          firstStarted();
          await firstHeld;
        }
        return [];
      },
    };
    const schedule = await ReconcileSchedule.start({ redis, prefix: keys.prefix, intervalMs: 200, reconciler, log: pino({ level: 'silent' }) });
    after(() => schedule.close()); // before the suite's keys are deleted

    await started;
    await deleteKeys(redis, `${keys.prefix}:{jobs}:*`); // the job, its successor, the scheduler
    release();
    await waitFor('reconciling again after the loss', () => passes >= 3, 10_000);
  });
});
