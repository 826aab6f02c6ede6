// Orders the database acknowledged and then lost. A database that fails over to a standby that had
// not received its last commits (asynchronous replication, the default of MariaDB and PostgreSQL)
// forgets orders the pipeline has acknowledged: their buyers would read 404 after a 202, and
// reconciliation would move Redis toward the loss. The shard streams keep acknowledged entries for
// RESTORE_WINDOW_SECONDS (pipeline/maintenance.ts); when another database server answers than the
// one that last did, every kept order the database does not hold, that is neither in flight nor
// failed, is admitted again as it was (restore-3.lua) and the pipeline stores it. Its units and its
// buyer's count never left Redis. The audit asks missing() on its own.
import type { Logger } from 'pino';
import type { Db } from '../infra/db/database.js';
import { dialectOf, type ServerIdentity } from '../infra/db/dialect.js';
import type { RedisClient } from '../infra/redis/client.js';
import { allShards, type KeySpace } from '../infra/redis/keys.js';
import { isMalformed, type OrderEntry, parseEntry, type RawEntry } from '../infra/redis/records.js';
import type { ReconcileScripts } from '../infra/redis/scripts/reconcile.js';
import { RefreshSafeMutex } from '../infra/redis/mutex.js';
import { inSteps, REDIS_STEP } from '../infra/redis/walk.js';
import { inChunks } from './in-chunks.js';

/** Start times this close are one start read twice (MariaDB gives its uptime in whole seconds). */
const SAME_START_MS = 2_000;

export interface LostOrders {
  /** Restores lost orders when the database server changed since the last check; the number restored. */
  check(): Promise<number>;
  /** Admits again every kept acknowledged order the database does not hold, now; the number restored. */
  restore(): Promise<number>;
  /** When another database server than the one before began answering (ISO-8601), as the last check saw it; null: never. */
  changedAt(): Promise<string | null>;
  /** Kept acknowledged orders (of one voucher and its segments' shards, or all) the database does not hold and nothing is storing. */
  missing(voucherId?: bigint, shards?: number[]): Promise<OrderEntry[]>;
}

export interface LostOrdersDeps {
  db: Db;
  redis: RedisClient;
  keys: KeySpace;
  scripts: Pick<ReconcileScripts, 'restore'>;
  log: Logger;
  onServerChange?(): void;
  onRestored?(count: number): void;
}

export function createLostOrders(deps: LostOrdersDeps): LostOrders {
  const { db, redis, keys, scripts, log } = deps;
  let checking: Promise<number> | null = null;

  const missing = async (voucherId?: bigint, shards = allShards(keys)): Promise<OrderEntry[]> => {
    const found: OrderEntry[] = [];
    for (const shard of shards) found.push(...(await missingOfShard(deps, shard, voucherId)));
    return found;
  };

  const restore = async (why: object = {}): Promise<number> => {
    const lost = await missing();
    let restored = 0;
    for (const order of lost) if (await scripts.restore(order)) restored += 1;
    if (lost.length) log.error({ ...why, lost: lost.length, restored, first: lost[0]!.orderId }, 'the database lost acknowledged orders; admitted again to be stored');
    deps.onRestored?.(restored);
    return restored;
  };

  const lastServer = async () => {
    const kept = await redis.get(keys.databaseServer());
    return kept ? (JSON.parse(kept) as ServerIdentity & { changedAt?: string }) : null;
  };

  /** Restores what the new server lacks, once across processes: the others wait, then find it recorded. */
  const afterChange = async (now: ServerIdentity): Promise<number> => {
    const mutex = new RefreshSafeMutex(redis, keys.databaseServerLock(), {
      lockTimeout: 10_000,
      acquireTimeout: 60_000,
      // Another process may restore too: restore-3.lua admits an order once however often asked.
      onLockLost: (err) => log.warn({ err }, 'lock of the restore after a database change lost'),
    });
    await mutex.acquire();
    try {
      const last = await lastServer();
      if (last && sameServer(last, now)) return 0;
      let restored = 0;
      // Nothing recorded yet: a new installation, or Redis lost its data (and the streams with it).
      if (last) {
        log.warn({ from: last, to: now }, 'another database server answers; looking for acknowledged orders it lacks');
        deps.onServerChange?.();
        restored = await restore({ from: last, to: now });
      }
      // Recorded only once restored: a process that dies on the way leaves the next one to do it.
      await redis.set(keys.databaseServer(), JSON.stringify({ ...now, ...(last ? { changedAt: new Date().toISOString() } : {}) }));
      return restored;
    } finally {
      await mutex.release().catch(() => undefined);
    }
  };

  const checkOnce = async (): Promise<number> => {
    const now = await dialectOf(db).serverIdentity(db);
    const last = await lastServer();
    return last && sameServer(last, now) ? 0 : afterChange(now);
  };

  return {
    check: () => (checking ??= checkOnce().finally(() => (checking = null))),
    restore: () => restore(),
    changedAt: async () => (await lastServer())?.changedAt ?? null,
    missing,
  };
}

const sameServer = (a: ServerIdentity, b: ServerIdentity) => a.server === b.server && Math.abs(a.startedMs - b.startedMs) <= SAME_START_MS;

/** A shard's kept entries whose orders are not in flight, not failed and not in the database. */
async function missingOfShard({ db, redis, keys }: LostOrdersDeps, shard: number, voucherId?: bigint): Promise<OrderEntry[]> {
  const entries: OrderEntry[] = [];
  for await (const raw of streamEntries(redis, keys.orders(shard))) {
    const entry = parseEntry(shard, raw, 0);
    if (!isMalformed(entry) && (voucherId === undefined || entry.voucherId === voucherId)) entries.push(entry);
  }
  if (!entries.length) return [];
  // In flight first, the database after: an order acknowledged after this read is in the database by then.
  const settled: OrderEntry[] = [];
  for (const step of inSteps(entries)) {
    const records = await redis.hmget(keys.inflight(shard), ...step.map((e) => e.orderId));
    step.forEach((e, i) => records[i] === null && settled.push(e));
  }
  const failed = await deadLetterOrders(redis, keys.deadLetters(shard), entries[0]!.streamId);
  const candidates = settled.filter((e) => !failed.has(e.orderId));
  const stored = new Set<string>();
  for (const chunk of inChunks(candidates.map((e) => e.orderId))) {
    for (const row of await db.selectFrom('orders').select('id').where('id', 'in', chunk).execute()) stored.add(row.id);
  }
  // An order admitted again has a second entry: one restore each.
  const seen = new Set<string>();
  return candidates.filter((e) => !stored.has(e.orderId) && !seen.has(e.orderId) && seen.add(e.orderId));
}

/** Every entry of a stream, REDIS_STEP per command. */
async function* streamEntries(redis: RedisClient, stream: string, from = '-'): AsyncGenerator<RawEntry> {
  for (;;) {
    const step = (await redis.xrange(stream, from, '+', 'COUNT', REDIS_STEP)) as RawEntry[];
    yield* step;
    if (step.length < REDIS_STEP) return;
    from = `(${step[step.length - 1]![0]}`;
  }
}

/** Orders copied to the dead-letter stream since `since` (settle-n.lua: fields entry, reason, d). */
async function deadLetterOrders(redis: RedisClient, stream: string, since: string): Promise<Set<string>> {
  const orders = new Set<string>();
  for await (const [, fields] of streamEntries(redis, stream, since)) {
    const at = fields.indexOf('d');
    if (at >= 0 && fields[at + 1]) orders.add(fields[at + 1]!.split('|')[0]!);
  }
  return orders;
}
