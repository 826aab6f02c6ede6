// Notices when Redis has lost its data while the service runs (a restart without persistence, a
// failover to an empty replica, a FLUSHALL), or answers from another master (a failover to a
// replica that is behind, a restart), says so, and measures Redis' latency for /readyz.
// A token (the data epoch) is written once and kept: every process remembers the one it saw, so
// each of them notices the loss at its next check, even after another process wrote a new token.
// A master is known by its replication id, which a promoted replica, a restarted server and a
// master that was a replica in between each get anew (on a cluster: every master's).
// What keeps state in Redis registers a hook to rebuild it (consumer groups, the reconcile
// schedule, the worker-id lease, the verification of voucher state): a new master may lack what
// the old one wrote last, so the hooks run after either. Voucher state is also rebuilt, or
// verified, by the first claim that meets it missing or unverified (admit-n.lua): that needs no
// check to have run first.
import { randomUUID } from 'node:crypto';
import { isCluster, type RedisClient } from './client.js';
import type { Logger } from 'pino';
import type { KeySpace } from './keys.js';

/** A reply slower than this makes Redis "degraded" in /readyz. */
const SLOW_MS = 250;
/** /readyz reports "degraded" this long after a data loss. */
const LOSS_REPORTED_MS = 60_000;

export type DependencyState = 'ok' | 'degraded' | 'down';

export interface RedisHealth {
  state: DependencyState;
  latencyMs: number | null;
  error?: string;
  /** The last time this process noticed that Redis had lost its data. */
  dataLostAt?: string;
  dataLosses: number;
}

export type DataLossHook = () => Promise<unknown> | unknown;

export interface RedisWatchDeps {
  redis: RedisClient;
  keys: KeySpace;
  log: Logger;
  intervalMs: number;
  /** Called once per loss noticed (a metric). */
  onDataLoss?(): void;
  /** Called once per master change noticed (a metric). */
  onMasterChange?(): void;
}

/** The replication id of the master the client talks to; on a cluster, every master's. */
async function masterOf(redis: RedisClient): Promise<string> {
  const replid = async (node: RedisClient) => {
    const id = /master_replid:(\w+)/.exec(await node.info('replication'))?.[1];
    if (!id) throw new Error('INFO replication has no master_replid');
    return id;
  };
  if (!isCluster(redis)) return replid(redis);
  return (await Promise.all(redis.nodes('master').map(replid))).sort().join(',');
}

type Change = 'data loss' | 'master change';

export class RedisWatch {
  private readonly deps: RedisWatchDeps;
  private epoch: string | null = null;
  private master: string | null = null;
  private readonly hooks: { name: string; run: DataLossHook }[] = [];
  private health: RedisHealth = { state: 'ok', latencyMs: null, dataLosses: 0 };
  private timer: NodeJS.Timeout | null = null;
  private checking: Promise<void> | null = null;
  private recovering = false;

  private constructor(deps: RedisWatchDeps) {
    this.deps = deps;
  }

  static async start(deps: RedisWatchDeps): Promise<RedisWatch> {
    const watch = new RedisWatch(deps);
    watch.epoch = await watch.claimEpoch();
    watch.master = await masterOf(deps.redis).catch(() => null);
    watch.timer = setInterval(() => void watch.check(), deps.intervalMs);
    watch.timer.unref();
    return watch;
  }

  /** `run` rebuilds what `name` kept in Redis; hooks run in registration order after a loss or a master change. */
  onDataLoss(name: string, run: DataLossHook): void {
    this.hooks.push({ name, run });
  }

  current(): RedisHealth {
    const h = this.health;
    const lostRecently = h.dataLostAt !== undefined && Date.now() - Date.parse(h.dataLostAt) < LOSS_REPORTED_MS;
    if (h.state === 'ok' && lostRecently) return { ...h, state: 'degraded' };
    return h;
  }

  /** One check now (the timer runs one every intervalMs); concurrent callers share it. */
  check(): Promise<void> {
    this.checking ??= this.checkOnce().finally(() => (this.checking = null));
    return this.checking;
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async claimEpoch(): Promise<string> {
    const { redis, keys } = this.deps;
    await redis.set(keys.dataEpoch(), randomUUID(), 'NX');
    return (await redis.get(keys.dataEpoch())) ?? '';
  }

  private async checkOnce(): Promise<void> {
    const started = performance.now();
    let seen: string | null;
    try {
      seen = await this.deps.redis.get(this.deps.keys.dataEpoch());
    } catch (err) {
      this.health = { ...this.health, state: 'down', latencyMs: null, error: (err as Error).message };
      return;
    }
    const latencyMs = Math.round((performance.now() - started) * 10) / 10;
    this.health = { ...this.health, state: latencyMs > SLOW_MS ? 'degraded' : 'ok', latencyMs, error: undefined };
    // Not known this time (a cluster node away, a reply lost): the next check asks again.
    const master = await masterOf(this.deps.redis).catch(() => null);
    this.master ??= master; // the first one known is where this process started
    const change: Change | null = seen !== this.epoch ? 'data loss' : master !== null && master !== this.master ? 'master change' : null;
    if (change && !this.recovering) {
      // Not awaited: a check (and /readyz, which asks for one) never waits for repair work.
      this.recovering = true;
      void this.recover(change, master).finally(() => (this.recovering = false));
    }
  }

  private async recover(change: Change, master: string | null): Promise<void> {
    const { log, onDataLoss, onMasterChange } = this.deps;
    const rebuilding = this.hooks.map((h) => h.name);
    if (change === 'data loss') {
      try {
        // First the new epoch: a loss is counted once, when it is taken note of.
        this.epoch = await this.claimEpoch();
      } catch (err) {
        log.warn({ err }, 'Redis lost its data, and the data epoch could not be written yet; the next check tries again');
        return;
      }
      this.health = { ...this.health, dataLostAt: new Date().toISOString(), dataLosses: this.health.dataLosses + 1 };
      onDataLoss?.();
      log.error(
        { rebuilding },
        'Redis lost its data (restarted without persistence, failed over to an empty replica, or flushed): orders admitted but not yet stored ' +
          'are gone; consumer groups, leases and schedules are rebuilt now, voucher state from the database at its next claim',
      );
    } else {
      onMasterChange?.();
      log.error(
        { from: this.master, to: master, rebuilding },
        'Redis answers from another master (a failover or a restart): it may lack what the old master wrote last; no voucher admits ' +
          'again before its state is verified against the database, and consumer groups, leases and schedules are rebuilt if missing',
      );
    }
    // Taken note of: the same master is not a change at the next check (a loss also moves to the master it was noticed on).
    if (master !== null) this.master = master;
    for (const hook of this.hooks) {
      try {
        await hook.run();
      } catch (err) {
        log.error({ err, hook: hook.name }, `rebuilding after a Redis ${change} failed; the component retries by itself (lanes on NOGROUP, the lease at renewal, vouchers at their next claim)`);
      }
    }
  }
}
