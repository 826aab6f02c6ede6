import cluster from 'node:cluster';
import { buildApp } from '../app.js';
import { joinClusterMetrics, serveClusterMetrics } from '../cluster-metrics.js';
import type { Config } from '../config.js';
import { checkServingSecret } from '../config/serving-secret.js';
import { checkServingPayments } from '../config/serving-payments.js';
import { checkWebhookSettings } from '../config/webhook-settings.js';
import { type Container, createContainer } from '../container.js';
import type { App } from '../http.js';
import { createLogger } from '../logger.js';
import { migrateDatabase } from './migrate.js';
import { forkProcesses } from './processes.js';
import { exitOnSignal } from './shutdown.js';
import { startTracing } from '../tracing/tracing.js';

export interface ServeOptions {
  migrate: boolean;
  /** Run the order pipeline and the payment timer in this process (default); `--no-worker` leaves it to `seckill worker`. */
  worker: boolean;
}

/**
 * `seckill serve`: the HTTP API (and the order pipeline unless --no-worker), in API_PROCESSES
 * processes sharing the port. SIGTERM/SIGINT stop accepting, finish in-flight requests, then the
 * batches in hand, and exit 0. Refuses (ConfigError) a secret anyone could know, or simulated
 * payments, on a HOST others reach, and WEBHOOK_URL without WEBHOOK_SECRET.
 */
export async function serve(config: Config, options: ServeOptions): Promise<void> {
  checkServingSecret(config);
  checkServingPayments(config);
  checkWebhookSettings(config);
  if (config.apiProcesses > 1 && cluster.isPrimary) return supervise(config, options);
  const log = createLogger(config.logLevel);
  const tracing = await startTracing(config);
  // One process of several: /metrics answers for all of them.
  const clusterMetrics = cluster.isWorker ? joinClusterMetrics() : null;
  // Signals count from the start: a process stopped while it starts still exits cleanly.
  let app: App | undefined;
  let container: Container | undefined;
  exitOnSignal(log, async () => {
    await app?.close();
    await container?.close();
    await tracing.close();
  });
  // Children of a supervisor: it has migrated already, once.
  container = await createContainer(config, log, { migrate: options.migrate && cluster.isPrimary });
  app = await buildApp({ ...container.appDeps, metrics: clusterMetrics?.of(container.metrics.registry) ?? container.appDeps.metrics });
  // Listen first: a process that cannot bind the port has started no consumer.
  await app.listen({ port: config.port, host: config.host });
  if (options.worker) await container.startWorkers();
}

/** The supervisor: migrates, forks the HTTP processes, and stops them on SIGTERM/SIGINT. */
async function supervise(config: Config, options: ServeOptions): Promise<void> {
  const log = createLogger(config.logLevel);
  if (options.migrate) {
    const applied = await migrateDatabase(config);
    if (applied.length) log.info({ applied }, 'migrations applied');
  }
  serveClusterMetrics();
  const processes = forkProcesses(config.apiProcesses, log);
  log.info({ processes: config.apiProcesses, port: config.port }, 'HTTP processes started');
  const stop = exitOnSignal(log, async () => {
    if (!(await processes.stop())) throw new Error('an HTTP process failed or did not stop cleanly');
  });
  void processes.failed.then(() => stop('an HTTP process failed to start'));
}
