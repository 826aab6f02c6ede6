import type { Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// A queue voucher's pre-queue lives in Redis (one Lua call per join, no database write); the queue
// runner copies it here in batches while it is open, so a Redis that forgets it before the draw
// can be given it back (queue/prequeue-copy.ts). The draw's entrant list (queue_entrants)
// replaces the copy.
export async function up(db: Kysely<unknown>): Promise<void> {
  const t = dialectOf(db).schema;
  await db.schema
    .createTable('queue_prequeue')
    .addColumn('voucher_id', t.u64, (c) => c.notNull())
    .addColumn('user_id', t.u64, (c) => c.notNull())
    // When the buyer joined (µs, Redis time): the pre-queue's own score, given back with the entrant.
    .addColumn('joined_us', t.u64, (c) => c.notNull())
    .addPrimaryKeyConstraint('queue_prequeue_pk', ['voucher_id', 'user_id'])
    .$call(t.table)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('queue_prequeue').execute();
}
