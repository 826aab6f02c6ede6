// The API's role on top of the core: tokens, claims, order actions and the routes' dependencies.
// It needs an id generator up front (claims and vouchers get ids synchronously), and checks that
// Redis can keep the promise ADMIT_DURABILITY makes (claims/durability.ts).
import type { AppDeps } from '../app.js';
import { createGuards } from '../auth/guards.js';
import { createIdentity } from '../auth/identity.js';
import { createTokenService, type TokenService } from '../auth/tokens.js';
import { batchAdmissions } from '../claims/admission-batch.js';
import { isCluster } from '../infra/redis/client.js';
import { createClaimTokens, type ClaimTokens } from '../claims/claim-tokens.js';
import { claimersByKind } from '../claims/claimers.js';
import { claimRateLimits, rateLimitedSqlClaims } from '../claims/rate-limits.js';
import { claimSeckillUseCase } from '../claims/seckill-claimer.js';
import { createSoldOutCache } from '../claims/sold-out-cache.js';
import { soldOutGate } from '../claims/sold-out-gate.js';
import { claimInSqlUseCase } from '../claims/sql-claimer.js';
import { voucherStatsUseCase } from '../console/stats.js';
import type { IdGenerator } from '../ids/worker-lease.js';
import { cancelOrderUseCase, payOrderUseCase } from '../lifecycle/order-actions.js';
import { getOrderUseCase } from '../orders/get-order.js';
import { confirmPaymentUseCase } from '../payments/confirm-payment.js';
import { listPaymentsUseCase } from '../payments/list-payments.js';
import { type ConfirmPayment, type RefundOrder, SYSTEM } from '../payments/payment.js';
import { refundOrderUseCase } from '../payments/refund-order.js';
import { stripeDeliveries } from '../payments/stripe-deliveries.js';
import { settleStripeEventUseCase } from '../payments/stripe-settle.js';
import { AppError } from '../errors.js';
import { listOrdersUseCase } from '../orders/list-orders.js';
import { createOrderRepository } from '../orders/repository.js';
import { httpLimits } from '../protection/http-limits.js';
import { trafficGuards } from '../protection/traffic-guards.js';
import { readinessCheck } from '../readiness.js';
import { createVoucherUseCase } from '../vouchers/create-voucher.js';
import { createStreamSlots } from '../sse.js';
import { segmentPlacer } from '../vouchers/segments.js';
import { lastReconciliation } from '../consistency/reconciler.js';
import { waitlistPositionUseCase } from '../waitlist/position.js';
import type { Core } from './core.js';
import { requestSampling } from '../tracing/tracing.js';

export interface Api {
  tokens: TokenService;
  claimTokens: ClaimTokens;
  appDeps: AppDeps;
  /** The payment use cases, for the provider webhooks' routes. */
  confirmPayment: ConfirmPayment;
  refundOrder: RefundOrder;
}

export async function createApi(core: Core, ids: IdGenerator): Promise<Api> {
  const { config, log, db, redis, keys, scripts, metrics, unitsBack, pubsub, eventOutbox, inflight, vouchers, directory, redisState, moves, releases, reconciler, verifier } = core;
  const tokens = createTokenService(config.jwtSecret, { maxTtlSeconds: config.jwtMaxTtlSeconds });
  // The shop's JWKS is fetched here, before the first request; a failure is logged, not fatal.
  const identity = createIdentity({ tokens, log, config });
  core.closer.add('identity provider keys', () => identity.close());
  await identity.ready;
  const claimTokens = createClaimTokens(config.jwtSecret);
  const limits = claimRateLimits(config);
  const soldOut = createSoldOutCache({ ttlMs: config.soldOutCacheMs, redis, keys, unitsBack, log });
  const orders = createOrderRepository(db);
  const getOrder = getOrderUseCase({ orders, inflight, directory });
  const onPaid = (order: { voucherId: string }) => core.queueClosing.afterPaid(BigInt(order.voucherId));
  const confirmPayment = confirmPaymentUseCase({ db, orders, inflight, releases, pubsub, eventOutbox, onPaid, countPayment: (outcome) => metrics.payments.inc({ outcome }) });
  const findOrder = (id: bigint) => getOrder(SYSTEM, id).catch((err: unknown) => (err instanceof AppError && err.code === 'ORDER_NOT_FOUND' ? null : Promise.reject(err)));
  const refundOrder = refundOrderUseCase({ db, findOrder, releaseRelay: core.releaseRelay, pubsub, log, eventOutbox });
  // One count of open event streams for every feed of this process.
  const streamSlots = createStreamSlots({ perUser: config.sseMaxPerUser, total: config.sseMaxStreams });
  metrics.watchOpenStreams(() => streamSlots.inUse());
  const admitGroups = await core.admitGroups();

  const appDeps: AppDeps = {
    logger: log,
    guards: createGuards(identity),
    metrics: metrics.registry,
    countError: metrics.countError,
    httpLimits: httpLimits(config),
    corsOrigins: config.corsOrigins,
    requestSampling: requestSampling(config),
    trafficGuards: trafficGuards(config),
    readiness: readinessCheck({ redisWatch: core.redisWatch, db, databaseChangedAt: () => core.lostOrders.changedAt() }),
    vouchers: {
      directory,
      redisState,
      vouchers,
      createVoucher: createVoucherUseCase({ ids, vouchers, redisState, directory, placeSegments: segmentPlacer(redis, keys), shards: keys.shards, defaultCurrency: config.defaultCurrency }),
    },
    claims: {
      directory,
      claimTokens,
      soldOutGate: soldOutGate(soldOut, () => metrics.countClaim('sold_out_cached')),
      observe: metrics.observeClaim,
      claimers: claimersByKind({
        redisGated: claimSeckillUseCase({ ids, admit: batchAdmissions({ admitGroups, keys, limits, callPerShard: isCluster(redis) }), redisState, soldOut, keys, moves, verifier, onOutcome: metrics.countClaim }),
        inSql: rateLimitedSqlClaims(scripts, limits, claimInSqlUseCase({ db, redis, keys, ids, pubsub, eventOutbox, lockTtlMs: config.claimLockTtlMs, onGroup: (n) => metrics.sqlClaimGroups.observe(n) })),
      }),
    },
    claimTokens: { claimTokens, ttlMs: config.claimTokenTtlMs },
    orders: {
      getOrder,
      listOrders: listOrdersUseCase({ orders }),
      pubsub,
      streamSlots,
    },
    lifecycle: {
      payOrder: config.paymentMode === 'external' ? refusePayment : payOrderUseCase({ db, getOrder, releases, pubsub, eventOutbox, onPaid }),
      cancelOrder: cancelOrderUseCase({ getOrder, releases }),
    },
    payments: { confirmPayment, refundOrder, listPayments: listPaymentsUseCase(db) },
    pages: { paymentMode: config.paymentMode },
    stripeWebhook: {
      secret: config.stripeWebhookSecret,
      settle: settleStripeEventUseCase({ deliveries: stripeDeliveries(db), confirmPayment, refundOrder, findOrder }),
      count: metrics.countStripeEvent,
    },
    waitlist: { waitlistPosition: waitlistPositionUseCase({ redis, keys, directory }) },
    queue: { queue: core.queue, repository: core.queueRepository },
    consistency: {
      voucherStats: voucherStatsUseCase({ db, redis, keys, directory }),
      reconcileVoucher: (id, options) => reconciler.reconcileVoucher(id, options),
      auditVoucher: (id, admitted) => core.audit(id, { admitted }),
      lastReconciliation: (id) => lastReconciliation(redis, keys, id),
      streamSlots,
    },
  };
  return { tokens, claimTokens, appDeps, confirmPayment, refundOrder };
}

/** PAYMENT_MODE=external: a buyer cannot mark an order paid, the shop confirms it. */
async function refusePayment(): Promise<never> {
  throw new AppError('FORBIDDEN', 'PAYMENT_MODE is external: payments are confirmed by the shop (POST /api/orders/:id/payments)');
}
