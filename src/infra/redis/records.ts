// The two record formats the Lua scripts write, parsed (and, where TypeScript writes one, built)
// here and nowhere else:
// - the in-flight record, one per admitted order not stored yet, in its shard's hash
//   (orderId -> "voucherId|userId|quantity|createdMs|streamId[|p]"), by lib/admission.lua (admit-n.lua,
//   restock-8.lua for a waitlist promotion) and by redeliver-2.lua / adopt-3.lua from inflightRecord();
// - the stream entry, one field d = "orderId|voucherId|userId|quantity|createdMs[|p][#key]", by
//   lib/admission.lua and redeliver-2.lua (key: the claim's Idempotency-Key, stored with the order).
// The mark "|p" ends both for a waitlist promotion, so the pipeline writes its `promoted` event
// beside its `stored` one; the record keeps it so an entry rebuilt from it (redeliver) does too.
import { idText, parseId } from '../../id-text.js';

export interface InflightOrder {
  orderId: string;
  voucherId: string;
  userId: string;
  quantity: number;
  createdAt: Date;
  streamId: string;
  /** The shard whose hash holds the record (and whose stream the entry): the order's segment. */
  shard: number;
  /** Admitted from the waitlist (restock-8.lua), not by a claim. */
  promoted: boolean;
}

const PROMOTED = 'p';

export function parseInflight(orderId: string, record: string, shard: number): InflightOrder {
  const [voucherId = '', userId = '', quantity = '0', createdMs = '0', streamId = '', mark] = record.split('|');
  const promoted = mark === PROMOTED;
  return { orderId, voucherId, userId, quantity: Number(quantity), createdAt: new Date(Number(createdMs)), streamId, shard, promoted };
}

export const inflightRecord = (o: InflightOrder) =>
  `${o.voucherId}|${o.userId}|${o.quantity}|${o.createdAt.getTime()}|${o.streamId}${o.promoted ? `|${PROMOTED}` : ''}`;

/** One admitted order as its stream entry names it. */
export interface OrderRef {
  shard: number;
  streamId: string;
  orderId: string;
  voucherId: bigint;
  userId: string;
  quantity: number;
}

export interface OrderEntry extends OrderRef {
  createdAt: Date;
  /** The claim's Idempotency-Key, kept with the order (a retry after a failover gets the order back). */
  idempotencyKey?: string;
  /** The W3C traceparent of the claim's span, when the claim was traced (the entry's `t` field). */
  traceParent?: string;
  /** Admitted from the waitlist: its `promoted` event is written when it is stored. */
  promoted: boolean;
  /** Times the group has delivered this entry (1 on first read). */
  deliveries: number;
}

export interface MalformedEntry {
  shard: number;
  streamId: string;
  reason: string;
}

export type RawEntry = [id: string, fields: string[]];

const DIGITS = /^\d{1,16}$/;

/** An Idempotency-Key as a claim may carry it (the claim route's schema) and its entry keeps it. */
export const IDEMPOTENCY_KEY_PATTERN = '^[A-Za-z0-9_-]{1,64}$';
export const IDEMPOTENCY_KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN);

const TRACE_PARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

export function parseEntry(shard: number, [streamId, fields]: RawEntry, deliveries: number): OrderEntry | MalformedEntry {
  // d, then t only for a traced claim.
  const traced = fields.length === 4 && fields[2] === 't';
  const [data = '', key, ...more] = (fields.length === 2 || traced) && fields[0] === 'd' ? fields[1]!.split('#') : [];
  const values = data === '' ? [] : data.split('|');
  // Five values; a sixth only as the promotion mark.
  const promoted = values[5] === PROMOTED;
  const orderId = idText(values[0] ?? '');
  const voucherId = parseId(values[1] ?? '');
  const userId = idText(values[2] ?? '');
  // Digits only: Number() would read "" as 0 and "0x10" as 16.
  const quantity = DIGITS.test(values[3] ?? '') ? Number(values[3]) : NaN;
  const createdMs = DIGITS.test(values[4] ?? '') ? Number(values[4]) : NaN;
  const badKey = more.length > 0 || (key !== undefined && !IDEMPOTENCY_KEY.test(key));
  if (values.length !== (promoted ? 6 : 5) || badKey || orderId === null || voucherId === null || userId === null || !Number.isSafeInteger(quantity) || quantity < 1 || !Number.isSafeInteger(createdMs)) {
    return { shard, streamId, reason: `malformed entry: ${JSON.stringify(fields).slice(0, 200)}` };
  }
  return {
    shard,
    streamId,
    orderId,
    voucherId,
    userId,
    quantity,
    createdAt: new Date(createdMs),
    ...(key === undefined ? {} : { idempotencyKey: key }),
    // Only observability: a trace that does not parse is dropped, the order still stored.
    ...(traced && TRACE_PARENT.test(fields[3]!) ? { traceParent: fields[3] } : {}),
    promoted,
    deliveries,
  };
}

export function isMalformed(e: OrderEntry | MalformedEntry): e is MalformedEntry {
  return !('orderId' in e);
}

/** An entry's order as lib/admission.lua writes it (its id apart), the promotion mark ("" or "|p") and the key ("" when none). */
export function entryRecord(e: OrderEntry): { order: string; mark: string; key: string } {
  return { order: `${e.voucherId}|${e.userId}|${e.quantity}|${e.createdAt.getTime()}`, mark: e.promoted ? `|${PROMOTED}` : '', key: e.idempotencyKey ?? '' };
}

/** The in-flight record an entry's order has (or should have). */
export function inflightOfEntry(e: OrderEntry): InflightOrder {
  return { orderId: e.orderId, voucherId: e.voucherId.toString(), userId: e.userId, quantity: e.quantity, createdAt: e.createdAt, streamId: e.streamId, shard: e.shard, promoted: e.promoted };
}
