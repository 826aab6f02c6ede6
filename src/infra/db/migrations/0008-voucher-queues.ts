import type { Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Queue vouchers (a shuffled pre-queue before the start). The voucher row keeps what never changes
// and is public: when the pre-queue opens and the commitment (sha256 of the seed, hex). The seed
// itself stays in a row of its own until the draw publishes it, with the draw's outcome; the
// drawn entrants are kept in the order of the draw, so anyone can re-check it.
export async function up(db: Kysely<unknown>): Promise<void> {
  const t = dialectOf(db).schema;
  await db.schema
    .alterTable('vouchers')
    .addColumn('queue_opens_at', t.time)
    .addColumn('queue_commitment', 'char(64)')
    .execute();
  await db.schema
    .createTable('queue_draws')
    .addColumn('voucher_id', t.u64, (c) => c.primaryKey())
    .addColumn('seed', 'char(64)', (c) => c.notNull())
    .addColumn('drawn_at', t.time)
    .addColumn('entrants', 'integer')
    .addColumn('admitted', 'integer')
    .addColumn('closed_at', t.time)
    .$call(t.table)
    .execute();
  // The draw runner's scan: the queues not closed yet.
  await db.schema.createIndex('queue_draws_open').on('queue_draws').column('closed_at').execute();
  await db.schema
    .createTable('queue_entrants')
    .addColumn('voucher_id', t.u64, (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('user_id', t.u64, (c) => c.notNull())
    .addPrimaryKeyConstraint('queue_entrants_pk', ['voucher_id', 'position'])
    .$call(t.table)
    .execute();
  await db.schema.createIndex('queue_entrants_user').unique().on('queue_entrants').columns(['voucher_id', 'user_id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('queue_entrants').execute();
  await db.schema.dropTable('queue_draws').execute();
  await db.schema.alterTable('vouchers').dropColumn('queue_commitment').dropColumn('queue_opens_at').execute();
}
