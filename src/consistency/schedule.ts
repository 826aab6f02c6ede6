// Scheduled reconciliation: a BullMQ job scheduler adds a job every RECONCILE_INTERVAL_MS (every
// worker process upserts the same scheduler, so there is one schedule however many run), any one
// worker takes each job, and a Redis mutex makes sure a run that outlasts the interval is never
// joined by a second one. BullMQ keys carry one hash tag ({jobs}), as Redis Cluster requires.
// BullMQ adds a scheduled job's successor when a worker takes the job, so a job taken on a master
// that then failed over, or lost its data, may have no successor on the new one (BullMQ says
// "Missing key for job repeat:reconcile:…" when finishing it there): the scheduler is upserted
// again then, and after every data loss or master change the watch notices.
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import type { RedisClient } from '../infra/redis/client.js';
import { closeConnection, dedicatedConnection, dropConnection } from '../infra/redis/connections.js';
import type { Logger } from 'pino';
import { RefreshSafeMutex } from '../infra/redis/mutex.js';
import type { Reconciler } from './reconciler.js';

const QUEUE = 'reconcile';
const CLOSE_TIMEOUT_MS = 5_000;

export interface ReconcileScheduleDeps {
  /** The shared connection; BullMQ's connections are derived from it. */
  redis: RedisClient;
  prefix: string;
  intervalMs: number;
  reconciler: Reconciler;
  log: Logger;
}

export class ReconcileSchedule {
  private readonly queue: Queue;
  private readonly worker: Worker;
  /** BullMQ's and the lock's connections, closed last. */
  private readonly connections: RedisClient[];
  /** Registers the job scheduler (idempotent): again after Redis lost it with its data. */
  readonly reschedule: () => Promise<void>;

  private constructor(queue: Queue, worker: Worker, connections: RedisClient[], reschedule: () => Promise<void>) {
    this.queue = queue;
    this.worker = worker;
    this.connections = connections;
    this.reschedule = reschedule;
  }

  static async start({ redis, prefix, intervalMs, reconciler, log }: ReconcileScheduleDeps): Promise<ReconcileSchedule> {
    const bullPrefix = `${prefix}:{jobs}`;
    const connect = (connectionName: string) => dedicatedConnection(redis, connectionName);
    const queueConn = connect('seckill-reconcile-queue');
    const workerConn = connect('seckill-reconcile-worker');
    const lockConn = connect('seckill-reconcile-lock');
    const queue = new Queue(QUEUE, { connection: queueConn, prefix: bullPrefix });
    const schedule = () =>
      queue.upsertJobScheduler(QUEUE, { every: intervalMs }, { name: 'reconcile-all', opts: { removeOnComplete: 10, removeOnFail: 50 } }).then(() => undefined);
    await schedule();

    const worker = new Worker(
      QUEUE,
      async () => {
        const mutex = new RefreshSafeMutex(lockConn, `${bullPrefix}:running`, {
          lockTimeout: 60_000,
          acquireAttemptsLimit: 1,
          onLockLost: (err) => log.warn({ err }, 'reconciliation lock lost'),
        });
        if (!(await mutex.tryAcquire())) return { skipped: 'another run is in progress' };
        try {
          const reports = await reconciler.reconcileAll();
          const repaired = reports.reduce((n, r) => n + r.repaired, 0);
          const unverified = reports.filter((r) => !r.verified).length;
          if (repaired || unverified) log.info({ vouchers: reports.length, repaired, unverified }, 'reconciliation run');
          return { vouchers: reports.length, repaired, unverified };
        } finally {
          await mutex.release().catch(() => undefined);
        }
      },
      { connection: workerConn, prefix: bullPrefix, concurrency: 1 },
    );
    const rescheduleIfLost = (err: Error) => {
      if (!/Missing key for job/.test(err.message)) return;
      schedule().then(
        () => log.warn({ err }, 'reconcile schedule lost with its job (a failover or data loss); scheduled again'),
        (again: Error) => log.warn({ err: again }, 'reconcile schedule lost, and could not be scheduled again yet; the next data loss or master change noticed tries again'),
      );
    };
    worker.on('failed', (_job, err) => {
      log.warn({ err }, 'reconciliation run failed');
      rescheduleIfLost(err);
    });
    worker.on('error', (err) => {
      log.warn({ err }, 'reconciliation worker error');
      rescheduleIfLost(err);
    });
    queue.on('error', (err) => log.warn({ err }, 'reconciliation queue error'));

    return new ReconcileSchedule(queue, worker, [queueConn, workerConn, lockConn], schedule);
  }

  /**
   * Lets a running reconciliation finish, then stops taking jobs. Idempotent. BullMQ waits for
   * Redis to close cleanly; while Redis is unreachable that would be forever, so after
   * CLOSE_TIMEOUT_MS the connections are dropped (a run in progress is retried by the next one).
   */
  async close(): Promise<void> {
    const graceful = (async () => {
      await this.worker.close();
      await this.queue.close();
    })();
    const timedOut = await Promise.race([graceful.then(() => false), sleep(CLOSE_TIMEOUT_MS, true, { ref: false })]);
    await Promise.all(this.connections.map((c) => (timedOut ? dropConnection(c) : closeConnection(c))));
  }
}
