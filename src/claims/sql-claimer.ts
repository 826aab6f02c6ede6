// Use case: a buyer claims units of a limited or common voucher, synchronously in SQL: the order is
// stored as pending_payment before the answer. Both kinds run the same transaction; a limited
// claim first takes a per-user lock (renewed by a watchdog while the claim runs), so one user's
// claims on a voucher run one at a time, and a claim whose lock was lost before the commit takes
// nothing. The database stays the judge of stock and per-user limit either way.
import { activeTraceParent } from '../tracing/spans.js';
import type { RedisClient } from '../infra/redis/client.js';
import { sql, type Transaction } from 'kysely';
import { AppError } from '../errors.js';
import type { IdGenerator } from '../ids/worker-lease.js';
import type { Db } from '../infra/db/database.js';
import { dialectOf } from '../infra/db/dialect.js';
import type { Database } from '../infra/db/types.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import type { EventOutbox } from '../orders/event-outbox.js';
import { addOrderCounts } from '../orders/order-counts.js';
import { kindOf } from '../vouchers/kinds.js';
import { addHeld } from '../vouchers/held-units.js';
import { takeStock } from '../vouchers/stock.js';
import type { Claim, Claimed, Claimer } from './claim.js';
import { withClaimLock } from './claim-lock.js';
import { endedError, keyReusedError, limitExceededError, notStartedError, soldOutError } from './errors.js';

export interface ClaimInSqlDeps {
  db: Db;
  redis: RedisClient;
  keys: KeySpace;
  ids: IdGenerator;
  pubsub: OrderPubSub;
  /** The order-event outbox: the `stored` event commits with the order. */
  eventOutbox?: EventOutbox;
  /** limited: lifetime of the per-user lock, renewed while the claim runs. */
  lockTtlMs: number;
}

export function claimInSqlUseCase({ db, redis, keys, ids, pubsub: events, eventOutbox: outbox, lockTtlMs }: ClaimInSqlDeps): Claimer {
  return async function claimInSql(claim) {
    const result =
      kindOf(claim.voucher).perUserLock
        ? await withClaimLock(redis, keys.claimLock(claim.voucher.id, claim.userId), lockTtlMs, (lockLost) => storeClaim(db, ids, claim, outbox, lockLost))
        : await storeClaim(db, ids, claim, outbox);
    if (result.fresh) {
      outbox?.committed();
      await events.publish([
        {
          type: 'stored',
          orderId: result.orderId,
          voucherId: claim.voucher.id.toString(),
          userId: claim.userId.toString(),
          quantity: claim.quantity,
          status: 'pending_payment',
        },
      ]);
    }
    return result;
  };
}

/**
 * The claim in ONE transaction, decided on the locked voucher row (never on the cached voucher,
 * whose stock is stale) and in database time. Lock order as everywhere else: voucher row, then
 * the quantity row, then the order insert and its count. Checks in the order of the seckill script: replay,
 * window, limit, stock (a buyer at the limit hears LIMIT_EXCEEDED even when sold out).
 */
async function storeClaim(db: Db, ids: IdGenerator, claim: Claim, eventOutbox?: EventOutbox, lockLost?: () => boolean): Promise<Claimed> {
  const voucherId = claim.voucher.id.toString();
  const userId = claim.userId.toString();
  const q = claim.quantity;
  // READ COMMITTED: the voucher row lock already serialises the claims on a voucher, and every
  // statement after it reads the latest commits (what the previous holder stored); the default
  // REPEATABLE READ would also gap-lock a missing quantity row and deadlock neighbouring vouchers
  // (as in the order pipeline).
  const dialect = dialectOf(db);
  return db.transaction().setIsolationLevel('read committed').execute(async (trx) => {
    const voucher = await trx
      .selectFrom('vouchers')
      .select(['stock', 'per_user_limit', 'payment_timeout_seconds', sql<boolean>`begin_at <= ${dialect.now}`.as('started'), sql<boolean>`end_at > ${dialect.now}`.as('open')])
      .where('id', '=', voucherId)
      .forUpdate()
      .executeTakeFirst();
    if (!voucher) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${voucherId} not found`);

    // Under the voucher lock this lookup is authoritative: a concurrent twin either committed
    // before us (we answer with its order) or waits for us (it will find ours). The unique index
    // on (voucher_id, user_id, idempotency_key) stays as the last guard.
    if (claim.idempotencyKey !== undefined) {
      const earlier = await replayOf(trx, voucherId, userId, claim.idempotencyKey, q);
      if (earlier) return earlier;
    }
    if (!voucher.started) throw notStartedError(claim.voucher);
    if (!voucher.open) throw endedError(claim.voucher);

    const held = await trx
      .selectFrom('user_quantities')
      .select('quantity')
      .where('voucher_id', '=', voucherId)
      .where('user_id', '=', userId)
      .forUpdate()
      .executeTakeFirst();
    if ((held?.quantity ?? 0) + q > voucher.per_user_limit) {
      throw limitExceededError(voucher.per_user_limit);
    }
    if (q > voucher.stock) throw soldOutError(false);

    await takeStock(trx, new Map([[voucherId, q]]));
    await addHeld(trx, [{ voucherId, userId, quantity: q }]);
    const orderId = ids.next().toString();
    // A traced claim's order and event keep its request's span: what is done to the order later joins that trace.
    const traceParent = activeTraceParent() ?? null;
    await trx
      .insertInto('orders')
      .values({
        id: orderId,
        voucher_id: voucherId,
        user_id: userId,
        quantity: q,
        status: 'pending_payment',
        // The payment window starts when the order is stored, in database time.
        created_at: dialect.now,
        expires_at: dialect.nowPlusSeconds(voucher.payment_timeout_seconds),
        idempotency_key: claim.idempotencyKey ?? null,
        // A voucher's price never changes: the cached definition is exact.
        amount: claim.voucher.price * q,
        currency: claim.voucher.currency,
        ...(traceParent ? { trace_parent: traceParent } : {}),
      })
      .execute();
    await addOrderCounts(trx, [{ voucherId, status: 'pending_payment', by: 1 }], { voucherLocked: true });
    await eventOutbox?.write(trx, [{ type: 'stored', status: 'pending_payment', orderId, voucherId, userId, quantity: q, traceParent }]);

    // Last moment to undo. The watchdog notices a loss only at its next renewal, so the lock is
    // a fail-fast guard; the locked rows above are what keep the limit.
    if (lockLost?.()) throw new AppError('LOCK_LOST', 'the claim lock was lost before the order was stored; nothing was taken, retry');
    return { orderId, status: 'pending_payment', fresh: true };
  });
}

/** The order an earlier claim stored under this Idempotency-Key, if any; another quantity is a misuse of the key. */
async function replayOf(trx: Transaction<Database>, voucherId: string, userId: string, key: string, quantity: number): Promise<Claimed | undefined> {
  const order = await trx
    .selectFrom('orders')
    .select(['id', 'quantity'])
    .where('voucher_id', '=', voucherId)
    .where('user_id', '=', userId)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
  if (!order) return undefined;
  if (order.quantity !== quantity) {
    throw keyReusedError(order.id, order.quantity);
  }
  return { orderId: order.id, status: 'pending_payment' as const, fresh: false };
}
