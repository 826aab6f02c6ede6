// Composition: builds every client and service once, from the configuration. main.ts and the
// tests both start here, so the wiring exists in one place only.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { hostname } from 'node:os';
import { sql } from 'kysely';
import type { AppDeps } from './app.js';
import { createGuards } from './auth/guards.js';
import { createTokenService, type TokenService } from './auth/tokens.js';
import type { Config } from './config.js';
import { LeasedIdGenerator } from './ids/worker-lease.js';
import { createDb, type Db, ensureDatabase, migrateToLatest } from './infra/db/database.js';
import { createRedis } from './infra/redis/client.js';
import { createKeySpace, type KeySpace } from './infra/redis/keys.js';
import { createScripts, type Scripts } from './infra/redis/scripts/index.js';
import { ExpiryWorker } from './lifecycle/expiry-worker.js';
import { cancelOrderUseCase, payOrderUseCase } from './lifecycle/order-actions.js';
import { createReleaseRelay, type ReleaseRelay } from './lifecycle/outbox-relay.js';
import { createReleases, type Releases } from './lifecycle/releases.js';
import { auditVoucher } from './consistency/audit.js';
import { createMetrics, type Metrics } from './metrics.js';
import { createClaimTokens, type ClaimTokens } from './claims/claim-tokens.js';
import { httpLimits } from './protection/http-limits.js';
import { claimRateLimits, rateLimitedSqlClaims } from './claims/rate-limits.js';
import { createSoldOutCache } from './claims/sold-out-cache.js';
import { soldOutGate } from './claims/sold-out-gate.js';
import { trafficGuards } from './protection/traffic-guards.js';
import { announcingUnitsBack, createUnitsBack, type UnitsBack } from './protection/units-back.js';
import { createReconciler, type Reconciler } from './consistency/reconciler.js';
import { ReconcileSchedule } from './consistency/schedule.js';
import { voucherStatsUseCase } from './consistency/stats.js';
import { createOrderEvents, type OrderEvents } from './orders/events.js';
import { getOrderUseCase } from './orders/get-order.js';
import { listOrdersUseCase } from './orders/list-orders.js';
import { createOrderRepository } from './orders/repository.js';
import { batchAdmissions } from './claims/admission-batch.js';
import { claimersByKind } from './claims/claimers.js';
import { claimSeckillUseCase } from './claims/seckill-claimer.js';
import { createInflightReader, type InflightReader } from './orders/inflight.js';
import { OrderPipeline } from './pipeline/consumer.js';
import { claimInSqlUseCase } from './claims/sql-claimer.js';
import { createVoucherUseCase } from './vouchers/create-voucher.js';
import { createVoucherDirectory } from './vouchers/directory.js';
import { createVoucherRedisState } from './vouchers/redis-state.js';
import { createVoucherRepository } from './vouchers/repository.js';
import { waitlistPositionUseCase } from './waitlist/position.js';

export interface Container {
  config: Config;
  log: Logger;
  redis: Redis;
  db: Db;
  keys: KeySpace;
  scripts: Scripts;
  tokens: TokenService;
  claimTokens: ClaimTokens;
  /** Announces vouchers whose units came back to Redis (clears sold-out flags in every API process). */
  unitsBack: UnitsBack;
  inflight: InflightReader;
  metrics: Metrics;
  events: OrderEvents;
  relay: ReleaseRelay;
  releases: Releases;
  reconciler: Reconciler;
  appDeps: AppDeps;
  /** Starts the stream consumers in this process; close() stops them first. */
  startPipeline(): Promise<OrderPipeline>;
  /** Starts the payment timer (expiry sweeps and the release relay) in this process. */
  startExpiry(): ExpiryWorker;
  /** Starts scheduled reconciliation (RECONCILE_INTERVAL_MS; one runner across processes). */
  startReconcile(): Promise<ReconcileSchedule | null>;
  /** Everything a worker runs: the pipeline, the payment timer and scheduled reconciliation. */
  startWorkers(): Promise<void>;
  close(): Promise<void>;
}

export interface ContainerOptions {
  /** Run pending migrations first (serve does by default). */
  migrate?: boolean;
}

export async function createContainer(config: Config, log: Logger, options: ContainerOptions = {}): Promise<Container> {
  if (options.migrate) {
    await ensureDatabase(config.databaseUrl);
  }
  const db = createDb(config.databaseUrl);
  const redis = createRedis(config.redisUrl, { connectionName: 'seckill' });
  try {
    if (options.migrate) {
      const applied = await migrateToLatest(db);
      if (applied.length) log.info({ applied }, 'migrations applied');
    }
    const keys = createKeySpace(config.redisPrefix, config.shards);
    const unitsBack = createUnitsBack({ redis, keys, log });
    // Whatever gives units back through these scripts announces it.
    const scripts = announcingUnitsBack(createScripts(redis, keys), unitsBack);
    const ids = await LeasedIdGenerator.start({ scripts, ttlMs: config.workerLeaseTtlMs, log });
    const tokens = createTokenService(config.jwtSecret);
    const claimTokens = createClaimTokens(config.jwtSecret);
    const metrics = createMetrics();
    const limits = claimRateLimits(config);
    const soldOut = createSoldOutCache({ ttlMs: config.soldOutCacheMs, scripts, unitsBack, log });
    const vouchers = createVoucherRepository(db);
    const inflight = createInflightReader(redis, keys);
    const directory = createVoucherDirectory(vouchers);
    const redisState = createVoucherRedisState({ redis, keys, scripts, vouchers, inflight, waitlistMax: config.waitlistMax });
    const events = createOrderEvents({ redis, keys, log });
    const orders = createOrderRepository(db);
    const relay = createReleaseRelay({ db, scripts, ids, directory, redisState, events });
    const releases = createReleases({ db, relay, events, log });
    const getOrder = getOrderUseCase({ orders, inflight });
    const reconciler = createReconciler({
      db, redis, keys, scripts, directory, redisState, relay, releases, log,
      onRepair: (kind) => metrics.repairs.inc({ kind }),
      onUnitsBack: (voucherId) => unitsBack.announce(voucherId),
    });

    const appDeps: AppDeps = {
      logger: log,
      guards: createGuards(tokens),
      metrics: metrics.registry,
      countError: metrics.countError,
      httpLimits: httpLimits(config),
      trafficGuards: trafficGuards(config),
      async checkReady() {
        await redis.ping();
        await sql`select 1`.execute(db);
      },
      vouchers: {
        directory,
        redisState,
        vouchers,
        createVoucher: createVoucherUseCase({ ids, vouchers, redisState, directory }),
      },
      claims: {
        directory,
        claimTokens,
        soldOutGate: soldOutGate(soldOut, () => metrics.countClaim('sold_out_cached')),
        claimers: claimersByKind({
          redisGated: claimSeckillUseCase({ ids, admit: batchAdmissions(scripts, limits), redisState, soldOut, onOutcome: metrics.countClaim }),
          inSql: rateLimitedSqlClaims(scripts, limits, claimInSqlUseCase({ db, redis, keys, ids, events, lockTtlMs: config.claimLockTtlMs })),
        }),
      },
      claimTokens: { claimTokens, ttlMs: config.claimTokenTtlMs },
      orders: {
        getOrder,
        listOrders: listOrdersUseCase({ orders }),
        events,
      },
      lifecycle: {
        payOrder: payOrderUseCase({ db, getOrder, releases, events }),
        cancelOrder: cancelOrderUseCase({ getOrder, releases }),
      },
      waitlist: { waitlistPosition: waitlistPositionUseCase({ redis, keys, directory }) },
      consistency: {
        voucherStats: voucherStatsUseCase({ db, redis, keys }),
        reconcileVoucher: (id) => reconciler.reconcileVoucher(id),
        auditVoucher: (id, admitted) => auditVoucher({ db, redis, keys, inflight, scripts }, id, { admitted }),
      },
    };

    let pipeline: OrderPipeline | null = null;
    let expiry: ExpiryWorker | null = null;
    const startExpiry = () =>
      (expiry ??= ExpiryWorker.start({
        releases,
        relay,
        log,
        pollMs: config.expiryPollMs,
        batch: config.expiryBatch,
        onExpired: (n) => metrics.expired.inc(n),
      }));
    const startPipeline = async () => {
      pipeline ??= await OrderPipeline.start({
        redisUrl: config.redisUrl,
        redis,
        db,
        keys,
        scripts,
        log,
        options: {
          consumer: config.consumerName || `${hostname()}:${process.pid}`,
          lanes: config.pipelineLanes,
          batchSize: config.pipelineBatch,
          blockMs: config.pipelineBlockMs,
          claimIdleMs: config.claimIdleMs,
          maxDeliveries: config.maxDeliveries,
        },
        events: {
          stored: (n) => metrics.stored.inc(n),
          failed: (reason) => metrics.failed.inc({ reason }),
          retried: () => metrics.retries.inc(),
          announce: events,
        },
      });
      return pipeline;
    };

    let schedule: Promise<ReconcileSchedule> | null = null;
    const startReconcile = async () => {
      if (config.reconcileIntervalMs === 0) return null;
      schedule ??= ReconcileSchedule.start({
        redisUrl: config.redisUrl,
        prefix: config.redisPrefix,
        intervalMs: config.reconcileIntervalMs,
        reconciler,
        log,
      });
      return schedule;
    };
    let closed = false;
    return {
      config,
      log,
      redis,
      db,
      keys,
      scripts,
      tokens,
      claimTokens,
      unitsBack,
      inflight,
      metrics,
      events,
      relay,
      releases,
      reconciler,
      appDeps,
      startPipeline,
      startExpiry,
      startReconcile,
      async startWorkers() {
        await startPipeline();
        startExpiry();
        await startReconcile();
      },
      async close() {
        if (closed) return;
        closed = true;
        await (await schedule)?.close();
        await expiry?.close();
        await pipeline?.close();
        await events.close();
        await unitsBack.close();
        await ids.close();
        await redis.quit().catch(() => redis.disconnect());
        await db.destroy();
      },
    };
  } catch (err) {
    redis.disconnect();
    await db.destroy();
    throw err;
  }
}
