// /metrics under API_PROCESSES > 1: a scrape reaches whichever process the kernel picked, so every
// process answers with the sum over all of them. The supervisor collects them with prom-client's
// AggregatorRegistry (its own IPC protocol with the processes); a process asks the supervisor over
// the cluster IPC channel.
import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

const REQUEST = 'seckill:metrics';
const ANSWER = 'seckill:metrics-answer';
/** Above prom-client's own 5 s, so that its error (a process that did not answer) is the one reported. */
const ANSWER_TIMEOUT_MS = 6_000;

interface Answer {
  type: typeof ANSWER;
  id: number;
  text?: string;
  error?: string;
}

/** What the /metrics route reads: a Registry, or the cluster-wide view below. */
export type MetricsSource = Pick<Registry, 'contentType' | 'metrics'>;

/**
 * In an HTTP process of a supervisor, called first thing: prom-client answers the supervisor's
 * collection requests from now on (with nothing until `of` names the registry), so a process that
 * is still starting never stalls a scrape. `of(registry)`: what /metrics reads, the sum over all.
 */
export function joinClusterMetrics(): { of(registry: Registry): MetricsSource } {
  AggregatorRegistry.setRegistries([]);
  new AggregatorRegistry(); // installs prom-client's answer to the supervisor's collection requests
  const waiting = new Map<number, (answer: Answer) => void>();
  let next = 0;
  process.on('message', (message: Answer) => {
    if (message?.type !== ANSWER) return;
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
  });
  return {
    of(registry) {
      AggregatorRegistry.setRegistries([registry]);
      return {
        contentType: registry.contentType,
        metrics: () =>
          new Promise<string>((resolve, reject) => {
            const id = next++;
            const timer = setTimeout(() => waiting.delete(id) && reject(new Error('the supervisor did not send the metrics')), ANSWER_TIMEOUT_MS);
            waiting.set(id, (answer) => {
              clearTimeout(timer);
              if (answer.text !== undefined) resolve(answer.text);
              else reject(new Error(`collecting the metrics failed: ${answer.error}`));
            });
            process.send!({ type: REQUEST, id });
          }),
      };
    },
  };
}

/** In the supervisor: answers the processes' requests with the sum over all of them. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: { type?: string; id?: number }) => {
    if (message?.type !== REQUEST) return;
    const reply = (answer: Omit<Answer, 'type' | 'id'>) => worker.isConnected() && worker.send({ type: ANSWER, id: message.id, ...answer });
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (err: Error) => reply({ error: err.message }),
    );
  });
}
