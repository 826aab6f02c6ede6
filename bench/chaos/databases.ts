// The replicated databases the database faults run on, each of the cell's own and reached through
// one address, as the engine is in production (a proxy or HAProxy in front of whichever server is
// primary):
// - lagging-standby: a PostgreSQL primary and one asynchronous streaming standby (the default of
//   PostgreSQL and MariaDB), whose replication link stalls before the primary goes: what the
//   primary committed meanwhile is lost with it;
// - patroni: PostgreSQL under Patroni in synchronous mode, three members, etcd, HAProxy;
// - patroni-async: the same without synchronous mode (Patroni's default): a standby within
//   maximum_lag_on_failover may be promoted without the leader's last commits;
// - galera: a three-node MariaDB Galera cluster behind one writer;
// - patroni-hosts: the Patroni cluster with each member on a test host of its own, so that the
//   primary can be cut from its peers and from etcd while HAProxy still reaches it.
import { startGaleraCluster } from '../../support/galera-cluster.js';
import { startPatroniCluster } from '../../support/patroni-cluster.js';
import { startPostgresPair } from '../../support/private-postgres.js';
import { startPatroniOnHosts } from './patroni-hosts.js';

export const DATABASES = ['lagging-standby', 'patroni', 'patroni-async', 'galera', 'patroni-hosts'] as const;
export type DatabaseKind = (typeof DATABASES)[number];

export interface FailingDatabase {
  /** The server's URL without a database (CHAOS_DATABASE_SERVER). */
  server: string;
  /** Before the primary goes: a standby stops receiving where replication is asynchronous. */
  fallBehind(): Promise<void>;
  /** The primary SIGKILLed, another server made primary; the ms until a write succeeds on it. */
  killPrimary(): Promise<number>;
  /** A planned switchover; the ms until a write succeeds on the new primary. */
  switchover(): Promise<number>;
  /** The primary cut from its peers, not from the proxy side; the ms until a write succeeds on a new primary. */
  partitionPrimary(): Promise<number>;
  /** Ends the partition; what became of the old primary. */
  heal(): Promise<string>;
  /** What the fault did beyond its duration (how far behind the standby was). */
  notes(): string[];
  stop(): Promise<void>;
}

async function laggingStandby(): Promise<FailingDatabase> {
  const pair = await startPostgresPair();
  let behind: number | null = null;
  return {
    server: pair.url.replace(/\/postgres$/, ''),
    fallBehind: async () => pair.pauseReplication(),
    async killPrimary() {
      behind = await pair.lagBytes();
      return pair.failover();
    },
    async switchover() {
      // Planned: the standby has everything first, so the kill loses nothing.
      pair.resumeReplication();
      await pair.caughtUp();
      return pair.failover();
    },
    notes: () => (behind === null ? [] : [`standby ${(behind / 1024).toFixed(0)} KiB behind at the kill`]),
    ...noPartition('lagging-standby'),
    stop: () => pair.stop(),
  };
}

async function patroni(synchronous: boolean): Promise<FailingDatabase> {
  const cluster = await startPatroniCluster({ synchronous });
  return {
    server: cluster.url,
    // Synchronous: a commit waits for the standby Patroni would promote. Without: what it had not
    // replayed at the kill is lost, as the load leaves it (nothing stalls it here).
    fallBehind: async () => undefined,
    killPrimary: () => cluster.killLeader(),
    switchover: () => cluster.switchover(),
    notes: () => [],
    ...noPartition(synchronous ? 'patroni' : 'patroni-async'),
    stop: () => cluster.stop(),
  };
}

async function patroniOnHosts(): Promise<FailingDatabase> {
  const cluster = await startPatroniOnHosts({ synchronous: true });
  const only = () => Promise.reject(new Error('patroni-hosts runs db-primary-partition; --database patroni runs the others'));
  return {
    server: cluster.url,
    fallBehind: async () => undefined,
    killPrimary: only,
    switchover: only,
    partitionPrimary: () => cluster.partitionLeader(),
    heal: () => cluster.heal(),
    notes: () => [],
    stop: () => cluster.stop(),
  };
}

/** A partition needs each server on a test host of its own: patroni-hosts. */
const noPartition = (kind: DatabaseKind): Pick<FailingDatabase, 'partitionPrimary' | 'heal'> => ({
  partitionPrimary: () => Promise.reject(new Error(`--database ${kind} cannot be partitioned: db-primary-partition runs on patroni-hosts`)),
  heal: async () => '',
});

async function galera(): Promise<FailingDatabase> {
  const cluster = await startGaleraCluster();
  return {
    server: cluster.url,
    fallBehind: async () => undefined, // a commit is certified by the whole cluster before it returns
    killPrimary: () => cluster.killWriter(),
    switchover: () => cluster.switchover(),
    notes: () => [],
    ...noPartition('galera'),
    stop: () => cluster.stop(),
  };
}

export function startFailingDatabase(kind: DatabaseKind): Promise<FailingDatabase> {
  const starts: Record<DatabaseKind, () => Promise<FailingDatabase>> = {
    'lagging-standby': laggingStandby,
    patroni: () => patroni(true),
    'patroni-async': () => patroni(false),
    galera,
    'patroni-hosts': patroniOnHosts,
  };
  return starts[kind]();
}
