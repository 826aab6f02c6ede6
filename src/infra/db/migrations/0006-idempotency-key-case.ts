import type { Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// An Idempotency-Key is compared exactly, case included, as Redis compares the seckill path's: under
// MariaDB's default collation the limited/common path's lookup and unique index ignored case, so
// `Ab` and `aB` were one purchase there and two on seckill. The index is rebuilt with the column.
export async function up(db: Kysely<unknown>): Promise<void> {
  await dialectOf(db).schema.textComparison(db, 'orders', 'idempotency_key', 64, 'exact');
}

// Fails (a duplicate key) once one buyer holds two keys on a voucher that differ only in case.
export async function down(db: Kysely<unknown>): Promise<void> {
  await dialectOf(db).schema.textComparison(db, 'orders', 'idempotency_key', 64, 'default');
}
