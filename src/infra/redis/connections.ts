// Every Redis connection of the service is made here, from the configuration: one server
// (REDIS_URL), a Sentinel-managed master (REDIS_SENTINELS) or a Redis Cluster
// (REDIS_CLUSTER_NODES). Features receive the shared client and derive the others from it
// (dedicatedConnection, nodeConnection), so none of them knows which kind of deployment it
// talks to.
import { Cluster, Redis, type RedisOptions as IoRedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { isCluster, type RedisClient } from './client.js';
import { SELF_BATCHED_COMMANDS } from './scripts/index.js';
import { absorbStrayRedisRejections } from './stray-rejections.js';

export type RedisSettings = Pick<Config, 'redisUrl' | 'redisClusterNodes' | 'redisSentinels' | 'redisSentinelName' | 'redisCommandTimeoutMs'>;

/** Where the connections go: a URL, or the sentinels of a master (with the URL's password and db). */
function targetOptions(s: RedisSettings): IoRedisOptions {
  const url = new URL(s.redisUrl);
  const auth = {
    username: decodeURIComponent(url.username) || undefined,
    password: decodeURIComponent(url.password) || undefined,
    db: Number(url.pathname.slice(1) || 0),
    tls: url.protocol === 'rediss:' ? {} : undefined,
  };
  if (s.redisSentinels.length === 0) return { host: url.hostname, port: Number(url.port || 6379), ...auth };
  // failoverDetector: the connection follows a failover as soon as the sentinels announce it
  // (+switch-master), not when the old master is demoted: an old master cut off from its sentinels
  // but not from this process would otherwise keep taking its commands until the partition heals.
  return { sentinels: s.redisSentinels, name: s.redisSentinelName, failoverDetector: true, ...auth };
}

const DISCONNECT_TIMEOUT_MS = 100;

/**
 * The shared connection of a process. Auto-pipelining batches the many small commands of
 * concurrent requests. While Redis is unreachable nothing queues: a command fails at once (the
 * request is answered 503 UNAVAILABLE), and one that Redis does not answer (a hung server) fails
 * after REDIS_COMMAND_TIMEOUT_MS. Wait for `ready` (redisReady) before the first command.
 */
export function createRedis(settings: RedisSettings, log: Logger, connectionName = 'seckill'): RedisClient {
  const common = {
    enableAutoPipelining: true,
    // Claims reach the admit script in batches already (claims/admission-batch.ts); pipelining a
    // batch again would hold it for one more turn of the event loop.
    autoPipeliningIgnoredCommands: [...SELF_BATCHED_COMMANDS],
    enableOfflineQueue: false,
  };
  // disconnectTimeout: how long a dropped connection may take to close gracefully before it is
  // destroyed. The failover detector drops the connection to an old master; one that is paused or
  // cut off never answers the FIN, and until the socket is gone ioredis neither reconnects nor
  // accepts commands: with the default 2 s, claims were refused 2 s longer than the failover.
  const perConnection = { commandTimeout: settings.redisCommandTimeoutMs, connectionName, disconnectTimeout: DISCONNECT_TIMEOUT_MS };
  const target = targetOptions(settings);
  const redis: RedisClient =
    settings.redisClusterNodes.length > 0
      ? new Cluster(settings.redisClusterNodes, {
          ...common,
          // Learn a failover's new master within a second (ioredis refreshes on MOVED only, else).
          slotsRefreshInterval: 1_000,
          redisOptions: { ...perConnection, username: target.username, password: target.password, tls: target.tls },
        })
      : new Redis({ ...target, ...common, ...perConnection });
  loggers.set(redis, log);
  reconnectAfterAbortedConnect(redis, log, connectionName);
  logConnectionErrors(redis, log, connectionName);
  absorbStrayRedisRejections(log);
  return redis;
}

const loggers = new WeakMap<RedisClient, Logger>();
const ERROR_LOG_EVERY_MS = 5_000;

/**
 * While Redis is unreachable every reconnect attempt fails: one warning per connection every few
 * seconds says so (ioredis would print each one to stderr if nobody listened).
 */
export function logConnectionErrors(redis: RedisClient, log: Logger, connectionName: string): void {
  let lastLogged = 0;
  let suppressed = 0;
  redis.on('error', (err: Error) => {
    if (Date.now() - lastLogged < ERROR_LOG_EVERY_MS) return void suppressed++;
    log.warn({ connection: connectionName, error: err.message, suppressed }, 'Redis connection error; reconnecting');
    lastLogged = Date.now();
    suppressed = 0;
  });
}

/**
 * A connection of its own to the same Redis as `shared` (same target, credentials, Sentinel or
 * cluster), for blocking reads, subscribers and BullMQ: no deadline, no retry limit (as BullMQ
 * requires), no pipelining.
 */
export function dedicatedConnection(shared: RedisClient, connectionName: string, { deadlines = false, subscriber = false } = {}): RedisClient {
  // Blocking reads, subscribers and BullMQ wait for a reconnect; the admissions' own connection
  // (deadlines) fails fast like the shared one.
  const own = deadlines ? { enableAutoPipelining: false } : { enableAutoPipelining: false, enableOfflineQueue: true, maxRetriesPerRequest: null };
  const timeout = deadlines ? {} : { commandTimeout: undefined };
  const redis = isCluster(shared)
    ? shared.duplicate(undefined, { ...own, shardedSubscribers: subscriber, redisOptions: { ...shared.options.redisOptions, ...timeout, connectionName } })
    : shared.duplicate({ ...own, ...timeout, connectionName });
  logLike(shared, redis, connectionName);
  return redis;
}

/**
 * A connection to one node of `cluster` ("host:port", as in its slot map), with the cluster's
 * credentials and deadline, for commands that must reach that node itself (WAIT counts the writes
 * of its own connection). Fails fast like the shared client: no offline queue, no pipelining.
 */
export function nodeConnection(cluster: Cluster, node: string, connectionName: string): Redis {
  const at = node.lastIndexOf(':');
  const redis = new Redis({
    ...cluster.options.redisOptions,
    host: node.slice(0, at),
    port: Number(node.slice(at + 1)),
    connectionName,
    enableAutoPipelining: false,
    enableOfflineQueue: false,
  });
  logLike(cluster, redis, `${connectionName} ${node}`);
  return redis;
}

/** A connection derived from `from` logs its errors where `from` does, and is kept connected as it is. */
function logLike(from: RedisClient, redis: RedisClient, label: string): void {
  const log = loggers.get(from);
  if (!log) return;
  loggers.set(redis, log);
  logConnectionErrors(redis, log, label);
  reconnectAfterAbortedConnect(redis, log, label);
}

const RECONNECT_AFTER_ABORT_MS = 100;

/**
 * ioredis ends a Sentinel connection for good when its failover detector hears +switch-master
 * while a reconnect is still asking the sentinels where the master is: the detector stops the
 * connector, the attempt fails with "Connection is closed." and the client is left `end`, never
 * to retry, every command failing so (redis/ioredis#1683). Under load after a master was killed,
 * that was the admissions' connection: every claim answered 503 for as long as the process lived.
 * An end that comes straight from `connecting`, not asked for (disconnect() and quit() mark the
 * client closing), is followed by a new connection.
 */
function reconnectAfterAbortedConnect(redis: RedisClient, log: Logger, label: string): void {
  if (isCluster(redis) || !redis.options.sentinels) return;
  const closing = () => (redis as unknown as { manuallyClosing: boolean }).manuallyClosing;
  let last = redis.status;
  for (const status of ['connecting', 'connect', 'ready', 'close', 'reconnecting'] as const) redis.on(status, () => (last = status));
  redis.on('end', () => {
    if (last !== 'connecting' || closing()) return;
    log.warn({ connection: label }, 'Redis connection ended by a failover noticed while it reconnected; connecting again');
    setTimeout(() => {
      // Closed meanwhile (shutdown): stays closed. A failed attempt retries as any reconnect does.
      if (redis.status === 'end' && !closing()) redis.connect().catch(() => {});
    }, RECONNECT_AFTER_ABORT_MS).unref();
  });
}

/**
 * Ends a connection now, failing whatever it still owes. ioredis' disconnect() on a connection that
 * waits to reconnect (Redis down, a failover under way) cancels the retry but settles nothing: its
 * queued commands and the ones in flight when the link broke would stay pending for ever, and so
 * would whoever awaits them (a pipeline lane's blocking read, and shutdown with it). Those are failed
 * here as ioredis fails them when it closes of its own accord. (A cluster client waits to
 * reconnect only once every node is lost; its queue is failed the same way.)
 */
export function dropConnection(redis: RedisClient): void {
  const waitingToReconnect = redis.status === 'reconnecting';
  redis.disconnect();
  if (waitingToReconnect) {
    const internals = redis as unknown as { setStatus(status: string): void; flushQueue(err: Error): void };
    internals.setStatus('end');
    internals.flushQueue(new Error('Connection is closed.'));
  }
}

/** QUIT when Redis can answer (replies still due arrive first), else dropConnection. */
export async function closeConnection(redis: RedisClient): Promise<void> {
  if (redis.status === 'ready') {
    try {
      await redis.quit();
      // QUIT ends the connection but not its Sentinel failover detector (its subscriptions to the
      // sentinels would keep the process alive): disconnect() releases those too.
      if (!isCluster(redis)) redis.disconnect();
      return;
    } catch {
      // Broke while quitting: drop it.
    }
  }
  dropConnection(redis);
}

/** How long a process waits for Redis at start-up before it gives up (and says why). */
export const REDIS_START_TIMEOUT_MS = 10_000;

/** Resolves once the connection is ready for commands; rejects with the last error after `timeoutMs`. */
export async function redisReady(redis: RedisClient, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return;
  let lastError: Error | undefined;
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => (lastError = err);
    const done = (err?: Error) => {
      clearTimeout(timer);
      redis.off('ready', onReady).off('error', onError);
      if (err) reject(err);
      else resolve();
    };
    const onReady = () => done();
    const timer = setTimeout(() => done(new Error(`Redis not reachable within ${timeoutMs} ms${lastError ? `: ${lastError.message}` : ''}`)), timeoutMs);
    redis.on('ready', onReady).on('error', onError);
  });
}

/**
 * Pub/sub on whatever `redis` is. On a cluster it is sharded (SPUBLISH / SSUBSCRIBE, Redis 7):
 * the channel's slot's master carries it and the subscription follows that master through a
 * failover, where a classic subscription sits on any node and is moved (missing what is published
 * meanwhile) whenever that node leaves the client's slot map. On one server, classic pub/sub.
 */
export interface PubSub {
  publish(channel: string, message: string): Promise<unknown>;
  /** A subscriber connection of its own, subscribed to `channel`, calling `onMessage` per message. */
  subscriber(channel: string, name: string, onMessage: (message: string) => void): { connection: RedisClient; subscribed: Promise<unknown> };
}

export function pubSubOf(redis: RedisClient): PubSub {
  const sharded = isCluster(redis);
  return {
    publish: (channel, message) => (sharded ? redis.spublish(channel, message) : redis.publish(channel, message)),
    subscriber(channel, name, onMessage) {
      const connection = dedicatedConnection(redis, name, { subscriber: true });
      connection.on(sharded ? 'smessage' : 'message', (from: string, message: string) => from === channel && onMessage(message));
      return { connection, subscribed: sharded ? connection.ssubscribe(channel) : connection.subscribe(channel) };
    },
  };
}
