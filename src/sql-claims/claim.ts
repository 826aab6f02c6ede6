// Use case: a buyer claims units of a limited or common voucher, synchronously in SQL.
// (Being written: see the helper's brief; this skeleton only fixes the interface.)
import type { Redis } from 'ioredis';
import type { IdGenerator } from '../ids/worker-lease.js';
import type { Db } from '../infra/db/database.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { OrderEvents } from '../orders/events.js';
import type { Voucher } from '../vouchers/voucher.js';

export interface SqlClaim {
  voucher: Voucher;
  userId: bigint;
  quantity: number;
  idempotencyKey?: string;
}

export interface SqlClaimResult {
  orderId: string;
  /** false when an earlier claim with the same Idempotency-Key was answered again. */
  fresh: boolean;
}

export interface ClaimInSqlDeps {
  db: Db;
  redis: Redis;
  keys: KeySpace;
  ids: IdGenerator;
  events: OrderEvents;
  /** limited: lifetime of the per-user lock, renewed while the claim runs. */
  lockTtlMs: number;
}

export function claimInSqlUseCase(_deps: ClaimInSqlDeps) {
  return async function claimInSql(_claim: SqlClaim): Promise<SqlClaimResult> {
    throw new Error('not built yet');
  };
}
