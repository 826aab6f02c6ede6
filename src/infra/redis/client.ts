import { Redis } from 'ioredis';
import { SELF_BATCHED_COMMANDS } from './scripts/index.js';

export interface RedisOptions {
  /** Blocking consumers need `null` so a long XREADGROUP is never cut short by retries. */
  maxRetriesPerRequest?: number | null;
  connectionName?: string;
}

/** One Redis connection. Auto-pipelining batches the many small commands of concurrent requests. */
export function createRedis(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, {
    enableAutoPipelining: true,
    // Claims reach the admit script in batches already (seckill/admission-batch.ts); pipelining a
    // batch again would hold it for one more turn of the event loop.
    autoPipeliningIgnoredCommands: [...SELF_BATCHED_COMMANDS],
    maxRetriesPerRequest: options.maxRetriesPerRequest === undefined ? 3 : options.maxRetriesPerRequest,
    connectionName: options.connectionName,
    lazyConnect: false,
  });
}
