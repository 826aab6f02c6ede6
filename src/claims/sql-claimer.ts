// Use case: a buyer claims units of a limited or common voucher, synchronously in SQL: the order is
// stored as pending_payment before the answer, in a transaction shared with the claims of the same
// voucher waiting at that moment (sql-claim-group.ts). A limited claim first takes a per-user lock
// (renewed by a watchdog while the claim runs), so one user's claims on a voucher run one at a
// time, and a claim whose lock was lost before its decision takes nothing. The database stays the
// judge of stock and per-user limit either way.
import type { RedisClient } from '../infra/redis/client.js';
import type { IdGenerator } from '../ids/worker-lease.js';
import type { Db } from '../infra/db/database.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import type { EventOutbox } from '../orders/event-outbox.js';
import { kindOf } from '../vouchers/kinds.js';
import type { Claimer } from './claim.js';
import { withClaimLock } from './claim-lock.js';
import { groupSqlClaims } from './sql-claim-group.js';

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
  /** Told the size of each transaction's group of claims (a metric). */
  onGroup?(size: number): void;
}

export function claimInSqlUseCase({ db, redis, keys, ids, pubsub: events, eventOutbox: outbox, lockTtlMs, onGroup }: ClaimInSqlDeps): Claimer {
  const store = groupSqlClaims({ db, ids, eventOutbox: outbox, onGroup });
  return async function claimInSql(claim) {
    const result =
      kindOf(claim.voucher).perUserLock
        ? await withClaimLock(redis, keys.claimLock(claim.voucher.id, claim.userId), lockTtlMs, (lockLost) => store(claim, lockLost))
        : await store(claim);
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
