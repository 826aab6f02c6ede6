import type { Config } from '../config.js';
import { checkWebhookSettings } from '../config/webhook-settings.js';
import { createCore } from '../composition/core.js';
import { createWorkers } from '../composition/workers.js';
import { createLogger } from '../logger.js';
import { exitOnSignal } from './shutdown.js';
import { startTracing } from '../tracing/tracing.js';

/** `seckill worker`: the order pipeline and the payment timer. SIGTERM finishes the batches in hand, acks, exits 0. */
export async function worker(config: Config): Promise<void> {
  checkWebhookSettings(config);
  const log = createLogger(config.logLevel);
  const tracing = await startTracing(config);
  const core = await createCore(config, log);
  await createWorkers(core).startWorkers();
  exitOnSignal(log, async () => {
    await core.close();
    await tracing.close();
  });
}
