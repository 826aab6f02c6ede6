// What a 202 guarantees (ADMIT_DURABILITY):
// - memory: the admission is in Redis memory (lost if Redis dies before the pipeline stores it);
// - fsync: Redis has it in its append-only file, fsynced before it answers (appendfsync always;
//   Redis fsyncs once per event-loop turn, so the claims of one admit call share one fsync).
//   Checked at start-up: the service refuses to start on a Redis that does not fsync (and warns
//   where CONFIG is disabled). A failover to a server configured otherwise is not noticed;
// - replica: ADMIT_REPLICAS replicas have it: WAIT after each admit call, on the connection that
//   made it. When they do not confirm within ADMIT_WAIT_TIMEOUT_MS the claims of that call are
//   answered 503; the admission stands, and a retry with the same Idempotency-Key returns it once
//   the replicas confirm. The admit calls of a process share that connection and wait one after
//   the other: while a replica is down each call takes the whole timeout. On a cluster there is
//   one such connection per master, and each admit call (the segments of one slot) goes to the
//   master of that slot (read from the client's slot map at each call, so a failover or a
//   resharding is followed).
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import type { Cluster } from 'ioredis';
import { closeConnection, dedicatedConnection, dropConnection, nodeConnection, REDIS_START_TIMEOUT_MS, redisReady } from '../infra/redis/connections.js';
import { isCluster, type RedisClient, slotOfShard } from '../infra/redis/client.js';
import { AdmitCode, type AdmitGroups, type AdmissionScripts, admissionScripts } from '../infra/redis/scripts/admission.js';
import { loadScriptsByHash, ScriptReloaded } from '../infra/redis/scripts/loader.js';
import type { KeySpace } from '../infra/redis/keys.js';

export interface DurabilityDeps {
  config: Pick<Config, 'admitDurability' | 'admitReplicas' | 'admitWaitTimeoutMs' | 'redisCommandTimeoutMs'>;
  redis: RedisClient;
  keys: KeySpace;
  scripts: Pick<AdmissionScripts, 'admitGroups'>;
  log: Logger;
  /** Cleanup of a connection made here. */
  onClose(name: string, close: () => unknown): void;
}

/** CONFIG GET of some settings on one server; null where CONFIG is not allowed (a managed Redis). */
async function configOf(redis: RedisClient, names: string[]): Promise<Record<string, string> | null> {
  try {
    const flat = (await Promise.all(names.map((n) => redis.config('GET', n) as Promise<string[]>))).flat();
    return Object.fromEntries(flat.flatMap((v, i) => (i % 2 ? [] : [[v, flat[i + 1]!]])));
  } catch {
    return null;
  }
}

/** The servers that can be master: every master of a cluster, else the one the client talks to. */
const mastersOf = (redis: RedisClient): RedisClient[] => (isCluster(redis) ? redis.nodes('master') : [redis]);

/** Refuses ADMIT_DURABILITY=fsync on a Redis that would answer before its append-only file is fsynced. */
async function checkFsync(redis: RedisClient, log: Logger): Promise<void> {
  for (const node of mastersOf(redis)) {
    const settings = await configOf(node, ['appendonly', 'appendfsync']);
    if (!settings) return void log.warn('ADMIT_DURABILITY=fsync: CONFIG GET is not allowed here, so appendonly/appendfsync cannot be checked; make sure they are yes/always');
    if (settings.appendonly !== 'yes' || settings.appendfsync !== 'always') {
      throw new Error(
        `ADMIT_DURABILITY=fsync needs Redis with appendonly yes and appendfsync always (found appendonly ${settings.appendonly}, appendfsync ${settings.appendfsync})`,
      );
    }
  }
}

/**
 * Refuses ADMIT_DURABILITY=replica on a master that keeps taking writes when it is cut off from its
 * replicas. WAIT only tells this process that a write did not reach them; the write still stands on
 * the isolated master, and while it stands every later admission there (a replay answered 202, the
 * admissions of a process that does not WAIT) builds on state the promoted replica will not have.
 * With min-replicas-to-write the isolated master refuses writes within min-replicas-max-lag seconds.
 */
async function checkMinReplicas(redis: RedisClient, replicas: number, log: Logger): Promise<void> {
  for (const node of mastersOf(redis)) {
    const settings = await configOf(node, ['min-replicas-to-write', 'min-replicas-max-lag']);
    if (!settings) return void log.warn('ADMIT_DURABILITY=replica: CONFIG GET is not allowed here, so min-replicas-to-write cannot be checked; set it to ADMIT_REPLICAS');
    const toWrite = Number(settings['min-replicas-to-write']);
    if (toWrite < replicas) {
      throw new Error(
        `ADMIT_DURABILITY=replica needs Redis with min-replicas-to-write ${replicas} (ADMIT_REPLICAS) or more, so that a master cut off from its replicas stops taking writes (found ${toWrite}; min-replicas-max-lag bounds how long it goes on, found ${settings['min-replicas-max-lag']} s)`,
      );
    }
  }
}

/** The admit call that keeps the configured promise. */
export async function durableAdmitGroups({ config, redis, keys, scripts, log, onClose }: DurabilityDeps): Promise<AdmitGroups> {
  if (config.admitDurability === 'fsync') await checkFsync(redis, log);
  if (config.admitDurability !== 'replica') return scripts.admitGroups;
  await checkMinReplicas(redis, config.admitReplicas, log);
  if (config.admitWaitTimeoutMs >= config.redisCommandTimeoutMs) {
    throw new Error(`ADMIT_WAIT_TIMEOUT_MS (${config.admitWaitTimeoutMs}) must be below REDIS_COMMAND_TIMEOUT_MS (${config.redisCommandTimeoutMs}): WAIT would time out in the client`);
  }

  const { admitReplicas: replicas, admitWaitTimeoutMs: timeoutMs } = config;
  // WAIT counts the writes of its own connection: admissions get one, without pipelining, so the
  // WAIT written right after an admit call follows it on the wire. The call is EVALSHA alone: a
  // script sent again after NOSCRIPT would follow the WAIT, and be answered 202 unreplicated.
  const confirmed = (conn: RedisClient, admitOn: AdmitGroups): AdmitGroups => async (groups) => {
    const admitThenWait = () => Promise.all([admitOn(groups), conn.wait(replicas, timeoutMs)]);
    const [results, acks] = await admitThenWait().catch((err: unknown) => {
      if (!(err instanceof ScriptReloaded)) throw err;
      // Loaded now; a master that lacks it again (a failover in between) is one going away: 503.
      return admitThenWait().catch((again: unknown) => {
        throw again instanceof ScriptReloaded ? new AppError('UNAVAILABLE', 'the admission script was not on the Redis master (a failover under way); retry with the same Idempotency-Key') : again;
      });
    });
    // A replay answers 202 for an earlier admission, which may be the one that was not confirmed:
    // it needs the replicas too (this call's own writes, a token taken at least, come after it).
    if (acks >= replicas || !results.some((group) => group.some((r) => r.code === AdmitCode.ADMITTED || r.code === AdmitCode.REPLAYED))) return results;
    throw new AppError(
      'UNAVAILABLE',
      `admission not confirmed by ${replicas} replica(s) within ${timeoutMs} ms; retry with the same Idempotency-Key (it returns the same order if it stands)`,
    );
  };
  if (isCluster(redis)) return perMasterAdmissions(redis, keys, onClose, confirmed);
  const conn = dedicatedConnection(redis, 'seckill-admissions', { deadlines: true });
  onClose('admissions connection', () => closeConnection(conn));
  await redisReady(conn, REDIS_START_TIMEOUT_MS);
  return confirmed(conn, admissionScripts(loadScriptsByHash(conn), keys).admitGroups);
}

/**
 * On a cluster: an admissions connection per master, made on first use, and each admit call (with
 * its WAIT) sent to the master that serves the segment's slot now. A call that meets a slot in
 * motion (MOVED, a master gone) is answered 503: the client's retry finds the new master.
 */
function perMasterAdmissions(
  cluster: Cluster,
  keys: KeySpace,
  onClose: DurabilityDeps['onClose'],
  confirmed: (conn: RedisClient, admitOn: AdmitGroups) => AdmitGroups,
): AdmitGroups {
  // Fails fast once made (no offline queue), so each is used only once it is ready.
  const masters = new Map<string, Promise<AdmitGroups>>();
  const admitOnMaster = (node: string): Promise<AdmitGroups> => {
    let admit = masters.get(node);
    if (!admit) {
      const conn = nodeConnection(cluster, node, 'seckill-admissions');
      onClose(`admissions connection to ${node}`, () => closeConnection(conn));
      // A master that does not answer within a command's deadline is not waited for longer: 503.
      admit = redisReady(conn, cluster.options.redisOptions?.commandTimeout ?? REDIS_START_TIMEOUT_MS).then(() => confirmed(conn, admissionScripts(loadScriptsByHash(conn), keys).admitGroups));
      masters.set(node, admit);
      admit.catch(() => {
        if (masters.get(node) === admit) masters.delete(node); // the next call makes a new one
        dropConnection(conn);
      });
    }
    return admit;
  };
  // The groups of one call share a slot (admission-batch.ts), so the first names it.
  return async (groups) => {
    const master = cluster.slots[slotOfShard(keys, groups[0]!.shard)]?.[0];
    if (!master) throw new AppError('UNAVAILABLE', 'the slot of this voucher has no master right now; retry shortly');
    try {
      return await (await admitOnMaster(master))(groups);
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw new AppError('UNAVAILABLE', `the master of this voucher's slot did not take the claim (${(err as Error).message}); retry shortly`);
    }
  };
}
