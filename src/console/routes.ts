// The operator console's routes: a voucher's stats in both stores, and its live view.
import { Type } from 'typebox';
import type { Guards } from '../auth/guards.js';
import { ANSWER, apiErrorAnswers, type App, IdParams } from '../http.js';
import type { StreamSlots } from '../sse.js';
import { createLive, type LiveDeps } from './live.js';
import { createTickStreams, LIVE_INTERVAL_MS, type TickStreams } from './live-stream.js';
import type { VoucherStats } from './stats.js';

const Count = Type.Integer({ minimum: 0 });
const StatsBody = Type.Object({
  initialStock: Type.Integer(),
  dbStock: Type.Integer(),
  redisStock: Type.Union([Type.Integer(), Type.Null()]),
  inFlight: Type.Integer(),
  orders: Type.Object({ pending_payment: Count, paid: Count, cancelled: Count, expired: Count, failed: Count, refunded: Count }),
  waitlist: Count,
  deadLetters: Count,
  refundDue: Type.Integer({ minimum: 0, description: "payments of the voucher's orders kept refund_due (GET /api/payments?status=refund_due)" }),
});

const LIVE_DESCRIPTION =
  '`text/event-stream` of `event: snapshot` with data {at, stats (as GET /stats), claimsPerSecond: {outcome: n} ' +
  '(all vouchers, from seckill_claims_total of /metrics), admissionsPerSecond (this voucher, from the stores), ' +
  'audit?: {ok, failed: [{name, problem}], at} (on the first snapshot and every 10th)}; `event: error` with ' +
  '{code, message} when a snapshot failed (the stream goes on); `event: token-expired` and the end when your token expires. ' +
  'Unknown voucher: 404 before the stream starts; past the stream caps (SSE_MAX_PER_USER, SSE_MAX_STREAMS): 429 TOO_MANY_STREAMS.';

export interface ConsoleRouteDeps {
  guards: Guards;
  voucherStats(voucherId: bigint): Promise<VoucherStats>;
  /** The audit the live view runs on its first snapshot and every few after. */
  auditVoucher: LiveDeps['auditVoucher'];
  /** What /metrics answers (this process, or the sum over a supervisor's): the live view's rates. */
  metrics: { metrics(): Promise<string> };
  lastReconciliation: LiveDeps['lastReconciliation'];
  liveIntervalMs?: number;
  /** The process's event-stream slots, shared with the order events. */
  streamSlots: StreamSlots;
}

function registerStatsRoute(app: App, { guards, voucherStats }: ConsoleRouteDeps) {
  const schema = {
    tags: ['operations'],
    summary: 'Stock in both stores, orders by status, in-flight orders, waitlist and dead letters (admin)',
    params: IdParams,
    response: { 200: StatsBody, ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.admin, ...ANSWER.voucherNotFound }) },
  };
  app.get('/api/vouchers/:id/stats', { onRequest: guards.admin, schema }, async (request) => voucherStats(BigInt(request.params.id)));
}

function registerLiveRoute(app: App, streams: TickStreams, { guards, voucherStats, auditVoucher, metrics, lastReconciliation }: ConsoleRouteDeps) {
  const schema = {
    tags: ['operations'],
    summary: "The operator console's live view of one voucher: server-sent events, one snapshot a second (admin)",
    description: LIVE_DESCRIPTION,
    params: IdParams,
    querystring: Type.Object({}, { additionalProperties: false }),
    response: {
      200: { description: 'a text/event-stream, until you leave or your token expires', content: { 'text/event-stream': { schema: Type.String() } } },
      ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.admin, ...ANSWER.voucherNotFound, ...ANSWER.streams }),
    },
  };
  app.get('/api/vouchers/:id/live', { onRequest: guards.admin, schema }, async (request, reply) => {
    const next = createLive(BigInt(request.params.id), {
      voucherStats,
      auditVoucher: (id) => auditVoucher(id),
      metricsText: () => metrics.metrics(),
      lastReconciliation,
    });
    await streams.open(request, reply, next);
  });
}

export function registerConsoleRoutes(app: App, deps: ConsoleRouteDeps) {
  const streams = createTickStreams(deps.streamSlots, deps.liveIntervalMs ?? LIVE_INTERVAL_MS);
  // An open stream would keep server.close() waiting for ever.
  app.addHook('preClose', async () => streams.closeAll());
  registerStatsRoute(app, deps);
  registerLiveRoute(app, streams, deps);
}
