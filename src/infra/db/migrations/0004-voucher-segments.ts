import type { Kysely } from 'kysely';

// The Redis shards a seckill voucher's stock segments live on, chosen at creation ("3,9,14"); NULL
// for a voucher of one segment, which lives on its id's shard (src/vouchers/segments.ts).
export async function up(db: Kysely<unknown>): Promise<void> {
  // Up to 64 shard numbers below 1024: 319 characters at most.
  await db.schema.alterTable('vouchers').addColumn('segment_shards', 'varchar(400)').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('vouchers').dropColumn('segment_shards').execute();
}
