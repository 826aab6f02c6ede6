// The deployment under test, through its public API only (docs/api.md): the bench needs nothing but a
// URL and tokens, so it runs against any `seckill serve`, local or not.
import type { VoucherAudit } from '../consistency/audit.js';
import { JsonClient, type JsonResponse } from './http-client.js';
import type { VoucherKind } from '../infra/db/types.js';
import type { VoucherStats } from '../console/stats.js';
import type { QueueSummary } from '../queue/queue.js';

// The admin and public routes answer with these shapes as JSON (all numbers and strings, no bigint).
export type { QueueSummary, VoucherAudit, VoucherKind, VoucherStats };

export interface VoucherView {
  id: string;
  kind: VoucherKind;
  /** Initial stock. */
  stock: number;
  available: number;
  perUserLimit: number;
  paymentTimeoutSeconds: number;
  beginAt: string;
  /** A queue voucher's: buyers join its pre-queue from opensAt, drawn at beginAt. */
  queue: { opensAt: string } | null;
}

export interface NewVoucher {
  kind: VoucherKind;
  stock: number;
  paymentTimeoutSeconds: number;
  /** Minor units of DEFAULT_CURRENCY (default 0: a free claim). */
  price?: number;
  /** A queue voucher whose pre-queue opens now and is drawn at this start (default: on sale now, no queue). */
  queuedUntil?: Date;
}

export interface OrderRead {
  id: string;
  status: string;
  amount: number;
  currency: string;
}

export interface PaymentRead {
  paymentId: string;
  orderId: string;
  provider: string;
  status: string;
  reason: string | null;
}

/** An admin call the deployment refused (unexpected status) or did not answer. */
class DeploymentError extends Error {}

/** A sale window open long enough for any run (the bench's vouchers are throw-away). */
const SALE_HOURS = 24;

export class Deployment {
  readonly baseUrl: string;
  private readonly admin: string;
  private readonly client: JsonClient;

  /** `admin`: Authorization header value of an admin. */
  constructor(baseUrl: string, admin: string) {
    this.baseUrl = baseUrl;
    this.admin = admin;
    this.client = new JsonClient(baseUrl, 64);
  }

  /** Path of an API route under the base URL (which may carry a path prefix). */
  path(route: string): string {
    return `${new URL(this.baseUrl).pathname.replace(/\/$/, '')}${route}`;
  }

  /** `authorization` null: as anyone (a public route). */
  private async call(method: string, route: string, body?: unknown, authorization: string | null = this.admin, headers: Record<string, string> = {}): Promise<JsonResponse> {
    try {
      return await this.client.request(method, this.path(route), { body, headers: authorization === null ? headers : { ...headers, authorization } });
    } catch (err) {
      throw new DeploymentError(`${method} ${route}: ${(err as Error).message} (is the deployment at ${this.baseUrl} running?)`);
    }
  }

  private async expect<T>(method: string, route: string, status: number, body?: unknown, authorization?: string | null): Promise<T> {
    const res = await this.call(method, route, body, authorization);
    if (res.status !== status) throw new DeploymentError(`${method} ${route}: ${res.status} ${String(res.body.code ?? '')} ${String(res.body.message ?? '')}`.trim());
    return res.body as T;
  }

  createVoucher({ kind, stock, paymentTimeoutSeconds, price, queuedUntil }: NewVoucher): Promise<VoucherView> {
    const now = Date.now();
    const beginAt = queuedUntil?.getTime() ?? now - 1000;
    return this.expect('POST', '/api/vouchers', 201, {
      title: `seckill bench: ${kind}, ${stock} units${queuedUntil ? ', queued' : ''}`,
      kind,
      stock,
      paymentTimeoutSeconds,
      ...(price === undefined ? {} : { price }),
      beginAt: new Date(beginAt).toISOString(),
      endAt: new Date(beginAt + SALE_HOURS * 3_600_000).toISOString(),
      ...(queuedUntil ? { queue: { opensAt: new Date(now - 1000).toISOString() } } : {}),
    });
  }

  voucher(id: string): Promise<VoucherView> {
    return this.expect('GET', `/api/vouchers/${id}`, 200);
  }

  /** A public route's answer, read as anyone would (no token). */
  publicGet<T = Record<string, unknown>>(route: string): Promise<T> {
    return this.expect('GET', route, 200, undefined, null);
  }

  queueSummary(id: string): Promise<QueueSummary> {
    return this.publicGet(`/api/vouchers/${id}/queue`);
  }

  stats(id: string): Promise<VoucherStats> {
    return this.expect('GET', `/api/vouchers/${id}/stats`, 200);
  }

  /** The invariants on both stores; `admitted`: every order id a buyer was given, each must be stored. */
  audit(id: string, admitted: string[]): Promise<VoucherAudit> {
    return this.expect('POST', `/api/vouchers/${id}/audit`, 200, { admitted });
  }

  /** Pays an order as its buyer; the answer's status and error code (if any). */
  async pay(orderId: string, buyerAuthorization: string): Promise<{ status: number; code: string | null }> {
    const res = await this.call('POST', `/api/orders/${orderId}/pay`, undefined, buyerAuthorization);
    return { status: res.status, code: typeof res.body.code === 'string' ? res.body.code : null };
  }

  /** An order as the admin reads it (any buyer's). */
  order(orderId: string): Promise<OrderRead> {
    return this.expect('GET', `/api/orders/${orderId}`, 200);
  }

  /** A webhook event as Stripe sends it: `signature` is its Stripe-Signature header for exactly JSON.stringify(event). */
  async stripeEvent(event: object, signature: string): Promise<number> {
    return (await this.call('POST', '/api/payments/stripe', event, null, { 'stripe-signature': signature })).status;
  }

  /** Payments the deployment kept with this status, newest first. */
  async payments(status: 'applied' | 'refund_due', limit = 500): Promise<PaymentRead[]> {
    return (await this.expect<{ payments: PaymentRead[] }>('GET', `/api/payments?status=${status}&limit=${limit}`, 200)).payments;
  }

  close(): void {
    this.client.close();
  }
}
