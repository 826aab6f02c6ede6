// Leases a Snowflake worker id from Redis so that no two running instances share one, and
// refuses to issue ids once the lease can no longer be trusted (renewal failed past its TTL or
// another owner took the id). The lease also records the last timestamp issued under the id, so a
// successor on the same id starts after it even if its clock is behind.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { AppError } from '../errors.js';
import { LEASE_HELD_ELSEWHERE, type WorkerIdScripts } from '../infra/redis/scripts/worker-ids.js';
import { MAX_WORKER_ID, Snowflake } from './snowflake.js';

export interface IdGenerator {
  next(): bigint;
}

export interface LeasedIdGeneratorDeps {
  scripts: WorkerIdScripts;
  ttlMs: number;
  log?: Logger;
  /** Wall clock for the ids (tests move it backwards). Lease validity uses the monotonic clock. */
  now?: () => number;
  /** Called once per backwards jump of the wall clock (a metric), besides the log line. */
  onClockBackwards?: (driftMs: number) => void;
}

export class LeasedIdGenerator implements IdGenerator {
  private readonly deps: LeasedIdGeneratorDeps;
  private readonly owner = randomUUID();
  private generator: Snowflake | null = null;
  private validUntil = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  private constructor(deps: LeasedIdGeneratorDeps) {
    this.deps = deps;
  }

  static async start(deps: LeasedIdGeneratorDeps): Promise<LeasedIdGenerator> {
    const leased = new LeasedIdGenerator(deps);
    await leased.acquire();
    leased.timer = setInterval(() => void leased.renew(), Math.floor(deps.ttlMs / 3));
    leased.timer.unref();
    return leased;
  }

  get workerId(): number | null {
    return this.generator?.workerId ?? null;
  }

  next(): bigint {
    if (!this.generator || performance.now() >= this.validUntil) {
      throw new AppError('UNAVAILABLE', 'order id generator has no valid worker lease; retry shortly');
    }
    return this.generator.next();
  }

  private async acquire(): Promise<void> {
    const start = Math.floor(Math.random() * (MAX_WORKER_ID + 1));
    for (let i = 0; i <= MAX_WORKER_ID; i++) {
      const workerId = (start + i) % (MAX_WORKER_ID + 1);
      const requestedAt = performance.now();
      const highWater = await this.deps.scripts.lease(workerId, this.owner, this.deps.ttlMs, 0);
      if (highWater === LEASE_HELD_ELSEWHERE) continue;
      this.generator = new Snowflake(workerId, {
        now: this.deps.now,
        startAfterMs: highWater,
        onClockBackwards: (drift) => {
          this.deps.log?.warn({ workerId, driftMs: drift }, 'clock moved backwards; ids continue from the last timestamp');
          this.deps.onClockBackwards?.(drift);
        },
      });
      this.validUntil = requestedAt + this.deps.ttlMs;
      this.deps.log?.info({ workerId }, 'leased id-generator worker id');
      return;
    }
    throw new Error(`all ${MAX_WORKER_ID + 1} id-generator worker ids are leased`);
  }

  /** Renews the lease (now: after Redis lost it with its data); on loss, takes a fresh worker id. Errors leave the old lease to expire. */
  async renew(): Promise<void> {
    if (this.closed || !this.generator) return;
    const requestedAt = performance.now();
    try {
      const result = await this.deps.scripts.lease(
        this.generator.workerId,
        this.owner,
        this.deps.ttlMs,
        this.generator.lastTimestampMs,
      );
      if (result !== LEASE_HELD_ELSEWHERE) {
        this.validUntil = requestedAt + this.deps.ttlMs;
        return;
      }
      this.deps.log?.error({ workerId: this.generator.workerId }, 'worker lease taken by another owner; leasing a new id');
      this.generator = null;
      await this.acquire();
    } catch (err) {
      this.deps.log?.warn({ err }, 'worker lease renewal failed; will retry');
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.generator) {
      await this.deps.scripts.endLease(this.generator.workerId, this.owner, this.generator.lastTimestampMs).catch(() => {});
    }
  }
}
