// Test hosts (network namespaces, scripts/test-hosts.sh) from TypeScript, and the Redis servers a
// campaign puts on them. Every address handed out lives inside namespaces made here; `down` kills
// what runs in them and removes them, and runs on every exit path of the process that made them.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../../support/processes.js';
import { waitFor } from '../../support/wait.js';

const exec = promisify(execFile);
const SCRIPT = join(ROOT, 'scripts/test-hosts.sh');

const live = new Set<TestHosts>();
let exitHooked = false;
/** Hosts still up when the process leaves are removed synchronously (exit, Ctrl-C, a crash). */
function removeOnExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  const removeAll = () => {
    for (const hosts of live) hosts.downSync();
  };
  process.once('exit', removeAll);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      removeAll();
      process.exit(130);
    });
  }
}

/**
 * A net no other test's hosts are on now (`up` first removes what was on its net): test files that
 * make hosts run side by side. Two that choose in the same instant may still meet: 1 in 254.
 */
async function unusedNet(): Promise<number> {
  const { stdout } = await exec('ip', ['netns', 'list']).catch(() => ({ stdout: '' }));
  const taken = new Set([...stdout.matchAll(/^skh(\d+)-/gm)].map((m) => Number(m[1])));
  const free = Array.from({ length: 254 }, (_, i) => i + 1).filter((n) => !taken.has(n));
  return free[Math.floor(Math.random() * free.length)] ?? 1 + Math.floor(Math.random() * 254);
}

export class TestHosts {
  readonly net: number;
  readonly addresses: Record<string, string>;

  private constructor(net: number, addresses: Record<string, string>) {
    this.net = net;
    this.addresses = addresses;
  }

  static async up(hostNames: string[], net?: number): Promise<TestHosts> {
    removeOnExit();
    net ??= await unusedNet();
    const { stdout } = await exec('bash', [SCRIPT, 'up', '--net', String(net), ...hostNames]);
    const addresses = Object.fromEntries(stdout.trim().split('\n').map((line) => line.split(' ') as [string, string]));
    const hosts = new TestHosts(net, addresses);
    live.add(hosts);
    return hosts;
  }

  address(host: string): string {
    const a = this.addresses[host];
    if (!a) throw new Error(`no test host ${host}`);
    return a;
  }

  /** Runs a command inside `host` to its end. */
  async exec(host: string, command: string[]): Promise<string> {
    return (await exec('bash', [SCRIPT, 'exec', '--net', String(this.net), host, ...command])).stdout;
  }

  /** The command line that runs `command` inside `host`, for a process to be started and left running (exec runs one to its end). */
  argv(host: string, command: string[]): string[] {
    return ['bash', SCRIPT, 'exec', '--net', String(this.net), host, ...command];
  }

  /** Drops packets between `a` and each of `others`, both ways (or only from `a` with oneWay). */
  async cut(a: string, others: string[], { oneWay = false } = {}): Promise<void> {
    for (const b of others) await exec('bash', [SCRIPT, 'cut', '--net', String(this.net), a, b, ...(oneWay ? ['--one-way'] : [])]);
  }

  async heal(): Promise<void> {
    await exec('bash', [SCRIPT, 'heal', '--net', String(this.net)]);
  }

  async down(): Promise<void> {
    live.delete(this);
    await exec('bash', [SCRIPT, 'down', '--net', String(this.net)]);
  }

  downSync(): void {
    live.delete(this);
    try {
      execFileSync('bash', [SCRIPT, 'down', '--net', String(this.net)], { stdio: 'ignore' });
    } catch {
      // Leaving anyway; `up --net N` removes leftovers next time.
    }
  }
}

export const REDIS_PORT = 6379;
export const SENTINEL_PORT = 26379;
export const MASTER_NAME = 'seckill';

async function redisAnswers(hosts: TestHosts, host: string, port: number): Promise<boolean> {
  try {
    return (await hosts.exec(host, ['redis-cli', '-h', hosts.address(host), '-p', String(port), 'ping'])).includes('PONG');
  } catch {
    return false;
  }
}

export interface SentinelHosts {
  hosts: TestHosts;
  /** REDIS_SENTINELS for the service. */
  sentinels: string;
  /** The host whose Redis is master now (asked of a sentinel). */
  master(): Promise<string>;
  /** The hosts of the master's replicas and of the sentinels: what a partition cuts the master from. */
  others: string[];
  /** The pid of the Redis server on `host`. */
  pid(host: string): Promise<number>;
  /** kill -9 of every Redis process (servers and sentinels), all within a few milliseconds. */
  killAll(): Promise<void>;
  /** Starts every server and sentinel again as it was started (from its append-only file, if any). */
  restartAll(): Promise<void>;
}

/**
 * A Sentinel-managed Redis on test hosts: the master on `m`, a replica and a sentinel on each of
 * `a` and `b`, a third sentinel on `c`. The tests and the API run in the root namespace and reach
 * every host; a partition cuts `m` from a, b and c only. With `minReplicas`, every server refuses
 * writes unless that many replicas are connected and at most `maxLagSeconds` behind (a master cut
 * off from its replicas stops accepting writes after that long).
 */
export async function sentinelHosts(dir: string, { minReplicas = 0, maxLagSeconds = 2, aof = false } = {}): Promise<SentinelHosts> {
  const hosts = await TestHosts.up(['m', 'a', 'b', 'c']);
  mkdirSync(dir, { recursive: true });
  const launches: { host: string; command: string[]; port: number }[] = [];
  const launch = async (host: string, command: string[], port: number) => {
    launches.push({ host, command, port });
    await hosts.exec(host, command);
  };
  const redisOn = async (host: string, extra: string[]) => {
    const path = join(dir, host);
    mkdirSync(path, { recursive: true });
    await launch(host, [
      'redis-server', '--bind', hosts.address(host), '--port', String(REDIS_PORT), '--protected-mode', 'no', '--save', '', '--dir', path,
      ...(aof ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
      '--repl-diskless-sync-delay', '0', '--min-replicas-to-write', String(minReplicas), '--min-replicas-max-lag', String(maxLagSeconds),
      '--daemonize', 'yes', '--pidfile', join(path, 'redis.pid'), '--logfile', join(path, 'redis.log'), ...extra,
    ], REDIS_PORT);
    await waitFor(`redis on ${host}`, () => redisAnswers(hosts, host, REDIS_PORT), 10_000, 50);
  };
  await redisOn('m', []);
  for (const r of ['a', 'b']) await redisOn(r, ['--replicaof', hosts.address('m'), String(REDIS_PORT)]);
  for (const s of ['a', 'b', 'c']) {
    const conf = join(dir, `sentinel-${s}.conf`);
    writeFileSync(
      conf,
      [
        `port ${SENTINEL_PORT}`, `bind ${hosts.address(s)}`, 'protected-mode no', 'daemonize yes',
        `pidfile ${join(dir, `sentinel-${s}.pid`)}`, `logfile ${join(dir, `sentinel-${s}.log`)}`, `dir ${dir}`,
        `sentinel monitor ${MASTER_NAME} ${hosts.address('m')} ${REDIS_PORT} 2`,
        `sentinel down-after-milliseconds ${MASTER_NAME} 1000`, `sentinel failover-timeout ${MASTER_NAME} 5000`,
        `sentinel parallel-syncs ${MASTER_NAME} 1`, '',
      ].join('\n'),
    );
    await launch(s, ['redis-server', conf, '--sentinel'], SENTINEL_PORT);
  }
  const sentinelSees = async (s: string) => {
    const out = await hosts.exec(s, ['redis-cli', '-h', hosts.address(s), '-p', String(SENTINEL_PORT), 'sentinel', 'master', MASTER_NAME]).catch(() => '');
    const lines = out.split('\n');
    const field = (name: string) => lines[lines.indexOf(name) + 1];
    return field('num-slaves') === '2' && field('num-other-sentinels') === '2';
  };
  for (const s of ['a', 'b', 'c']) await waitFor(`sentinel on ${s} to know 2 replicas and 2 sentinels`, () => sentinelSees(s), 30_000, 200);
  const byAddress = Object.fromEntries(Object.entries(hosts.addresses).map(([h, a]) => [a, h]));
  return {
    hosts,
    sentinels: ['a', 'b', 'c'].map((s) => `${hosts.address(s)}:${SENTINEL_PORT}`).join(','),
    others: ['a', 'b', 'c'],
    async master() {
      const out = await hosts.exec('c', ['redis-cli', '-h', hosts.address('c'), '-p', String(SENTINEL_PORT), 'sentinel', 'get-master-addr-by-name', MASTER_NAME]);
      return byAddress[out.split('\n')[0]!.trim()] ?? 'unknown';
    },
    async pid(host) {
      return Number(readFileSync(join(dir, host, 'redis.pid'), 'utf8').trim());
    },
    async killAll() {
      const pids = [...['m', 'a', 'b'].map((h) => join(dir, h, 'redis.pid')), ...['a', 'b', 'c'].map((h) => join(dir, `sentinel-${h}.pid`))].map((f) =>
        Number(readFileSync(f, 'utf8').trim()),
      );
      for (const pid of pids) process.kill(pid, 'SIGKILL');
    },
    async restartAll() {
      for (const { host, command, port } of launches) {
        await hosts.exec(host, command);
        await waitFor(`redis on ${host}:${port} again`, () => redisAnswers(hosts, host, port), 20_000, 50);
      }
    },
  };
}

export interface ClusterHosts {
  hosts: TestHosts;
  /** REDIS_CLUSTER_NODES for the service. */
  nodes: string;
  /** The host of the master that serves `key` now. */
  masterOf(key: string): Promise<string>;
  /** Every host but `host`. */
  othersThan(host: string): string[];
  /** Whether a replica of the master on `host` has taken its slots (as a majority node sees it). */
  failedOver(host: string): Promise<boolean>;
}

const CLUSTER_HOSTS = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7', 'n8'];

/**
 * A Redis Cluster on test hosts: masters on n0, n1, n2, two replicas of each on n3..n8 (as
 * `redis-cli --cluster create` pairs them). Two, so that a master that is cut off and replaced
 * leaves its successor a replica to confirm writes: ADMIT_DURABILITY=replica with one replica per
 * master stops admitting on those slots until the partition heals (NOREPLICAS). With a node
 * timeout of 2 s a cut-off master's replica is promoted by the majority.
 */
export async function clusterHosts(dir: string, { minReplicas = 0, maxLagSeconds = 2, aof = false } = {}): Promise<ClusterHosts> {
  const names = CLUSTER_HOSTS;
  const hosts = await TestHosts.up(names);
  mkdirSync(dir, { recursive: true });
  for (const host of names) {
    const path = join(dir, host);
    mkdirSync(path, { recursive: true });
    await hosts.exec(host, [
      'redis-server', '--bind', hosts.address(host), '--port', String(REDIS_PORT), '--protected-mode', 'no', '--save', '', '--dir', path,
      ...(aof ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
      '--cluster-enabled', 'yes', '--cluster-config-file', join(path, 'nodes.conf'), '--cluster-node-timeout', '2000',
      '--min-replicas-to-write', String(minReplicas), '--min-replicas-max-lag', String(maxLagSeconds), '--repl-diskless-sync-delay', '0',
      '--daemonize', 'yes', '--pidfile', join(path, 'redis.pid'), '--logfile', join(path, 'redis.log'),
    ]);
    await waitFor(`redis on ${host}`, () => redisAnswers(hosts, host, REDIS_PORT), 10_000, 50);
  }
  const node = (h: string) => `${hosts.address(h)}:${REDIS_PORT}`;
  const hostOf = (address: string) => names.find((h) => node(h) === address);
  await hosts.exec('n0', ['redis-cli', '--cluster', 'create', ...names.map(node), '--cluster-replicas', '2', '--cluster-yes']);
  const cli = (h: string, ...args: string[]) => hosts.exec(h, ['redis-cli', '-h', hosts.address(h), '-p', String(REDIS_PORT), ...args]);
  await waitFor('cluster state ok', async () => (await cli('n1', 'cluster', 'info').catch(() => '')).includes('cluster_state:ok'), 30_000, 200);
  await waitFor(
    'every replica in sync',
    async () => (await Promise.all(names.slice(3).map((h) => cli(h, 'info', 'replication').catch(() => '')))).every((i) => i.includes('master_link_status:up')),
    30_000,
    200,
  );
  return {
    hosts,
    nodes: names.slice(0, 3).map(node).join(','),
    async masterOf(key) {
      const slot = Number((await cli('n1', 'cluster', 'keyslot', key)).trim());
      // CLUSTER NODES lines: id address@bus flags master-id ping pong epoch link slot-ranges...
      const view = (await cli('n1', 'cluster', 'nodes')).split('\n');
      for (const line of view) {
        const [, address = '', flags = '', , , , , , ...ranges] = line.split(' ');
        if (!flags.includes('master')) continue;
        const owns = ranges.some((r) => {
          const [from, to = from] = r.split('-').map(Number);
          return from !== undefined && slot >= from && slot <= (to ?? from);
        });
        const host = hostOf(address.split('@')[0]!);
        if (owns && host) return host;
      }
      throw new Error(`no master serves slot ${slot}`);
    },
    othersThan: (host) => names.filter((h) => h !== host),
    async failedOver(host) {
      const view = await cli(names.find((h) => h !== host)!, 'cluster', 'nodes').catch(() => '');
      return view.split('\n').some((line) => line.includes(node(host)) && line.includes('fail') && !line.includes('fail?'));
    },
  };
}
