// Redis servers of a test's (or a bench's) own, on free ports, for what would disturb other test
// files on the shared server (flush the script cache, restart, kill): one redis-server, or a
// Sentinel topology (scripts/redis-topology.sh). scripts/services.sh installs redis-server, so the
// binary is there wherever the suite runs.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePorts } from './free-ports.js';
import { ROOT, run, type Running, start } from './processes.js';
import { waitFor } from './wait.js';

/** Waits until a server answers PING on `port`; fails when `exited()` says it died first. */
async function answering(port: number, exited: () => boolean): Promise<void> {
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => {}); // refusals until the server listens: each is caught below
  let lastError = '';
  try {
    await waitFor(() => `redis-server on port ${port} to start (${lastError})`, async () => {
      try {
        await probe.connect();
        await probe.ping();
        return true;
      } catch (err) {
        probe.disconnect();
        lastError = (err as Error).message;
        if (exited()) throw new Error(`redis-server on port ${port} did not start: ${lastError}`);
        return false;
      }
    }, 10_000, 50);
  } finally {
    probe.disconnect();
  }
}

export interface PrivateRedisOptions {
  /** Keep an append-only file, fsynced `always` or `everysec` (default: no persistence at all). */
  appendfsync?: 'always' | 'everysec';
}

export interface PrivateRedis {
  url: string;
  /** SIGKILL: a crash, nothing flushed. */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory: empty without persistence, else from its AOF. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startPrivateRedis({ appendfsync }: PrivateRedisOptions = {}): Promise<PrivateRedis> {
  // Below the ephemeral range, so that no outgoing connection takes it while Redis is down.
  const port = await freePorts(1);
  const dir = mkdtempSync(join(tmpdir(), 'seckill-redis-'));
  const persistence = appendfsync ? ['--appendonly', 'yes', '--appendfsync', appendfsync] : ['--appendonly', 'no'];
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, ...persistence];
  let server: Running;
  const launch = async () => {
    server = start('redis-server', args, { stdio: 'ignore' });
    try {
      await answering(port, () => server.exited);
    } catch (err) {
      await server.stop('SIGKILL');
      throw err;
    }
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    kill: async () => void (await server.stop('SIGKILL')),
    restart: launch,
    async stop() {
      await server.stop('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface ReplicatedRedis {
  url: string;
  /** kill -9 of the replica. */
  killReplica(): Promise<void>;
  stop(): Promise<void>;
}

/** A master and one replica on two free ports; with minReplicas, the master refuses writes without it. */
export async function startReplicatedRedis({ minReplicas = 0 } = {}): Promise<ReplicatedRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'seckill-replica-'));
  const port = await freePorts(2);
  const started = await topology('replica', port, dir, minReplicas);
  return {
    url: `redis://127.0.0.1:${port}`,
    async killReplica() {
      process.kill(Number(readFileSync(join(dir, `${port + 1}.pid`), 'utf8')), 'SIGKILL');
    },
    stop: () => started.stop(),
  };
}

export interface SentinelTopology {
  /** REDIS_SENTINELS and REDIS_SENTINEL_NAME for the service. */
  sentinels: string;
  name: string;
  /** kill -9 of the current master. */
  killMaster(): Promise<void>;
  /** Each node's role and each sentinel's view, one line each: for a test's failure message. */
  describe(): Promise<string>;
  stop(): Promise<void>;
}

const TOPOLOGY = 'scripts/redis-topology.sh';

/**
 * Starts a topology and returns how to stop it. It is stopped at the latest when this process
 * exits, even if the test's after hooks do not get to run (a failed hook, a forced exit).
 */
async function topology(kind: 'replica' | 'sentinel' | 'cluster', port: number, dir: string, minReplicas = 0): Promise<{ settings: string; stop(): Promise<void> }> {
  const args = [kind, 'up', '--port', String(port), '--dir', dir, '--min-replicas', String(minReplicas)];
  const up = await run('bash', [TOPOLOGY, ...args], { timeoutMs: 60_000 });
  const downArgs = [TOPOLOGY, kind, 'down', '--port', String(port), '--dir', dir];
  const onExit = () => spawnSync('bash', downArgs, { cwd: ROOT, stdio: 'ignore' });
  process.once('exit', onExit);
  if (up.code !== 0) throw new Error(`${TOPOLOGY} ${args.join(' ')} failed: ${up.stderr}`);
  return {
    settings: up.stdout.trim(),
    async stop() {
      process.off('exit', onExit);
      await run('bash', downArgs, { timeoutMs: 30_000 });
    },
  };
}

/**
 * One master, two replicas, three sentinels (quorum 2, down after 1 s) on six free ports in a row;
 * with minReplicas, a master refuses writes unless that many replicas keep up (ADMIT_DURABILITY=replica).
 */
export async function startSentinelTopology({ minReplicas = 0 } = {}): Promise<SentinelTopology> {
  const dir = mkdtempSync(join(tmpdir(), 'seckill-sentinel-'));
  const port = await freePorts(6);
  const started = await topology('sentinel', port, dir, minReplicas);
  const settings = Object.fromEntries(started.settings.split(/\s+/).map((kv) => kv.split('=') as [string, string]));
  const sentinel = new Redis(port + 3, '127.0.0.1', { maxRetriesPerRequest: 1 });
  sentinel.on('error', () => {}); // it goes away with the topology
  return {
    sentinels: settings.REDIS_SENTINELS!,
    name: settings.REDIS_SENTINEL_NAME!,
    async killMaster() {
      const [, masterPort] = (await sentinel.call('SENTINEL', 'get-master-addr-by-name', settings.REDIS_SENTINEL_NAME!)) as [string, string];
      process.kill(Number(readFileSync(join(dir, `${masterPort}.pid`), 'utf8')), 'SIGKILL');
    },
    async describe() {
      const keep = /^(role|master_port|master_link_status|connected_slaves|slave\d+|min_slaves_good_slaves|port|flags|num-slaves|num-other-sentinels|failover-state)$/;
      const lines = [];
      for (let p = port; p < port + 6; p++) {
        const isSentinel = p >= port + 3;
        const cli = await run('redis-cli', ['-p', String(p), ...(isSentinel ? ['sentinel', 'master', settings.REDIS_SENTINEL_NAME!] : ['info', 'replication'])], { timeoutMs: 5_000 });
        // INFO answers key:value lines (blank lines between sections), SENTINEL MASTER a key line
        // then a value line, which may be blank: kept, or every later pair would be shifted.
        const raw = cli.stdout.replace(/\r/g, '').replace(/\n$/, '').split('\n').filter((l) => isSentinel || l);
        const pairs = isSentinel ? raw.flatMap((k, i) => (i % 2 === 0 ? [[k, raw[i + 1]]] : [])) : raw.map((l) => l.split(':'));
        const shown = pairs.filter(([k]) => keep.test(k!)).map(([k, v]) => `${k}=${v}`);
        lines.push(`${isSentinel ? 'sentinel' : 'redis'} ${p}: ${cli.code === 0 && shown.length ? shown.join(' ') : 'down'}`);
      }
      return lines.join('\n');
    },
    async stop() {
      sentinel.disconnect();
      await started.stop();
    },
  };
}

export interface ClusterTopology {
  /** REDIS_CLUSTER_NODES for the service. */
  nodes: string;
  /** kill -9 of the master that serves `key`'s slot. */
  killMasterOf(key: string): Promise<void>;
  /** kill -9 of that master's replica. */
  killReplicaOf(key: string): Promise<void>;
  stop(): Promise<void>;
}

/** Three masters and three replicas (node timeout 2 s) on six free ports in a row. */
export async function startClusterTopology(): Promise<ClusterTopology> {
  const dir = mkdtempSync(join(tmpdir(), 'seckill-cluster-'));
  const port = await freePorts(6, { clusterBus: true });
  const started = await topology('cluster', port, dir);
  const nodes = started.settings.split('=')[1]!;
  const probe = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  probe.on('error', () => {}); // it may be the node a test kills
  /** CLUSTER SLOTS' entry for `key`'s slot: [from, to, master, …]. */
  const slotRange = async (key: string) => {
    const slot = Number(await probe.call('CLUSTER', 'KEYSLOT', key));
    const ranges = (await probe.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    return ranges.find(([from, to]) => slot >= from && slot <= to)!;
  };
  return {
    nodes,
    async killMasterOf(key) {
      const [, , [, masterPort]] = await slotRange(key);
      process.kill(Number(readFileSync(join(dir, `${masterPort}.pid`), 'utf8')), 'SIGKILL');
    },
    async killReplicaOf(key) {
      // CLUSTER NODES, not SLOTS: SLOTS leaves out a replica that has not replicated a write yet.
      const [, , [, masterPort]] = await slotRange(key);
      const nodes = String(await probe.call('CLUSTER', 'NODES')).trim().split('\n').map((line) => line.split(' '));
      const masterId = nodes.find(([, address]) => address!.startsWith(`127.0.0.1:${masterPort}@`))![0];
      const replica = nodes.find(([, , flags, master]) => flags!.includes('slave') && master === masterId);
      if (!replica) throw new Error(`the master of ${key} has no replica`);
      process.kill(Number(readFileSync(join(dir, `${replica[1]!.split(/[:@]/)[1]}.pid`), 'utf8')), 'SIGKILL');
    },
    async stop() {
      probe.disconnect();
      await started.stop();
    },
  };
}
