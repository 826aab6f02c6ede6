import type { Selectable } from 'kysely';
import type { VoucherKind, VouchersTable } from '../infra/db/types.js';

/** A voucher as the code sees it: ids as bigint, times as Date. */
export interface Voucher {
  id: bigint;
  title: string;
  kind: VoucherKind;
  initialStock: number;
  stock: number;
  beginAt: Date;
  endAt: Date;
  perUserLimit: number;
  paymentTimeoutSeconds: number;
  waitlist: boolean;
  claimToken: boolean;
  /** The shards of its stock segments (segments.ts); null: one segment, on the id's shard. */
  segmentShards: number[] | null;
  /** A queue voucher (queue/): buyers join a pre-queue, drawn into a random order at beginAt. */
  queue: VoucherQueue | null;
  /** Minor units of `currency` per unit; an order's amount is price × quantity. */
  price: number;
  /** ISO 4217, upper case. */
  currency: string;
}

/** The contract's upper bound of a price (minor units). */
export const MAX_PRICE = 1_000_000_000_000;

export interface VoucherQueue {
  opensAt: Date;
  /** sha256 of the draw's secret seed, hex: published before anyone joins. */
  commitment: string;
}

/** The `segment_shards` column ("3,9,14", or NULL for one segment). */
export const parseSegmentShards = (text: string | null): number[] | null => (text ? text.split(',').map(Number) : null);

export function voucherFromRow(row: Selectable<VouchersTable>): Voucher {
  return {
    id: BigInt(row.id),
    title: row.title,
    kind: row.kind,
    initialStock: row.initial_stock,
    stock: row.stock,
    beginAt: row.begin_at,
    endAt: row.end_at,
    perUserLimit: row.per_user_limit,
    paymentTimeoutSeconds: row.payment_timeout_seconds,
    waitlist: Boolean(row.waitlist),
    claimToken: Boolean(row.claim_token),
    segmentShards: parseSegmentShards(row.segment_shards),
    queue: row.queue_opens_at && row.queue_commitment ? { opensAt: row.queue_opens_at, commitment: row.queue_commitment } : null,
    price: Number(row.price),
    currency: row.currency,
  };
}

/** JSON shape of docs/api.md: ids as strings, times as ISO-8601. */
export function voucherJson(v: Voucher, available: number) {
  return {
    id: v.id.toString(),
    title: v.title,
    kind: v.kind,
    stock: v.initialStock,
    available,
    beginAt: v.beginAt.toISOString(),
    endAt: v.endAt.toISOString(),
    perUserLimit: v.perUserLimit,
    paymentTimeoutSeconds: v.paymentTimeoutSeconds,
    waitlist: v.waitlist,
    claimToken: v.claimToken,
    segments: v.segmentShards?.length ?? 1,
    queue: v.queue ? { opensAt: v.queue.opensAt.toISOString() } : null,
    price: v.price,
    currency: v.currency,
  };
}
