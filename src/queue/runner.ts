// Runs each queue's draw at its beginAt and its closing at its endAt, in the worker processes,
// and copies each open pre-queue to the database at every look until its draw (prequeue-copy.ts).
// Every runner looks at the open queues once a POLL_MS (a small table, the index on closed_at)
// and sets a timer for what falls within LOOKAHEAD_MS, so the draw starts on time rather than on
// a tick; the voucher's lock in Redis lets one runner across processes do it, and the others find
// it done. A draw, copy or closing that fails is tried again at the next look.
import type { Logger } from 'pino';
import { RefreshSafeMutex } from '../infra/redis/mutex.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import type { QueueClosing } from './closing.js';
import type { Draw, DrawReport } from './draw.js';
import { COPY_EVERY_MS, createPrequeueCopy, type PrequeueCopy } from './prequeue-copy.js';
import type { QueueVoucher } from './queue.js';
import type { OpenQueue, QueueRepository } from './repository.js';

/** Each look copies every open pre-queue: as often as its copy is due. */
const POLL_MS = COPY_EVERY_MS;
const LOOKAHEAD_MS = 5_000;
/**
 * A draw starts this long before beginAt: it reads the entrants so far and the database's copy of
 * them, ranks them, then waits for the start (draw.ts). At 2 s, reading a copy of 100,000 from
 * PostgreSQL on a busy box sometimes overran it (by 0.4–0.9 s, in the time to the first places).
 */
const DRAW_EARLY_MS = 3_000;
/** Longer than a draw of 100,000 entrants; the lock is renewed while the draw runs. */
const LOCK_MS = 30_000;
/** How long a draw waits for the voucher's lock: longer than a step of a copy still running. */
const DRAW_LOCK_WAIT_MS = 1_000;

export interface QueueRunnerDeps {
  redis: RedisClient;
  keys: KeySpace;
  repository: QueueRepository;
  directory: VoucherDirectory;
  draw: Draw;
  closing: QueueClosing;
  log: Logger;
  onDrawn?(report: DrawReport): void;
  pollMs?: number;
}

export class QueueRunner {
  private readonly deps: QueueRunnerDeps;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<Promise<unknown>>();
  private closed = false;
  private readonly poll: NodeJS.Timeout;
  private readonly prequeue: PrequeueCopy;

  private constructor(deps: QueueRunnerDeps) {
    this.deps = deps;
    this.prequeue = createPrequeueCopy(deps);
    this.poll = setInterval(() => void this.look(), deps.pollMs ?? POLL_MS);
    this.poll.unref();
  }

  static start(deps: QueueRunnerDeps): QueueRunner {
    const runner = new QueueRunner(deps);
    void runner.look();
    return runner;
  }

  /** Sets the timers of what is due soon. Also called when a queue voucher was just created here. */
  async look(): Promise<void> {
    if (this.closed) return;
    let open: OpenQueue[];
    try {
      open = await this.deps.repository.openQueues(new Date(Date.now() + LOOKAHEAD_MS));
    } catch (err) {
      this.deps.log.warn({ err }, 'open queues not read; trying again');
      return;
    }
    const now = Date.now();
    for (const q of open) {
      const drawAt = q.beginAt.getTime() - DRAW_EARLY_MS;
      if (q.drawn) {
        if (q.endAt.getTime() <= now + LOOKAHEAD_MS) this.at(`close:${q.voucherId}`, q.endAt, q.voucherId, (v) => this.deps.closing.close(v));
        continue;
      }
      if (q.beginAt.getTime() <= now + LOOKAHEAD_MS) this.at(`draw:${q.voucherId}`, new Date(drawAt), q.voucherId, (v) => this.draw(v), DRAW_LOCK_WAIT_MS);
      // Until the draw, which copies what joined since the last copy itself.
      if (q.opensAt.getTime() <= now && now < drawAt) this.at(`copy:${q.voucherId}`, new Date(now), q.voucherId, (v) => this.copy(v, drawAt));
    }
  }

  private async draw(v: QueueVoucher) {
    const report = await this.deps.draw(v);
    if (!report) return;
    if (report.restored) this.lost(v, report.restored, 'the draw');
    this.deps.onDrawn?.(report);
  }

  private async copy(v: QueueVoucher, stopAt: number) {
    const { restored } = await this.prequeue.sync(v, stopAt);
    if (restored) this.lost(v, restored, 'the runner');
  }

  private lost(v: QueueVoucher, restored: number, by: string) {
    this.deps.log.error(
      { voucherId: v.id.toString(), restored },
      `Redis had lost ${restored} entrants of a queue's pre-queue; ${by} put them back from the database's copy. ` +
        'The joins answered after the last copy (up to about a second of them) are gone: those buyers read NOT_IN_QUEUE and can join again',
    );
  }

  /** Runs `step` at `when` under the voucher's lock, waiting up to `waitMs` for it. */
  private at(name: string, when: Date, voucherId: bigint, step: (v: QueueVoucher) => Promise<unknown>, waitMs = 0) {
    if (this.timers.has(name)) return;
    const timer = setTimeout(() => {
      const run = this.locked(voucherId, step, waitMs)
        .catch((err: unknown) => this.deps.log.warn({ err, voucherId: voucherId.toString(), step: name }, 'queue step failed; trying again'))
        .finally(() => {
          this.timers.delete(name);
          this.running.delete(run);
        });
      this.running.add(run);
    }, Math.max(0, when.getTime() - Date.now()));
    this.timers.set(name, timer);
  }

  private async locked(voucherId: bigint, step: (v: QueueVoucher) => Promise<unknown>, waitMs: number) {
    const voucher = await this.deps.directory.getStored(voucherId);
    if (!voucher?.queue) return;
    const mutex = new RefreshSafeMutex(this.deps.redis, this.deps.keys.queueLock(voucherId), {
      lockTimeout: LOCK_MS,
      ...(waitMs > 0 ? { acquireTimeout: waitMs } : { acquireAttemptsLimit: 1 }),
      onLockLost: (err) => this.deps.log.warn({ err, voucherId: voucherId.toString() }, 'queue lock lost'),
    });
    if (!(await mutex.tryAcquire())) return; // another runner has it; the next look sees what it did
    try {
      await step(voucher as QueueVoucher);
    } finally {
      await mutex.release().catch(() => undefined);
    }
  }

  /** Stops looking and lets a running draw finish. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.poll);
    for (const [name, timer] of this.timers) {
      clearTimeout(timer);
      this.timers.delete(name);
    }
    await Promise.allSettled([...this.running]);
  }
}
