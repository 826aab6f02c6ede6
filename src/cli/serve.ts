import { buildApp } from '../app.js';
import type { Config } from '../config.js';
import { createContainer } from '../container.js';
import { createLogger } from '../logger.js';
import { exitOnSignal } from './shutdown.js';

export interface ServeOptions {
  migrate: boolean;
  /** Run the order pipeline and the payment timer in this process (default); `--no-worker` leaves it to `seckill worker`. */
  worker: boolean;
}

/**
 * `seckill serve`: the HTTP API (and the order pipeline unless --no-worker). SIGTERM/SIGINT stop
 * accepting, finish in-flight requests, then the batches in hand, and exit 0.
 */
export async function serve(config: Config, options: ServeOptions): Promise<void> {
  const log = createLogger(config.logLevel);
  const container = await createContainer(config, log, { migrate: options.migrate });
  const app = await buildApp(container.appDeps);
  if (options.worker) await container.startWorkers();
  await app.listen({ port: config.port, host: config.host });
  exitOnSignal(log, async () => {
    await app.close();
    await container.close();
  });
}
