// The app of a test file on a Redis Cluster of its own (three masters, three replicas): what a
// test needs to sell through a cluster, lose a master and watch the service carry on.
import { type ClusterTopology, startClusterTopology } from '../../support/private-redis.js';
import { type Scope, startTestApp, type TestApp } from './helpers.js';

/** The app and its workers on a new cluster, with SHARDS `shards`; the topology stops after the app. */
export async function startClusterApp(scope: Scope, label: string, shards: number, overrides: Record<string, string> = {}): Promise<{ t: TestApp; cluster: ClusterTopology }> {
  const cluster = await startClusterTopology();
  const t = await startTestApp(scope, label, {
    REDIS_CLUSTER_NODES: cluster.nodes,
    SHARDS: String(shards),
    EXPIRY_POLL_MS: '100',
    RECONCILE_INTERVAL_MS: '1000',
    // Entries a lane could not settle while a master refused writes are taken over soon after.
    CLAIM_IDLE_MS: '2000',
    BUCKET_USER_RATE: '0', // buyers retry through a failover
    ...overrides,
  });
  scope.after(() => cluster.stop()); // after the app: after hooks run in order
  await t.c.startWorkers();
  return { t, cluster };
}
