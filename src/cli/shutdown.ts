import type { Logger } from 'pino';

/**
 * On the first SIGTERM or SIGINT: runs `close` (stop accepting, finish what is in hand), then
 * exits 0, or 1 if closing failed. Later signals are ignored while it runs. Returns the same stop,
 * for a caller that must stop for another reason.
 */
export function exitOnSignal(log: Logger, close: () => Promise<void>): (reason: string) => Promise<void> {
  let stopping = false;
  const stop = async (reason: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ reason }, 'shutting down: finishing the work in hand');
    try {
      await close();
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  return stop;
}
