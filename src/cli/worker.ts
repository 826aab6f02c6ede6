import type { Config } from '../config.js';
import { createContainer } from '../container.js';
import { createLogger } from '../logger.js';
import { exitOnSignal } from './shutdown.js';

/** `seckill worker`: the order pipeline and the payment timer. SIGTERM finishes the batches in hand, acks, exits 0. */
export async function worker(config: Config): Promise<void> {
  const log = createLogger(config.logLevel);
  const container = await createContainer(config, log);
  await container.startWorkers();
  exitOnSignal(log, () => container.close());
}
