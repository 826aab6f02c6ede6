import { Type } from 'typebox';
import type { Guards } from '../auth/guards.js';
import { ANSWER, apiErrorAnswers, type App, IdParams } from '../http.js';
import { AppError } from '../errors.js';
import type { VoucherAudit } from './audit.js';
import type { ReconcileOptions, ReconcileReport } from './reconciler.js';
import type { VoucherStats } from './stats.js';
import { createLive, type LiveDeps } from './live.js';
import type { StreamSlots } from '../sse.js';
import { createTickStreams, LIVE_INTERVAL_MS } from './live-stream.js';

const Count = Type.Integer({ minimum: 0 });
const StatsBody = Type.Object({
  initialStock: Type.Integer(),
  dbStock: Type.Integer(),
  redisStock: Type.Union([Type.Integer(), Type.Null()]),
  inFlight: Type.Integer(),
  orders: Type.Object({ pending_payment: Count, paid: Count, cancelled: Count, expired: Count, failed: Count }),
  waitlist: Count,
  deadLetters: Count,
});
const ReportBody = Type.Object({
  voucherId: Type.String(),
  verified: Type.Boolean(),
  repaired: Count,
  drift: Type.Array(Type.Object({ kind: Type.String(), detail: Type.String(), repaired: Type.Boolean() })),
  buyers: Type.Object({ compared: Count, all: Type.Boolean() }),
});
const ReconcileQuery = Type.Object({ allBuyers: Type.Optional(Type.Boolean()) }, { additionalProperties: false });

const AuditBody = Type.Object({
  ok: Type.Boolean(),
  checks: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), ok: Type.Boolean(), problems: Type.Array(Type.String()) })),
  initialStock: Type.Integer(),
  dbStock: Type.Integer(),
  redisStock: Type.Union([Type.Integer(), Type.Null()]),
  sold: Type.Integer(),
  orders: Type.Record(Type.String(), Type.Integer()),
  inflight: Type.Integer(),
});
const AuditRequest = Type.Object(
  { admitted: Type.Optional(Type.Array(Type.String({ pattern: '^[1-9][0-9]{0,19}$' }), { maxItems: 2_000_000 })) },
  { additionalProperties: false },
);

export interface ConsistencyRouteDeps {
  guards: Guards;
  voucherStats(voucherId: bigint): Promise<VoucherStats>;
  reconcileVoucher(voucherId: bigint, options: ReconcileOptions): Promise<ReconcileReport>;
  /** `admitted`: order ids a client saw admitted; each must be stored (I3). */
  auditVoucher(voucherId: bigint, admitted?: string[]): Promise<VoucherAudit | null>;
  /** What /metrics answers (this process, or the sum over a supervisor's): the live view's rates. */
  metrics: { metrics(): Promise<string> };
  lastReconciliation: LiveDeps['lastReconciliation'];
  liveIntervalMs?: number;
  /** The process's event-stream slots, shared with the order events. */
  streamSlots: StreamSlots;
}

export function registerConsistencyRoutes(
  app: App,
  { guards, voucherStats, reconcileVoucher, auditVoucher, metrics, lastReconciliation, liveIntervalMs, streamSlots }: ConsistencyRouteDeps,
) {
  const streams = createTickStreams(streamSlots, liveIntervalMs ?? LIVE_INTERVAL_MS);
  // An open stream would keep server.close() waiting for ever.
  app.addHook('preClose', async () => streams.closeAll());

  const audit = async (id: string, admitted?: string[]) => {
    const result = await auditVoucher(BigInt(id), admitted);
    if (!result) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${id} not found`);
    return result;
  };
  const auditSchema = {
    tags: ['operations'],
    summary: 'The invariants of the voucher on both stores, safe on a live system (admin)',
    description: 'POST with {admitted: [orderId…]} also checks that each of those orders is stored (I3).',
    params: IdParams,
    response: { 200: AuditBody, ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.admin, ...ANSWER.voucherNotFound }) },
  };
  app.get('/api/vouchers/:id/audit', { onRequest: guards.admin, schema: auditSchema }, async (request) => audit(request.params.id));
  const auditPostSchema = {
    ...auditSchema,
    body: AuditRequest,
    response: { 200: AuditBody, ...apiErrorAnswers({ ...ANSWER.body, ...ANSWER.admin, ...ANSWER.voucherNotFound, 413: 'PAYLOAD_TOO_LARGE: the body exceeds 64 MiB' }) },
  };
  app.post('/api/vouchers/:id/audit', { onRequest: guards.admin, bodyLimit: 64 * 1024 * 1024, schema: auditPostSchema }, async (request) =>
    audit(request.params.id, request.body.admitted),
  );

  app.get(
    '/api/vouchers/:id/stats',
    {
      onRequest: guards.admin,
      schema: {
        tags: ['operations'],
        summary: 'Stock in both stores, orders by status, in-flight orders, waitlist and dead letters (admin)',
        params: IdParams,
        response: { 200: StatsBody, ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.admin, ...ANSWER.voucherNotFound }) },
      },
    },
    async (request) => voucherStats(BigInt(request.params.id)),
  );
  app.post(
    '/api/vouchers/:id/reconcile',
    {
      onRequest: guards.admin,
      schema: {
        tags: ['operations'],
        summary: 'Reconcile one voucher now: drift found and repaired (admin)',
        description:
          '`verified: false` means Redis kept changing during the comparison; counts were not judged this time. Stock and orders in flight are compared every time; buyer counts a slice of at most 10,000 per call, the next slice the next time (`buyers`), or all of them with `allBuyers=true`.',
        params: IdParams,
        querystring: ReconcileQuery,
        response: { 200: ReportBody, ...apiErrorAnswers({ ...ANSWER.body, ...ANSWER.admin, ...ANSWER.voucherNotFound }) },
      },
    },
    async (request) => reconcileVoucher(BigInt(request.params.id), { allBuyers: request.query.allBuyers }),
  );

  app.get(
    '/api/vouchers/:id/live',
    {
      onRequest: guards.admin,
      schema: {
        tags: ['operations'],
        summary: 'The operator console\'s live view of one voucher: server-sent events, one snapshot a second (admin)',
        description:
          '`text/event-stream` of `event: snapshot` with data {at, stats (as GET /stats), claimsPerSecond: {outcome: n} ' +
          '(all vouchers, from seckill_claims_total of /metrics), admissionsPerSecond (this voucher, from the stores), ' +
          'audit?: {ok, failed: [{name, problem}], at} (on the first snapshot and every 10th)}; `event: error` with ' +
          '{code, message} when a snapshot failed (the stream goes on); `event: token-expired` and the end when your token expires. ' +
          'Unknown voucher: 404 before the stream starts; past the stream caps (SSE_MAX_PER_USER, SSE_MAX_STREAMS): 429 TOO_MANY_STREAMS.',
        params: IdParams,
        querystring: Type.Object({}, { additionalProperties: false }),
        response: {
          200: { description: 'a text/event-stream, until you leave or your token expires', content: { 'text/event-stream': { schema: Type.String() } } },
          ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.admin, ...ANSWER.voucherNotFound, ...ANSWER.streams }),
        },
      },
    },
    async (request, reply) => {
      const next = createLive(BigInt(request.params.id), {
        voucherStats,
        auditVoucher: (id) => auditVoucher(id),
        metricsText: () => metrics.metrics(),
        lastReconciliation,
      });
      await streams.open(request, reply, next);
    },
  );
}
