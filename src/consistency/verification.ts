// After a master change (a failover, a restart), a voucher's Redis state is what that server had:
// a promoted replica misses what the old master did last (admissions it took, settlements of
// orders stored since), so its stock and buyer counts may grant units the database has sold, and a
// buyer retrying on it is admitted again under a new order id. admit-n.lua admits nothing on a
// segment not verified on the master that holds it (lua/lib/master.lua); this verifies it:
// reconciliation of the voucher (redis-repair.ts) until a comparison was made and what it found
// repaired (stock = database stock − units in flight and not stored; buyer counts = units held in
// the database + in flight and not stored, every buyer's; records of stored orders settled), then each segment is
// stamped with the master it was verified on. Nothing is admitted on the segment in between, so
// the comparison is not chased by admissions.
//
// One verification per voucher per process at a time, shared by every claim that meets it; other
// processes wait for the voucher's reconciliation lock and find the stamp. The watch
// (redis-watch.ts) verifies every live voucher as soon as it notices the change, so most claims
// never wait.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Db } from '../infra/db/database.js';
import { dialectOf } from '../infra/db/dialect.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { VerificationScripts } from '../infra/redis/scripts/verification.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import { kindsWhere } from '../vouchers/kinds.js';
import { segmentShards } from '../vouchers/segments.js';
import type { VoucherVerifier } from '../vouchers/verifier.js';
import type { Voucher } from '../vouchers/voucher.js';
import type { RedisClient } from '../infra/redis/client.js';
import { restoreIdempotencyRecords } from './idempotency-records.js';
import type { Reconciler } from './reconciler.js';

/** A verification that has not succeeded by then gives up; the next claim of the voucher starts another. */
const GIVE_UP_MS = 30_000;
/** Pause between two attempts (the lock was taken, or the database kept changing while compared). */
const RETRY_MS = 50;

export interface VerifierDeps {
  db: Db;
  redis: RedisClient;
  keys: KeySpace;
  scripts: VerificationScripts;
  reconciler: Pick<Reconciler, 'reconcileVoucher'>;
  directory: VoucherDirectory;
  log: Logger;
  /** Once a voucher is verified: what waited for it (promotions of the units given back meanwhile). */
  onVerified?(voucher: Voucher): Promise<unknown>;
}

export function createVoucherVerifier({ db, redis, keys, scripts, reconciler, directory, log, onVerified }: VerifierDeps): VoucherVerifier {
  const running = new Map<bigint, Promise<boolean>>();

  async function attempt(voucher: Voucher, shards: number[]): Promise<boolean> {
    // Read first: a stamp names the master the comparison began on, never a later one.
    const masters = await Promise.all(shards.map((s) => scripts.masterOf(voucher.id, s)));
    if (masters.every((m) => m.verified)) return true;
    const report = await reconciler.reconcileVoucher(voucher.id, { allBuyers: true });
    if (!report.verified) return false;
    // Before admissions resume: a retry of a claim the old master took gets its order, not a second one.
    const replays = await restoreIdempotencyRecords({ db, redis, keys }, voucher);
    if (replays > 0) log.warn({ voucherId: voucher.id.toString(), replays }, 'idempotency records the new Redis master lacked restored from the database');
    const stamped = await Promise.all(shards.map((s, i) => scripts.stampVerified(voucher.id, s, masters[i]!.master)));
    if (!stamped.every(Boolean)) return false;
    const repaired = report.drift.filter((d) => d.repaired).map((d) => d.kind);
    log.warn({ voucherId: voucher.id.toString(), master: masters[0]!.master, repaired }, 'voucher state verified against the database on a new Redis master; admissions resume');
    // Claims may take a unit in the moment before; the waiting buyers have the rest.
    await onVerified?.(voucher).catch((err: unknown) => log.warn({ err, voucherId: voucher.id.toString() }, 'after verifying a voucher, promoting its waiting buyers failed; the next release promotes them'));
    return true;
  }

  async function verifyUntilDone(voucher: Voucher): Promise<boolean> {
    const shards = segmentShards(voucher, keys);
    const giveUpAt = performance.now() + GIVE_UP_MS; // monotonic: a wall clock set back does not stretch it
    for (;;) {
      try {
        if (await attempt(voucher, shards)) return true;
      } catch (err) {
        log.warn({ err, voucherId: voucher.id.toString() }, 'verifying a voucher against the database failed; trying again');
      }
      if (performance.now() >= giveUpAt) {
        log.error({ voucherId: voucher.id.toString() }, `voucher not verified against the database within ${GIVE_UP_MS} ms; its claims are answered 503 until it is`);
        return false;
      }
      await sleep(RETRY_MS);
    }
  }

  function verify(voucher: Voucher): Promise<boolean> {
    let done = running.get(voucher.id);
    if (!done) {
      done = verifyUntilDone(voucher).finally(() => running.delete(voucher.id));
      running.set(voucher.id, done);
    }
    return done;
  }

  return {
    verify,
    async verifyLive() {
      const rows = await db
        .selectFrom('vouchers')
        .select('id')
        .where('kind', 'in', kindsWhere('redisGated'))
        .where('end_at', '>', dialectOf(db).nowPlusSeconds(0))
        .execute();
      let verified = 0;
      for (const { id } of rows) {
        const voucher = await directory.getStored(BigInt(id));
        if (voucher && (await verify(voucher))) verified += 1;
      }
      return verified;
    },
  };
}
