// Who holds the pending (delivered, unacknowledged) entries of a shard stream: a lane takes over
// the entries another consumer, probably dead, has held past `claimIdleMs`, and keeps claiming
// its own while it retries them, so that nobody takes those over.
import { type MalformedEntry, type OrderEntry, parseEntry, type RawEntry } from '../infra/redis/records.js';
import type { PipelineDeps } from './pipeline-deps.js';
import { CONSUMER_GROUP } from './maintenance.js';

type ClaimDeps = Pick<PipelineDeps, 'redis' | 'keys' | 'options' | 'log'>;

/** Takes over up to a batch of entries idle too long on any consumer, with their delivery counts. */
export async function claimStale({ redis, keys, options, log }: ClaimDeps, shard: number): Promise<(OrderEntry | MalformedEntry)[]> {
  const stream = keys.orders(shard);
  const [, claimed, deleted] = (await redis.xautoclaim(stream, CONSUMER_GROUP, options.consumer, options.claimIdleMs, '0-0', 'COUNT', options.batchSize)) as [
    string,
    RawEntry[],
    string[],
  ];
  if (deleted?.length) log.error({ shard, ids: deleted }, 'pending entries vanished from the stream (trimmed or deleted by hand)');
  if (!claimed.length) return [];
  // XAUTOCLAIM does not say how often an entry was delivered; XPENDING does.
  const pending = (await redis.xpending(stream, CONSUMER_GROUP, claimed[0]![0], claimed[claimed.length - 1]![0], claimed.length, options.consumer)) as [
    string,
    string,
    number,
    number,
  ][];
  const deliveries = new Map(pending.map(([id, , , count]) => [id, count]));
  log.info({ shard, count: claimed.length }, 'took over entries idle on another consumer');
  return claimed.map((raw) => parseEntry(shard, raw, deliveries.get(raw[0]) ?? 1));
}

/** Resets the idle time of entries this consumer is still working on. */
export async function keepClaimed({ redis, keys, options }: Pick<ClaimDeps, 'redis' | 'keys' | 'options'>, entries: OrderEntry[]): Promise<void> {
  for (const shard of new Set(entries.map((e) => e.shard))) {
    const ids = entries.filter((e) => e.shard === shard).map((e) => e.streamId);
    await redis.call('XCLAIM', keys.orders(shard), CONSUMER_GROUP, options.consumer, 0, ...ids, 'JUSTID').catch(() => {});
  }
}
