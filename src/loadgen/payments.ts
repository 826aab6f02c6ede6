// After the sale: a share of the orders is paid — by their buyers (simulated payments), or by the
// shop through its payment provider's webhook (stripe-payments.ts) — the others run out, and the
// bench waits for the payment timer to expire them and give the units back. Paid by the shop, one
// more payment arrives for an order that expired: it must be kept as refund_due, the order unchanged.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { driveBuyers } from './buyers.js';
import type { Deployment } from './deployment.js';

export interface PaymentReport {
  /** Orders the bench tried to pay. */
  attempted: number;
  /** Answers by status and code, e.g. "200 paid", "409 ORDER_EXPIRED". */
  outcomes: Record<string, number>;
  /** Orders the deployment confirmed as paid. */
  paid: number;
  /** Whether the bench waited for the unpaid orders to expire (not when the window is too long). */
  waitedForExpiry: boolean;
  /** Seconds from the last payment until no order was pending and Redis held the units again; null when not waited or it timed out. */
  expiredAfterS: number | null;
  /** The payment sent after its order expired (the shop's payments only, once the expiry was waited for). */
  late: LatePayment | null;
}

export interface LatePayment {
  orderId: string;
  /** Kept by the deployment as refund_due (reason late), the order still expired. */
  keptAsRefundDue: boolean;
}

/**
 * Pays one order: its answer as "200 paid" or "<status> <what>"; null when the order is not stored
 * yet (the contract says retry).
 */
export type PayOrder = (orderId: string) => Promise<string | null>;

/** The shop's way of paying: an order, and whether a payment for it is now kept as refund_due (late). */
export interface ShopPayments {
  pay: PayOrder;
  keptAsLate(orderId: string): Promise<boolean>;
}

/** Each buyer pays their own order (PAYMENT_MODE=simulated). */
export function buyersPay(deployment: Deployment, buyerOf: (orderId: string) => string): PayOrder {
  return async (orderId) => {
    const { status, code } = await deployment.pay(orderId, buyerOf(orderId));
    if (code === 'ORDER_PROCESSING') return null;
    return status === 200 ? '200 paid' : `${status} ${code ?? 'no code'}`;
  };
}

const PAY_CONCURRENCY = 32;
const PROCESSING_RETRIES = 100;
const PROCESSING_RETRY_MS = 50;
/** Longest payment window the bench waits out. */
export const MAX_EXPIRY_WAIT_S = 300;
const EXPIRY_GRACE_MS = 30_000;
const EXPIRY_POLL_MS = 200;

export interface PaymentPlan {
  /** Order ids in the order they were handed out; the first `share` of them are paid. */
  orderIds: string[];
  share: number;
  /** Who pays: the buyers (a PayOrder) or the shop (also sends one payment late). */
  payer: PayOrder | ShopPayments;
}

export async function payAndLetExpire(deployment: Deployment, voucherId: string, paymentTimeoutS: number, plan: PaymentPlan): Promise<PaymentReport> {
  const toPay = plan.orderIds.slice(0, Math.round(plan.orderIds.length * plan.share));
  const shop = typeof plan.payer === 'function' ? null : plan.payer;
  const pay = shop?.pay ?? (plan.payer as PayOrder);
  const lastAnswer = new Map<string, string>();
  let next = 0;
  await driveBuyers({
    next: () => toPay[next++],
    async attempt(orderId) {
      const answer = await pay(orderId);
      // Not stored yet: the contract says retry (the bench pays after the drain, so this is rare).
      if (answer === null) return false;
      lastAnswer.set(orderId, answer);
      return true;
    },
    concurrency: PAY_CONCURRENCY,
    retries: PROCESSING_RETRIES,
    retryPauseMs: PROCESSING_RETRY_MS,
  }).done;
  const outcomes: Record<string, number> = {};
  for (const outcome of lastAnswer.values()) outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  const report: PaymentReport = { attempted: toPay.length, outcomes, paid: outcomes['200 paid'] ?? 0, waitedForExpiry: false, expiredAfterS: null, late: null };
  if (paymentTimeoutS > MAX_EXPIRY_WAIT_S) return report;

  report.waitedForExpiry = true;
  const paidAt = performance.now();
  const deadline = paidAt + paymentTimeoutS * 1000 + EXPIRY_GRACE_MS;
  while (performance.now() < deadline) {
    const stats = await deployment.stats(voucherId);
    // Expired in the database, and the units given back to Redis too (seckill: the release relay).
    const unitsBack = stats.redisStock === null || stats.redisStock === stats.dbStock;
    if (stats.orders.pending_payment === 0 && stats.inFlight === 0 && unitsBack) {
      report.expiredAfterS = (performance.now() - paidAt) / 1000;
      break;
    }
    await sleep(EXPIRY_POLL_MS);
  }
  const expired = plan.orderIds[toPay.length];
  if (shop && report.expiredAfterS !== null && expired !== undefined) {
    await shop.pay(expired);
    report.late = { orderId: expired, keptAsRefundDue: await shop.keptAsLate(expired) };
  }
  return report;
}
