import type { Config } from '../config.js';
import { createContainer } from '../container.js';
import { createLogger } from '../logger.js';
import { onShutdownSignal } from './serve.js';

/** `seckill worker`: the order pipeline only. SIGTERM finishes the batches in hand, acks, exits 0. */
export async function worker(config: Config): Promise<void> {
  const log = createLogger(config.logLevel);
  const container = await createContainer(config, log);
  await container.startPipeline();
  onShutdownSignal(async (signal) => {
    log.info({ signal }, 'worker shutting down: finishing the batches in hand');
    try {
      await container.close();
      log.info('worker stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'worker shutdown failed');
      process.exit(1);
    }
  });
}
