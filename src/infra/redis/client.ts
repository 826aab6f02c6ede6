import { Redis } from 'ioredis';

export interface RedisOptions {
  /** Blocking consumers need `null` so a long XREADGROUP is never cut short by retries. */
  maxRetriesPerRequest?: number | null;
  connectionName?: string;
}

/** One Redis connection. Auto-pipelining batches the many small commands of concurrent requests. */
export function createRedis(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, {
    enableAutoPipelining: true,
    maxRetriesPerRequest: options.maxRetriesPerRequest === undefined ? 3 : options.maxRetriesPerRequest,
    connectionName: options.connectionName,
    lazyConnect: false,
  });
}
