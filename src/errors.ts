// Error codes of the external contract (docs/api.md) and the one error type routes throw.

export const ErrorCode = {
  INVALID_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  VOUCHER_NOT_FOUND: 404,
  ORDER_NOT_FOUND: 404,
  NOT_FOUND: 404,
  NOT_STARTED: 409,
  ENDED: 409,
  SOLD_OUT: 409,
  LIMIT_EXCEEDED: 409,
  ORDER_PROCESSING: 409,
  ORDER_EXPIRED: 409,
  ORDER_CANCELLED: 409,
  ORDER_PAID: 409,
  ORDER_FAILED: 409,
  ORDER_REFUNDED: 409,
  /** A refund of an order that is pending payment or not stored yet. */
  ORDER_NOT_PAID: 409,
  /** A payment whose amount or currency is not the order's; kept as refund_due. */
  PAYMENT_MISMATCH: 409,
  /** A webhook whose signature is missing, wrong or stale; nothing changed. */
  INVALID_SIGNATURE: 400,
  NOT_WAITLISTED: 404,
  /** A queue voucher takes no claims: join its queue (POST /api/vouchers/:id/queue). */
  QUEUE_REQUIRED: 409,
  /** GET /api/vouchers/:id/queue/me by a buyer who never joined. */
  NOT_IN_QUEUE: 404,
  /** The queue routes of a voucher created without `queue`. */
  QUEUE_NOT_OFFERED: 404,
  /** limited: another claim of the same user on the same voucher holds the lock. */
  CLAIM_IN_PROGRESS: 409,
  /** limited: the per-user lock expired before the claim committed; nothing was taken. */
  LOCK_LOST: 503,
  IDEMPOTENCY_KEY_REUSED: 422,
  /** A token bucket (per voucher, per buyer) or the per-address limit is empty; see Retry-After. */
  RATE_LIMITED: 429,
  /** The caller (SSE_MAX_PER_USER) or this process (SSE_MAX_STREAMS) holds its most event streams; see Retry-After. */
  TOO_MANY_STREAMS: 429,
  /** The voucher takes claims only with a `Claim-Token` header (GET /api/vouchers/:id/claim-token). */
  CLAIM_TOKEN_REQUIRED: 403,
  /** The claim token is forged, malformed, or was issued to another user or for another voucher. */
  CLAIM_TOKEN_INVALID: 403,
  /** The claim token was valid but has expired: fetch a new one. */
  CLAIM_TOKEN_EXPIRED: 403,
  /** GET claim-token on a voucher created without `claimToken: true`: claim it directly. */
  CLAIM_TOKEN_NOT_OFFERED: 404,
  PAYLOAD_TOO_LARGE: 413,
  /** The request (headers and body) did not arrive within HTTP_REQUEST_TIMEOUT_MS. */
  REQUEST_TIMEOUT: 408,
  /** The request headers exceed HTTP_MAX_HEADER_BYTES. */
  HEADERS_TOO_LARGE: 431,
  UNAVAILABLE: 503,
  INTERNAL: 500,
} as const;

export type ErrorCodeName = keyof typeof ErrorCode;

export class AppError extends Error {
  readonly code: ErrorCodeName;
  /** Extra fields merged into the error body (e.g. `waitlisted`). */
  readonly extra: Record<string, unknown>;
  /** Seconds for the Retry-After header (every 503 gets one; 429s say how long). */
  readonly retryAfterSeconds?: number;
  readonly status: number;
  constructor(code: ErrorCodeName, message: string, extra: Record<string, unknown> = {}, retryAfterSeconds?: number) {
    // Expected outcomes (sold out, limit reached) happen thousands of times a second: a stack
    // trace would cost more than the answer and is never shown.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    this.code = code;
    this.extra = extra;
    this.retryAfterSeconds = retryAfterSeconds;
    Error.stackTraceLimit = limit;
    this.status = ErrorCode[code];
  }

  toBody(): Record<string, unknown> {
    return { code: this.code, message: this.message, ...this.extra };
  }
}
