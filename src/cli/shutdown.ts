import type { Logger } from 'pino';

/**
 * On the first SIGTERM or SIGINT: runs `close` (stop accepting, finish what is in hand), then
 * exits 0, or 1 if closing failed. Later signals are ignored while it runs.
 */
export function exitOnSignal(log: Logger, close: () => Promise<void>): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing the work in hand');
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
}
