// Runs each queue's draw at its beginAt and its closing at its endAt, in the worker processes.
// Every runner looks at the open queues once a POLL_MS (a small table, the index on closed_at)
// and sets a timer for what falls within LOOKAHEAD_MS, so the draw starts on time rather than on
// a tick; the voucher's lock in Redis lets one runner across processes do it, and the others find
// it done. A draw or closing that fails is tried again at the next look.
import type { Logger } from 'pino';
import { Mutex } from 'redis-semaphore';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import type { QueueClosing } from './closing.js';
import type { Draw, DrawReport } from './draw.js';
import type { QueueVoucher } from './queue.js';
import type { OpenQueue, QueueRepository } from './repository.js';

const POLL_MS = 1_000;
const LOOKAHEAD_MS = 5_000;
/** A draw starts this long before beginAt: it ranks the entrants so far, then waits for the start (draw.ts). */
const DRAW_EARLY_MS = 2_000;
/** Longer than a draw of 100,000 entrants; the lock is renewed while the draw runs. */
const LOCK_MS = 30_000;

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
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<Promise<unknown>>();
  private closed = false;
  private readonly poll: NodeJS.Timeout;

  private constructor(private readonly deps: QueueRunnerDeps) {
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
    for (const q of open) {
      if (!q.drawn) this.at(`draw:${q.voucherId}`, new Date(q.beginAt.getTime() - DRAW_EARLY_MS), q.voucherId, (v) => this.deps.draw(v).then((r) => r && this.deps.onDrawn?.(r)));
      else if (q.endAt.getTime() <= Date.now() + LOOKAHEAD_MS) this.at(`close:${q.voucherId}`, q.endAt, q.voucherId, (v) => this.deps.closing.close(v));
    }
  }

  private at(name: string, when: Date, voucherId: bigint, step: (v: QueueVoucher) => Promise<unknown>) {
    if (this.timers.has(name)) return;
    const timer = setTimeout(() => {
      const run = this.locked(voucherId, step)
        .catch((err: unknown) => this.deps.log.warn({ err, voucherId: voucherId.toString(), step: name }, 'queue step failed; trying again'))
        .finally(() => {
          this.timers.delete(name);
          this.running.delete(run);
        });
      this.running.add(run);
    }, Math.max(0, when.getTime() - Date.now()));
    this.timers.set(name, timer);
  }

  private async locked(voucherId: bigint, step: (v: QueueVoucher) => Promise<unknown>) {
    const voucher = await this.deps.directory.getStored(voucherId);
    if (!voucher?.queue) return;
    const mutex = new Mutex(this.deps.redis, this.deps.keys.queueLock(voucherId), {
      lockTimeout: LOCK_MS,
      acquireAttemptsLimit: 1,
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
