import type { ColumnType, Generated } from 'kysely';

export type VoucherKind = 'seckill' | 'limited' | 'common';
export const ORDER_STATUSES = ['pending_payment', 'paid', 'cancelled', 'expired', 'failed', 'refunded'] as const;
export type StoredOrderStatus = (typeof ORDER_STATUSES)[number];

/** 64-bit ids travel as decimal strings (mysql2 bigNumberStrings). */
type Id = ColumnType<string, string | bigint, string | bigint>;

export interface VouchersTable {
  id: Id;
  title: string;
  kind: VoucherKind;
  initial_stock: number;
  /** Units the database has not yet given to an order: the source of truth. */
  stock: number;
  begin_at: Date;
  end_at: Date;
  per_user_limit: number;
  payment_timeout_seconds: number;
  waitlist: ColumnType<boolean, boolean, boolean>;
  claim_token: ColumnType<boolean, boolean, boolean>;
  created_at: Generated<Date>;
  /** Bumped by every transaction that changes `stock` (reconciliation's consistency check). */
  version: Generated<string>;
  /** Shards of the stock segments ("3,9,14"), NULL for one segment on the id's shard. */
  segment_shards: ColumnType<string | null, string | null | undefined, string | null>;
  /** Queue vouchers: when the pre-queue opens; NULL for a voucher without a queue. */
  queue_opens_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Queue vouchers: sha256 of the draw's seed (hex), public from creation. */
  queue_commitment: ColumnType<string | null, string | null | undefined, string | null>;
  /** Minor units (BIGINT: a decimal string from mysql2, a string from pg). */
  price: ColumnType<string, number | string | undefined, number | string>;
  /** ISO 4217, upper case. */
  currency: ColumnType<string, string | undefined, string>;
}

export interface OrdersTable {
  id: Id;
  voucher_id: Id;
  user_id: Id;
  quantity: number;
  status: StoredOrderStatus;
  created_at: Date;
  expires_at: Date | null;
  paid_at: Date | null;
  updated_at: Generated<Date>;
  failure_reason: string | null;
  /** Idempotency-Key of a synchronous (limited/common) claim, compared case-sensitively; seckill keeps its keys in Redis. */
  idempotency_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** price × quantity when stored, minor units (BIGINT: a decimal string). */
  amount: ColumnType<string, number | string | undefined, number | string>;
  currency: ColumnType<string, string | undefined, string>;
  refunded_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Whether the refund gave the units back on sale; NULL until refunded (MySQL reads 1/0: test with Boolean()). */
  refund_restocked: ColumnType<boolean | null, boolean | null | undefined, boolean | null>;
  /** The traceparent of the claim's span when it was traced (tracing/spans.ts). */
  trace_parent: ColumnType<string | null, string | null | undefined, string | null>;
}

/** Units each user holds per voucher in active orders; the per-user limit is checked against it. */
export interface UserQuantitiesTable {
  voucher_id: Id;
  user_id: Id;
  quantity: number;
}

/** Units released in SQL (expired/cancelled order) that Redis has not been given back yet. */
export interface ReleaseOutboxTable {
  order_id: Id;
  voucher_id: Id;
  user_id: Id;
  quantity: number;
  /** The releasing span's traceparent (migration 0014); null: untraced. */
  trace_parent: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Generated<Date>;
}

/**
 * Each voucher's orders by status (orders/order-counts.ts): a count is the sum of `n` over the
 * voucher's slots for that status; one slot's `n` may be negative.
 */
export interface VoucherOrderCountsTable {
  voucher_id: Id;
  status: StoredOrderStatus;
  slot: number;
  /** BIGINT: a decimal string from both drivers. */
  n: ColumnType<string, number, number>;
}

export type OrderEventType = 'stored' | 'paid' | 'expired' | 'cancelled' | 'failed' | 'promoted' | 'refunded' | 'refund_due';

/** The outbox of order events for RabbitMQ (events/event-relay.ts); a row lives until the broker confirmed it. */
export interface OrderEventsTable {
  event_id: Generated<string>;
  order_id: Id;
  voucher_id: Id;
  user_id: Id;
  type: OrderEventType;
  quantity: number;
  /** The order's status after the event (`processing` for a promotion not stored yet). */
  status: string;
  created_at: Generated<Date>;
  /** The traceparent of the span that wrote the event, when traced: its publish and delivery join that trace. */
  trace_parent: ColumnType<string | null, string | null | undefined, string | null>;
}

/** The event's fields of an order_events row, copied with its id into webhook_events. */
type WebhookEventColumns = Omit<OrderEventsTable, 'event_id' | 'type' | 'created_at'> & {
  event_id: Id;
  /** Text, not an enum: the relay sends whatever type the outbox holds. */
  type: string;
  created_at: Date;
  attempts: Generated<number>;
  last_error: string | null;
};

/** Order events waiting for WEBHOOK_URL (webhooks/): a row lives until the receiver answered 2xx or it is given up. */
export interface WebhookEventsTable extends WebhookEventColumns {
  /** When the row may next be taken: its next try, or the end of the round that holds it. */
  due_at: Generated<Date>;
  /** The relay round holding the row (null: none). */
  leased_by: string | null;
}

/** Webhook events given up after WEBHOOK_MAX_AGE_SECONDS undelivered, kept for operators. */
export interface WebhookGivenUpTable extends WebhookEventColumns {
  given_up_at: Generated<Date>;
}

/** A queue voucher's draw: the seed (secret until drawn_at is set), then what the draw did. */
export interface QueueDrawsTable {
  voucher_id: Id;
  /** 32 random bytes, hex. */
  seed: string;
  /** Set when the draw is published (the seed with it); NULL before. */
  drawn_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Entrants of the draw, and how many of the first places it admitted. */
  entrants: ColumnType<number | null, number | null | undefined, number | null>;
  admitted: ColumnType<number | null, number | null | undefined, number | null>;
  /** When no place could be admitted any more (everything paid, or the sale ended). */
  closed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/** The drawn entrants of a queue voucher, by the place the draw gave them (1-based). */
export interface QueueEntrantsTable {
  voucher_id: Id;
  position: number;
  user_id: Id;
}

/**
 * A queue voucher's pre-queue as copied from Redis while it is open (queue/prequeue-copy.ts), one
 * row per entrant; the draw's entrant list replaces it.
 */
export interface QueuePrequeueTable {
  voucher_id: Id;
  user_id: Id;
  /** When the buyer joined: µs of Redis time, a 64-bit integer as a decimal string. */
  joined_us: ColumnType<string, string, string>;
}

export type PaymentStatus = 'applied' | 'refund_due';
export type RefundReason = 'late' | 'duplicate' | 'mismatch';

/** A payment the shop confirmed (payments/): applied to its order, or kept to be refunded. */
export interface PaymentsTable {
  id: Generated<string>;
  provider: string;
  payment_id: string;
  order_id: Id;
  voucher_id: Id;
  /** Minor units paid (BIGINT: a decimal string). */
  amount: ColumnType<string, number | string, number | string>;
  currency: string;
  status: PaymentStatus;
  reason: RefundReason | null;
  created_at: Generated<Date>;
}

/** Stripe events applied (payments/stripe-deliveries.ts), each written with its effect. */
export interface StripeEventsTable {
  event_id: string;
  type: string;
  deliveries: number;
  received_at: Generated<Date>;
}

/** Stripe refunds that arrived before the payment they refund (payments/stripe-settle.ts). */
export interface StripeHeldRefundsTable {
  event_id: string;
  order_id: Id;
  payment_intent: string;
  received_at: Generated<Date>;
}

export interface Database {
  vouchers: VouchersTable;
  orders: OrdersTable;
  user_quantities: UserQuantitiesTable;
  release_outbox: ReleaseOutboxTable;
  order_events: OrderEventsTable;
  webhook_events: WebhookEventsTable;
  webhook_given_up: WebhookGivenUpTable;
  voucher_order_counts: VoucherOrderCountsTable;
  queue_draws: QueueDrawsTable;
  queue_entrants: QueueEntrantsTable;
  queue_prequeue: QueuePrequeueTable;
  payments: PaymentsTable;
  stripe_events: StripeEventsTable;
  stripe_held_refunds: StripeHeldRefundsTable;
}
