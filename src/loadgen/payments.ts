// After the sale: a share of the buyers pay (each as themselves), the others let their orders
// run out, and the bench waits for the payment timer to expire them and give the units back.
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
  /** Authorization header of the buyer of an order. */
  buyerOf(orderId: string): string;
  share: number;
}

export async function payAndLetExpire(deployment: Deployment, voucherId: string, paymentTimeoutS: number, plan: PaymentPlan): Promise<PaymentReport> {
  const toPay = plan.orderIds.slice(0, Math.round(plan.orderIds.length * plan.share));
  const lastAnswer = new Map<string, string>();
  let next = 0;
  await driveBuyers({
    next: () => toPay[next++],
    async attempt(orderId) {
      const { status, code } = await deployment.pay(orderId, plan.buyerOf(orderId));
      lastAnswer.set(orderId, status === 200 ? '200 paid' : `${status} ${code ?? 'no code'}`);
      // Not stored yet: the contract says retry (the bench pays after the drain, so this is rare).
      return code !== 'ORDER_PROCESSING';
    },
    concurrency: PAY_CONCURRENCY,
    retries: PROCESSING_RETRIES,
    retryPauseMs: PROCESSING_RETRY_MS,
  }).done;
  const outcomes: Record<string, number> = {};
  for (const outcome of lastAnswer.values()) outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  const report: PaymentReport = { attempted: toPay.length, outcomes, paid: outcomes['200 paid'] ?? 0, waitedForExpiry: false, expiredAfterS: null };
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
  return report;
}
