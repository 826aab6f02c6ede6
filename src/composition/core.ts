// The core every role builds first: configuration, the two stores, the key space and scripts, and
// the services that only read or repair (vouchers, in-flight orders, releases, reconciliation).
// It takes no worker-id lease until something needs an id (ids()), so `seckill audit` and
// `seckill reconcile` run beside live instances without taking one of theirs.
import type { RedisClient } from '../infra/redis/client.js';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { auditVoucher, type AuditOptions, type VoucherAudit } from '../consistency/audit.js';
import { durableAdmitGroups } from '../claims/durability.js';
import type { AdmitGroups } from '../infra/redis/scripts/admission.js';
import { createLostOrders, type LostOrders } from '../consistency/lost-orders.js';
import { createReconciler, type Reconciler } from '../consistency/reconciler.js';
import { createVoucherVerifier } from '../consistency/verification.js';
import { type IdGenerator, LeasedIdGenerator } from '../ids/worker-lease.js';
import { createDb, type Db, migrateDatabase } from '../infra/db/database.js';
import { closeConnection, createRedis, REDIS_START_TIMEOUT_MS, redisReady } from '../infra/redis/connections.js';
import { createKeySpace, type KeySpace } from '../infra/redis/keys.js';
import { RedisWatch } from '../infra/redis/redis-watch.js';
import { createScripts, type Scripts } from '../infra/redis/scripts/index.js';
import { createReleaseRelay, type ReleaseRelay } from '../lifecycle/release-relay.js';
import { createReleases, type Releases } from '../lifecycle/releases.js';
import { createMetrics, type Metrics } from '../metrics.js';
import { createOrderPubSub, type OrderPubSub } from '../orders/order-pubsub.js';
import { createEventOutbox, type EventOutbox } from '../orders/event-outbox.js';
import { createInflightReader, type InflightReader } from '../orders/inflight.js';
import { announcingUnitsBack, createUnitsBack, type UnitsBack } from '../claims/units-back-broadcast.js';
import { createVoucherDirectory, type VoucherDirectory } from '../vouchers/directory.js';
import { createVoucherRedisState, type VoucherRedisState } from '../vouchers/redis-state.js';
import { createVoucherRepository, type VoucherRepository } from '../vouchers/repository.js';
import { createSegmentMoves, type SegmentMoves } from '../vouchers/segment-moves.js';
import type { VoucherVerifier } from '../vouchers/verifier.js';
import { createQueueClosing, type QueueClosing } from '../queue/closing.js';
import { createQueue, type Queue } from '../queue/queue.js';
import { createQueueRepository, type QueueRepository } from '../queue/repository.js';
import { Closer } from './closer.js';

export interface Core {
  config: Config;
  log: Logger;
  redis: RedisClient;
  db: Db;
  keys: KeySpace;
  scripts: Scripts;
  /** Notices Redis data loss (hooks rebuild what was lost) and measures Redis for /readyz. */
  redisWatch: RedisWatch;
  metrics: Metrics;
  /** Announces vouchers whose units came back to Redis (clears sold-out flags in every API process). */
  unitsBack: UnitsBack;
  /** Order events on Redis pub/sub, for server-sent events (at most once). */
  pubsub: OrderPubSub;
  /** Order events for RabbitMQ and webhooks, written with each change (off without EVENTS_AMQP_URL and WEBHOOK_URL). */
  eventOutbox: EventOutbox;
  inflight: InflightReader;
  vouchers: VoucherRepository;
  directory: VoucherDirectory;
  redisState: VoucherRedisState;
  /** Units moving between the segments of a voucher (borrowing, waitlist hand-off, recovery). */
  moves: SegmentMoves;
  releaseRelay: ReleaseRelay;
  releases: Releases;
  /** Queue vouchers' queues: joins, places, promotions (queue/). */
  queue: Queue;
  queueRepository: QueueRepository;
  queueClosing: QueueClosing;
  reconciler: Reconciler;
  /** Acknowledged orders a failed-over database lost, stored again (checked before every comparison). */
  lostOrders: LostOrders;
  /** Verifies voucher state against the database after a Redis master change (admissions wait for it). */
  verifier: VoucherVerifier;
  /** This process's id generator, leased on the first call. */
  ids(): Promise<IdGenerator>;
  /**
   * The admit call that keeps ADMIT_DURABILITY's promise, for claims and the queue's draw alike:
   * checked and connected on the first call, once per process.
   */
  admitGroups(): Promise<AdmitGroups>;
  audit(voucherId: bigint, options?: AuditOptions): Promise<VoucherAudit | null>;
  /** Cleanup steps of everything built on the core; run by close(), last added first. */
  closer: Closer;
  close(): Promise<void>;
}

export interface CoreOptions {
  /** Run pending migrations first (serve does by default). */
  migrate?: boolean;
}

/** What the services of the core are built on. */
type Foundation = Pick<Core, 'config' | 'log' | 'db' | 'redis' | 'closer' | 'keys' | 'unitsBack' | 'scripts' | 'metrics' | 'redisWatch' | 'pubsub' | 'ids'>;

async function migrateFirst(config: Config, log: Logger): Promise<void> {
  const applied = await migrateDatabase(config.databaseUrl);
  if (applied.length) log.info({ applied }, 'migrations applied');
}

/** The key space, the scripts and what watches and announces on Redis. */
async function redisServices({ config, log, redis, closer }: Pick<Core, 'config' | 'log' | 'redis' | 'closer'>) {
  const keys = createKeySpace(config.redisPrefix, config.shards);
  const unitsBack = createUnitsBack({ redis, keys, log });
  closer.add('units-back subscriber', () => unitsBack.close());
  // Whatever gives units back through these scripts announces it.
  const scripts = announcingUnitsBack(createScripts(redis, keys), unitsBack);
  const metrics = createMetrics();
  const redisWatch = await RedisWatch.start({
    redis, keys, log,
    intervalMs: config.redisCheckIntervalMs,
    onDataLoss: () => metrics.redisDataLosses.inc(),
    onMasterChange: () => metrics.redisMasterChanges.inc(),
  });
  closer.add('redis watch', () => redisWatch.close());
  const pubsub = createOrderPubSub({ redis, keys, scripts, log });
  closer.add('order pub/sub', () => pubsub.close());
  return { keys, unitsBack, scripts, metrics, redisWatch, pubsub };
}

/**
 * `make` run on the first call, its result shared by every later one; a failure (Redis away for a
 * moment) is not kept: the next call tries again.
 */
function onFirstUse<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | null = null;
  return () =>
    (made ??= make().catch((err: unknown) => {
      made = null;
      throw err;
    }));
}

/** This process's id generator, leased on the first call and renewed at once after a data loss. */
function leasedIds({ config, log, closer, scripts, metrics, redisWatch }: Omit<Foundation, 'ids'>): Core['ids'] {
  return onFirstUse(async () => {
    const generator = await LeasedIdGenerator.start({ scripts, ttlMs: config.workerLeaseTtlMs, log, onClockBackwards: () => metrics.clockBackwards.inc() });
    closer.add('worker-id lease', () => generator.close());
    // Renew at once: until then a process starting now could lease the same worker id.
    redisWatch.onDataLoss('worker-id lease', () => generator.renew());
    return generator;
  });
}

/** Vouchers, in-flight orders, the event outbox and the queues. */
function storeServices({ config, db, redis, keys, scripts, metrics, pubsub, ids, log }: Foundation) {
  const vouchers = createVoucherRepository(db);
  const inflight = createInflightReader(redis, keys);
  const directory = createVoucherDirectory(vouchers);
  const redisState = createVoucherRedisState({ redis, keys, scripts, vouchers, inflight, waitlistMax: config.waitlistMax });
  const moves = createSegmentMoves({ redis, keys, scripts, ids });
  const eventOutbox = createEventOutbox({ amqp: config.eventsAmqpUrl !== '', webhooks: config.webhookUrl !== '' });
  const queueRepository = createQueueRepository(db);
  const queue = createQueue({
    redis, keys, scripts, directory, redisState, pubsub, ids,
    onJoin: () => metrics.queueJoins.inc(),
    onAdmitted: (n) => metrics.queueAdmissions.inc({ by: 'promoted' }, n),
  });
  const queueClosing = createQueueClosing({ redis, keys, repository: queueRepository, directory, pubsub, log });
  return { vouchers, inflight, directory, redisState, moves, eventOutbox, queueRepository, queue, queueClosing };
}

type Stores = ReturnType<typeof storeServices>;

/** What gives units back and repairs Redis from the database: releases, reconciliation, verification. */
function repairServices(base: Foundation & Stores) {
  const { config, log, db, redis, keys, scripts, metrics, unitsBack, pubsub, redisWatch, ids, directory, redisState, moves, eventOutbox, queue } = base;
  const releaseRelay = createReleaseRelay({
    db, redis, keys, scripts, ids, directory, redisState, moves, pubsub,
    onQueuePromotions: async (voucher, promotions) => {
      metrics.queueAdmissions.inc({ by: 'promoted' }, promotions.length);
      await queue.announceAdmitted(voucher, promotions);
    },
  });
  const releases = createReleases({
    db, releaseRelay, pubsub, log, eventOutbox,
    expiredLate: (late) => late.forEach((seconds) => metrics.expiryLateness.observe(seconds)),
  });
  const lostOrders = createLostOrders({
    db, redis, keys, scripts, log,
    onServerChange: () => metrics.databaseServerChanges.inc(),
    onRestored: (n) => metrics.ordersRestored.inc(n),
  });
  const reconciler = createReconciler({
    db, redis, keys, scripts, directory, redisState, moves, releaseRelay, releases, log,
    beforeComparing: () => lostOrders.check(),
    staleMoveMs: 3 * config.redisCommandTimeoutMs + 1_000,
    onRepair: (kind) => metrics.repairs.inc({ kind }),
    onUnitsBack: (voucherId) => unitsBack.announce(voucherId),
  });
  const verifier = createVoucherVerifier({ db, redis, keys, scripts, reconciler, directory, log, onVerified: (voucher) => releaseRelay.promoteWaiting(voucher) });
  // Claims verify their own voucher when they meet it unverified; this spares most of them the wait.
  redisWatch.onDataLoss('voucher verification', () => verifier.verifyLive());
  return { releaseRelay, releases, lostOrders, reconciler, verifier };
}

export async function createCore(config: Config, log: Logger, options: CoreOptions = {}): Promise<Core> {
  if (options.migrate) await migrateFirst(config, log);
  const closer = new Closer(log);
  const db = createDb(config.databaseUrl, 10, { statementTimeoutMs: config.dbStatementTimeoutMs });
  closer.add('database', () => db.destroy());
  const redis = createRedis(config, log);
  closer.add('redis', () => closeConnection(redis));
  try {
    await redisReady(redis, REDIS_START_TIMEOUT_MS);
    const built = { config, log, db, redis, closer, ...(await redisServices({ config, log, redis, closer })) };
    const foundation = { ...built, ids: leasedIds(built) };
    const stores = storeServices(foundation);
    const repairs = repairServices({ ...foundation, ...stores });
    const auditDeps = { db, redis, keys: foundation.keys, inflight: stores.inflight, scripts: foundation.scripts, lostOrders: repairs.lostOrders };
    return {
      ...foundation,
      ...stores,
      ...repairs,
      admitGroups: onFirstUse(() => durableAdmitGroups({ config, redis, keys: foundation.keys, scripts: foundation.scripts, log, onClose: (name, close) => closer.add(name, close) })),
      audit: (voucherId, auditOptions) => auditVoucher(auditDeps, voucherId, auditOptions),
      close: () => closer.close(),
    };
  } catch (err) {
    await closer.close().catch(() => undefined);
    throw err;
  }
}
