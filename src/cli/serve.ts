import cluster from 'node:cluster';
import { buildApp } from '../app.js';
import { clusterWideMetrics, serveClusterMetrics } from '../cluster-metrics.js';
import type { Config } from '../config.js';
import { createContainer } from '../container.js';
import { createLogger } from '../logger.js';
import { migrateDatabase } from './migrate.js';
import { forkProcesses } from './processes.js';
import { exitOnSignal } from './shutdown.js';

export interface ServeOptions {
  migrate: boolean;
  /** Run the order pipeline and the payment timer in this process (default); `--no-worker` leaves it to `seckill worker`. */
  worker: boolean;
}

/**
 * `seckill serve`: the HTTP API (and the order pipeline unless --no-worker), in API_PROCESSES
 * processes sharing the port. SIGTERM/SIGINT stop accepting, finish in-flight requests, then the
 * batches in hand, and exit 0.
 */
export async function serve(config: Config, options: ServeOptions): Promise<void> {
  if (config.apiProcesses > 1 && cluster.isPrimary) return supervise(config, options);
  const log = createLogger(config.logLevel);
  // Children of a supervisor: it has migrated already, once.
  const container = await createContainer(config, log, { migrate: options.migrate && cluster.isPrimary });
  // One process of several: /metrics answers for all of them.
  const metrics = cluster.isWorker ? clusterWideMetrics(container.metrics.registry) : container.appDeps.metrics;
  const app = await buildApp({ ...container.appDeps, metrics });
  if (options.worker) await container.startWorkers();
  await app.listen({ port: config.port, host: config.host });
  exitOnSignal(log, async () => {
    await app.close();
    await container.close();
  });
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
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    process.exit((await processes.stop()) ? 0 : 1);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
  void processes.failed.then(stop);
}
