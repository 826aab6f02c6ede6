// What the buyers were told, as the client saw it: outcome counts, latencies, and every order id
// handed out, with enough bookkeeping to catch a duplicate from the client's side alone (an order
// id given to two buyers, a retry with the same Idempotency-Key answered with another order, a
// buyer holding more orders than the per-user limit).
import { LatencyHistogram } from './histogram.js';
import type { PlannedRequest } from './plan.js';
import { Timeline } from './timeline.js';

/** The JSON string value that follows `marker` in `body`, without parsing all of it. */
function stringField(body: string, marker: string): string | null {
  const start = body.indexOf(marker);
  if (start < 0) return null;
  const end = body.indexOf('"', start + marker.length);
  return end < 0 ? null : body.slice(start + marker.length, end);
}

export interface ClientCounts {
  /** Requests that got an HTTP answer. */
  answered: number;
  /** Requests that got none (connection error, timeout): their outcome is unknown. */
  unanswered: number;
  /** Distinct order ids handed out (each one unit: the bench claims quantity 1). */
  orders: number;
  /** 2xx answers repeating an order the same buyer already had (same Idempotency-Key). */
  replays: number;
  /** Order ids handed to more than one buyer. */
  sharedOrderIds: number;
  /** Retries with an admitted Idempotency-Key that were answered with a different order. */
  keyMismatches: number;
  /** Buyers who hold more distinct orders than `perUserLimit`. */
  buyersOverLimit: number;
}

export class SaleRecorder {
  readonly startedAt: number;
  readonly latency = new LatencyHistogram();
  readonly timeline: Timeline;
  readonly outcomes = new Map<string, number>();
  /** Order ids in the order they were first handed out. */
  readonly orderIds: string[] = [];
  /** Buyer of each order id. */
  readonly buyerOf = new Map<string, number>();
  /** performance.now() of the last new order; null before the first. */
  lastOrderAt: number | null = null;
  private readonly ordersPerBuyer = new Map<number, number>();
  private readonly orderOfKey = new Map<string, string>();
  private answered = 0;
  private unanswered = 0;
  private replays = 0;
  private sharedOrderIds = 0;
  private keyMismatches = 0;

  constructor(startedAt: number) {
    this.startedAt = startedAt;
    this.timeline = new Timeline(startedAt);
  }

  private count(outcome: string): void {
    this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + 1);
  }

  /** An HTTP answer to `request` after `ms`. */
  answer(request: PlannedRequest, status: number, body: string, ms: number, now: number): void {
    this.answered++;
    this.latency.recordMs(ms);
    // Any success naming an order: a claim's 201/202, a queue join or standing once admitted.
    const orderId = status >= 200 && status < 300 ? stringField(body, '"orderId":"') : null;
    const fresh = orderId !== null && this.order(request, status, orderId, now);
    // An answer without an order is told by its error code, or by its queue state ("202 prequeue").
    if (orderId === null) this.count(`${status} ${stringField(body, '"code":"') ?? stringField(body, '"state":"') ?? 'no code'}`);
    this.timeline.answer(now, ms, fresh);
  }

  private order(request: PlannedRequest, status: number, orderId: string, now: number): boolean {
    const known = this.orderOfKey.get(request.idempotencyKey);
    if (known !== undefined && known !== orderId) this.keyMismatches++;
    const buyer = this.buyerOf.get(orderId);
    if (buyer !== undefined) {
      if (buyer === request.buyer) {
        this.replays++;
        this.count(`${status} same order again`);
      } else {
        this.sharedOrderIds++;
        this.count(`${status} order of another buyer`);
      }
      return false;
    }
    this.buyerOf.set(orderId, request.buyer);
    this.orderOfKey.set(request.idempotencyKey, orderId);
    this.ordersPerBuyer.set(request.buyer, (this.ordersPerBuyer.get(request.buyer) ?? 0) + 1);
    this.orderIds.push(orderId);
    this.lastOrderAt = now;
    this.count(`${status} new order`);
    return true;
  }

  /** No HTTP answer: `reason` is the transport error code (ECONNRESET, UND_ERR_HEADERS_TIMEOUT, …). */
  failure(reason: string, now: number): void {
    this.unanswered++;
    this.count(`no answer: ${reason}`);
    this.timeline.failure(now);
  }

  counts(perUserLimit: number): ClientCounts {
    let buyersOverLimit = 0;
    for (const n of this.ordersPerBuyer.values()) if (n > perUserLimit) buyersOverLimit++;
    return {
      answered: this.answered,
      unanswered: this.unanswered,
      orders: this.orderIds.length,
      replays: this.replays,
      sharedOrderIds: this.sharedOrderIds,
      keyMismatches: this.keyMismatches,
      buyersOverLimit,
    };
  }
}
