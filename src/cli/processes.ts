// Several HTTP processes on one port (node:cluster): one Node process answers on one core, so a
// box with more cores runs more of them. Each is a whole instance — it leases its own worker id,
// keeps its own sold-out flags (cleared by pub/sub like any other instance) and, unless
// --no-worker, consumes the order streams as a consumer of its own.
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { Backoff } from '../retry-backoff.js';

/** First wait before a replacement; doubled while replacements keep failing before they listen. */
const RESTART_DELAY_MS = 1_000;
const MAX_RESTART_DELAY_MS = 30_000;

export interface Processes {
  /** Process ids of the running children. */
  pids(): number[];
  /** Passes SIGTERM on, waits for every child; resolves true when all of them exited 0. */
  stop(): Promise<boolean>;
  /**
   * Resolves false as soon as one of the first children fails before it listened (bad
   * configuration, port taken: all of them would), after which the caller stops the others.
   */
  failed: Promise<false>;
}

/**
 * Forks `count` children running this same command (`cluster.isWorker` tells them apart). Once all
 * of them have listened, a child that dies is replaced (after 1 s, then longer while replacements
 * keep failing, e.g. while Redis is down); before that, a child that dies is a start-up failure.
 */
export function forkProcesses(count: number, log: Logger, env: Record<string, string> = {}): Processes {
  const children = new Set<Worker>();
  let stopping = false;
  let started = 0; // children of the first generation that have listened
  const restartDelay = new Backoff(RESTART_DELAY_MS, MAX_RESTART_DELAY_MS);
  let fail: (value: false) => void;
  const failed = new Promise<false>((resolve) => (fail = resolve));
  const exitCodes: number[] = [];
  let allExited: () => void;
  const exited = new Promise<void>((resolve) => (allExited = resolve));

  const start = () => {
    const child = cluster.fork(env);
    let listening = false;
    children.add(child);
    child.once('listening', () => {
      listening = true;
      if (started < count) started++;
      restartDelay.reset();
    });
    child.once('exit', (code, signal) => {
      children.delete(child);
      if (stopping) {
        exitCodes.push(code ?? 1);
        if (children.size === 0) allExited();
        return;
      }
      if (started < count) {
        log.error({ child: child.process.pid, code, signal }, 'an HTTP process failed to start; stopping the others');
        exitCodes.push(code || 1);
        fail(false);
        return;
      }
      const delay = listening ? restartDelay.current : restartDelay.next();
      log.error({ child: child.process.pid, code, signal, restartInMs: delay }, 'an HTTP process stopped; starting a new one');
      // Not unref'd: with every child gone, this timer is what keeps the supervisor alive.
      setTimeout(() => stopping || start(), delay);
    });
  };
  for (let i = 0; i < count; i++) start();

  return {
    pids: () => [...children].flatMap((c) => (c.process.pid === undefined ? [] : [c.process.pid])),
    failed,
    async stop() {
      stopping = true;
      if (children.size === 0) allExited();
      for (const child of children) child.process.kill('SIGTERM');
      await exited;
      return exitCodes.every((code) => code === 0);
    },
  };
}
