// A Patroni cluster of a test's own, laid out as in production: three etcd members, three Patroni
// members each managing a PostgreSQL, and HAProxy sending clients to whichever member Patroni's
// REST API calls the primary. For what support/private-postgres.ts cannot show: a failover decided
// by the cluster itself (leader lease expiry, synchronous standby promoted) and a planned switchover.
// Everything listens on 127.0.0.1, on free ports; the data lives in one temporary directory.
// scripts/install-patroni.sh installs Patroni, etcd and HAProxy (Debian packages) when missing.
import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePorts } from './free-ports.js';
import { run, type Running, start, stopOnce, type SystemUser, systemUser } from './processes.js';
import { waitFor } from './wait.js';

const HOST = '127.0.0.1';
export const BIN = '/usr/lib/postgresql/15/bin';
const INSTALL = 'scripts/install-patroni.sh';
const SIZE = 3;
/** Where killLeader() and switchover() write until a new leader takes (and in synchronous mode, its standby confirms) the write. */
const PROBE = 'patroni_probe';

export interface PatroniClusterOptions {
  /** Patroni's synchronous_mode: a commit waits for a standby, which alone may be promoted. */
  synchronous?: boolean;
}

export interface PatroniCluster {
  /** postgres://… through HAProxy: whichever member is the primary (the database left to the client). */
  url: string;
  /** The Patroni member name of the current leader. */
  leader(): Promise<string>;
  /** SIGKILLs the leader's PostgreSQL and its Patroni; resolves with the ms until a write through url succeeds on a new leader. */
  killLeader(): Promise<number>;
  /** A planned switchover to a (the synchronous) standby; resolves with the ms until a write through url succeeds on it. */
  switchover(): Promise<number>;
  /** Idempotent: every process down, the directory removed. */
  stop(): Promise<void>;
}

export interface Member {
  name: string;
  /** The address its PostgreSQL, its Patroni REST API (and, on test hosts, its etcd) listen on. */
  host: string;
  pgPort: number;
  restPort: number;
  dataDir: string;
  patroni?: Running;
  /** Killed by killLeader(): its postmaster.pid names a process that is gone (maybe reused). */
  killed: boolean;
}

interface ClusterMember {
  name: string;
  role: string;
  state: string;
  host: string;
  port: number;
}

/** A running cluster as the waits below see it. */
export interface ClusterView {
  /** Through HAProxy. */
  url: string;
  /** HAProxy's admin socket. */
  socket: string;
  synchronous: boolean;
  /**
   * Who must name the synchronous standby: Patroni (its sync key, which decides whom it may promote:
   * the default) or, after a partition's heal, PostgreSQL alone. There Patroni 3.0.2 may fail to
   * write its sync key for good ("Synchronous replication key updated by someone else", every
   * second) while PostgreSQL replicates synchronously all the same.
   */
  syncStandbyIn?: 'patroni' | 'postgres';
  /** The members in play: asked for the cluster's state, each expected to run and to stream from the leader but one. */
  members: Member[];
}

export async function install(): Promise<void> {
  const done = await run('bash', [INSTALL], { timeoutMs: 600_000 });
  if (done.code !== 0) throw new Error(`${INSTALL} failed (exit ${done.code}), so no Patroni cluster can start: ${done.stderr.trim()}`);
}

/** A member's view of the cluster (GET /cluster), from the first member that answers. */
async function clusterMembers(members: Member[]): Promise<ClusterMember[]> {
  for (const { host, restPort } of members) {
    try {
      const response = await fetch(`http://${host}:${restPort}/cluster`, { signal: AbortSignal.timeout(1_000) });
      if (response.ok) return ((await response.json()) as { members: ClusterMember[] }).members;
    } catch {
      // down or not started yet: ask the next one
    }
  }
  throw new Error('no Patroni member answers GET /cluster');
}

/** One statement on a connection of its own, given up after 2 s (a write may wait for a standby that is gone). */
export async function query(connection: pg.ClientConfig, text: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ ...connection, connectionTimeoutMillis: 2_000, query_timeout: 2_000 });
  client.on('error', () => {}); // the server may go away under it: the query fails instead
  try {
    await client.connect();
    return await client.query(text);
  } finally {
    await Promise.race([client.end(), new Promise((r) => setTimeout(r, 500))]).catch(() => {});
  }
}

/** The PostgreSQL port a write through `url` landed on, or null when none was accepted. */
async function write(url: string): Promise<number | null> {
  try {
    const { rows } = await query({ connectionString: url }, `INSERT INTO ${PROBE} DEFAULT VALUES RETURNING inet_server_port() AS port`);
    return Number(rows[0].port);
  } catch {
    return null;
  }
}

/** `show stat` on HAProxy's admin socket: the status (UP, DOWN, …) of each server of `backend`. */
function haproxyStatus(socket: string, backend: string): Promise<Map<string, string>> {
  return new Promise((resolve, reject) => {
    let csv = '';
    const conn = connect(socket, () => conn.end('show stat\n'));
    conn.setEncoding('utf8').on('data', (chunk: string) => (csv += chunk));
    conn.once('error', reject);
    conn.once('close', () => {
      const [header = '', ...rows] = csv.trim().split('\n');
      const columns = header.replace(/^# /, '').split(',');
      const [proxy, server, status] = ['pxname', 'svname', 'status'].map((c) => columns.indexOf(c)) as [number, number, number];
      const fields = rows.map((row) => row.split(',')).filter((f) => f[proxy] === backend && !['BACKEND', 'FRONTEND'].includes(f[server]!));
      resolve(new Map(fields.map((f) => [f[server]!, f[status]!])));
    });
  });
}

/** etcd member `index` of those whose client and peer addresses (host:port) are `clients` and `peers`. */
export function etcdArgs(dir: string, index: number, clients: string[], peers: string[], token: string): string[] {
  return [
    `--name=etcd${index}`,
    `--data-dir=${join(dir, `etcd${index}`)}`,
    `--listen-client-urls=http://${clients[index]}`,
    `--advertise-client-urls=http://${clients[index]}`,
    `--listen-peer-urls=http://${peers[index]}`,
    `--initial-advertise-peer-urls=http://${peers[index]}`,
    `--initial-cluster=${peers.map((peer, i) => `etcd${i}=http://${peer}`).join(',')}`,
    '--initial-cluster-state=new',
    `--initial-cluster-token=${token}`,
    '--log-level=warn',
  ];
}

/** Where patroniConfigFile() departs from the loopback cluster's configuration. */
export interface ConfigOverrides {
  /** The CIDR that holds every member and HAProxy (trusted in pg_hba). */
  network?: string;
  /** PostgreSQL parameters on top of those set here. */
  parameters?: Record<string, string>;
}

/** Patroni's configuration (JSON is YAML) for `member`. */
function patroniConfig(dir: string, member: Member, etcdHosts: string[], synchronous: boolean, { network = `${HOST}/32`, parameters = {} }: ConfigOverrides): object {
  return {
    scope: 'seckill',
    name: member.name,
    log: { level: 'INFO' },
    restapi: { listen: `${member.host}:${member.restPort}`, connect_address: `${member.host}:${member.restPort}` },
    etcd3: { hosts: etcdHosts },
    // Fast failover: the leader lease lasts 10 s, each member looks every second.
    bootstrap: {
      dcs: {
        ttl: 10,
        loop_wait: 1,
        retry_timeout: 5,
        synchronous_mode: synchronous,
        postgresql: { use_pg_rewind: true, use_slots: true },
      },
      initdb: [{ encoding: 'UTF8' }, { locale: 'C' }, 'no-sync'],
    },
    postgresql: {
      listen: `${member.host}:${member.pgPort}`,
      connect_address: `${member.host}:${member.pgPort}`,
      data_dir: member.dataDir,
      bin_dir: BIN,
      pgpass: join(dir, `${member.name}.pgpass`),
      authentication: { superuser: { username: 'postgres' }, replication: { username: 'postgres' }, rewind: { username: 'postgres' } },
      // Durable enough for data deleted after the test; one socket directory for all (ports differ).
      parameters: { unix_socket_directories: dir, fsync: 'off', wal_retrieve_retry_interval: '100ms', ...parameters },
      pg_hba: ['local all all trust', `host all all ${network} trust`, `host replication all ${network} trust`],
      basebackup: [{ checkpoint: 'fast' }, 'no-sync'],
    },
    watchdog: { mode: 'off' },
  };
}

/** Patroni's configuration file for `member`, readable by `user`; its path. */
export function patroniConfigFile(dir: string, member: Member, etcdHosts: string[], synchronous: boolean, user: SystemUser, overrides: ConfigOverrides = {}): string {
  const config = join(dir, `${member.name}.yml`);
  writeFileSync(config, JSON.stringify(patroniConfig(dir, member, etcdHosts, synchronous, overrides), null, 2));
  chownSync(config, user.uid, user.gid);
  return config;
}

function haproxyConfig(socket: string, writePort: number, members: Member[]): string {
  return [
    'global',
    '  maxconn 256', // else derived from the open files limit, with memory to match
    `  stats socket ${socket} mode 600 level admin`,
    'defaults',
    '  mode tcp',
    '  timeout connect 1s',
    '  timeout client 30m',
    '  timeout server 30m',
    '  timeout check 1s',
    'frontend write',
    `  bind ${HOST}:${writePort}`,
    '  default_backend primary',
    'backend primary',
    '  option httpchk OPTIONS /primary',
    '  http-check expect status 200',
    '  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions',
    ...members.map((m) => `  server ${m.name} ${m.host}:${m.pgPort} check port ${m.restPort}`),
    '',
  ].join('\n');
}

/** A postmaster's pid, and the id of its SysV shared memory segment, which it leaves behind when SIGKILLed. */
function postmaster(dataDir: string): { pid: number; segment: string | undefined } {
  const lines = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
  return { pid: Number(lines[0]), segment: lines[6]?.trim().split(/\s+/)[1] };
}

/** HAProxy in front of `members`, on 127.0.0.1:`writePort`. */
export function startHaproxy(dir: string, socket: string, writePort: number, members: Member[]): Running {
  const haproxyFile = join(dir, 'haproxy.cfg');
  writeFileSync(haproxyFile, haproxyConfig(socket, writePort, members));
  return start('haproxy', ['-db', '-f', haproxyFile], { cwd: dir });
}

/** Resolves once the etcd member at `client` (host:port) reports a healthy cluster; fails when one of `etcds` exits first. */
export async function etcdElected(client: string, etcds: Running[]): Promise<void> {
  await waitFor('the etcd cluster to elect a leader', async () => {
    const health = await fetch(`http://${client}/health`, { signal: AbortSignal.timeout(1_000) }).catch(() => undefined);
    const exited = etcds.find((etcd) => etcd.exited);
    if (exited) throw new Error(`etcd exited:\n${exited.lines.join('\n')}`);
    return health?.ok && ((await health.json()) as { health: string }).health === 'true';
  }, 30_000, 100);
}

/** PostgreSQL outlives its Patroni (it runs in a session of its own): each is stopped through pg_ctl. */
const pgctlStop = (m: Member) => ['stop', '-D', m.dataDir, '-m', 'immediate'];

/**
 * Every Patroni, then every PostgreSQL not killed. Patroni first, or it would start PostgreSQL again;
 * with its process group: an initdb or pg_basebackup it runs would go on writing into the directory being removed.
 */
export async function stopMembers(members: Member[], user: SystemUser, dir: string): Promise<void> {
  await Promise.all(members.map((m) => m.patroni && killGroup(m.patroni)));
  await Promise.all(members.filter((m) => !m.killed).map((m) => run(join(BIN, 'pg_ctl'), pgctlStop(m), { user, cwd: dir, timeoutMs: 30_000 })));
}

/** stopMembers() for the process's 'exit' event, where only synchronous code runs. */
export function stopMembersSync(members: Member[], user: SystemUser): void {
  for (const m of members) if (m.patroni) signalGroup(m.patroni);
  for (const m of members) if (!m.killed) spawnSync(join(BIN, 'pg_ctl'), pgctlStop(m), { ...user, stdio: 'ignore', timeout: 10_000 });
}

// Timestamped lines only, without the REST API's warnings: HAProxy resets the connection of each
// health check once it has the status, and Patroni logs a traceback for each.
const logged = (m: Member) => (m.patroni?.lines ?? []).filter((line) => /^\d{4}-/.test(line) && !line.includes('Exception happened during processing of request'));
/** Patroni's lines ("2026-12-06 20:16:33,124 INFO: …"), not its PostgreSQL's ("2026-12-06 20:16:33.124 UTC …"). */
const PATRONI_LINE = /^\S+ [\d:]+,\d{3} /;
const postgresLines = (m: Member) => logged(m).filter((l) => !PATRONI_LINE.test(l));
/** The last lines each of `members` logged, Patroni's and its PostgreSQL's apart (a replica stuck on its WAL logs ten lines a second), for a failure's message. */
export const memberLogs = (members: Member[]) =>
  members.map((m) => `${m.name}:\n${[...logged(m).filter((l) => PATRONI_LINE.test(l)).slice(-12), ...postgresLines(m).slice(-4)].join('\n')}`).join('\n');

/** The leader, as the first of `members` that answers sees it. */
export async function leaderOf(members: Member[]): Promise<ClusterMember> {
  const leader = (await clusterMembers(members)).find((m) => m.role === 'leader');
  if (!leader) throw new Error('the cluster has no leader');
  return leader;
}

/** Resolves when a write through url lands on a leader other than the one on `oldPort`, and HAProxy routes to it alone. */
export async function writable(view: ClusterView, began: number, oldPort: number, failed: () => unknown = () => undefined): Promise<number> {
  let ms = 0;
  await waitFor(() => `a write through ${view.url} on a new leader; the members say:\n${memberLogs(view.members)}`, async () => {
    const error = failed();
    if (error) throw error;
    const port = await write(view.url);
    if (port === null || port === oldPort) return false;
    ms = performance.now() - began;
    return true;
  }, 45_000, 50);
  await routedToLeaderAlone(view);
  return ms;
}

const runningLeader = (cluster: ClusterMember[]) => cluster.find((m) => m.role === 'leader' && m.state === 'running');

/** Whom the leader's PostgreSQL sends WAL to, by member name (Patroni names each standby's connection after it). */
async function standbysOf(leader: ClusterMember): Promise<{ name: string; state: string; sync_state: string }[]> {
  const connection = { host: leader.host, port: leader.port, user: 'postgres', database: 'postgres' };
  return (await query(connection, 'SELECT application_name AS name, state, sync_state FROM pg_stat_replication')).rows;
}

/** HAProxy still routes to a former leader for up to `fall` checks: until then a write may land there and fail. */
async function routedToLeaderAlone(view: ClusterView): Promise<void> {
  let seen = '';
  await waitFor(() => `HAProxy to route to the leader alone (${seen})`, async () => {
    const leader = runningLeader(await clusterMembers(view.members));
    const status = await haproxyStatus(view.socket, 'primary');
    seen = [...status].map(([name, s]) => `${name} ${s}`).join(', ');
    return leader !== undefined && [...status].every(([name, s]) => (name === leader.name) === s.startsWith('UP'));
  }, 15_000, 50);
}

/**
 * Whether there is a leader and every other member in play streams from it (the synchronous standby
 * among them, in synchronous mode), and what the cluster and the leader said.
 */
async function settled({ members, synchronous, syncStandbyIn = 'patroni' }: ClusterView): Promise<{ ok: boolean; seen: string }> {
  const cluster = await clusterMembers(members).catch(() => []);
  let seen = `members: ${cluster.map((m) => `${m.name} ${m.role} ${m.state}`).join(', ') || 'none answers'}`;
  const leader = runningLeader(cluster);
  if (!leader) return { ok: false, seen };
  const standbys = await standbysOf(leader);
  seen += `; ${leader.name} sends to: ${standbys.map((r) => `${r.name} ${r.state} ${r.sync_state}`).join(', ') || 'nobody'}`;
  const streaming = standbys.filter((r) => r.state === 'streaming').length === members.length - 1;
  const synced = syncStandbyIn === 'patroni' ? cluster.some((m) => m.role === 'sync_standby') : standbys.some((r) => r.sync_state === 'sync');
  return { ok: streaming && (!synchronous || synced), seen };
}

/**
 * Until then a replica may not follow the leader yet, and in synchronous mode Patroni promotes
 * nobody when the leader dies without a synchronous standby: each change waits for it.
 */
export async function untilSettled(view: ClusterView, timeoutMs = 90_000): Promise<void> {
  let seen = '';
  await waitFor(() => `a leader and ${view.members.length - 1} streaming replicas (${seen}); the members say:\n${memberLogs(view.members)}`, async () => {
    const exited = view.members.find((m) => m.patroni!.exited);
    if (exited) throw new Error(`patroni ${exited.name} exited:\n${memberLogs(view.members)}`);
    const state = await settled(view).catch((err: Error) => ({ ok: false, seen: err.message }));
    seen = state.seen;
    return state.ok;
  }, timeoutMs, 200);
}

/** What a standby logs ten times a second while its startup process retries WAL it cannot replay. */
const RETRYING_WAL = /LOG: {2}waiting for WAL to become available/;

/**
 * Every member but the leader that is not a running standby streaming from it, reinitialised from
 * the leader (Patroni's POST /reinitialize, what `patronictl reinit` sends). A former leader whose
 * WAL went past the history of the leader it now follows, and that Patroni did not rewind, either
 * fails to start ("startup process exited") or streams and retries WAL it cannot replay, forever
 * ("record with incorrect prev-link", "invalid magic number"). A member may get there only after
 * Patroni restarts it, so the members are looked at again while the cluster does not settle.
 * Resolves with the names reinitialised once every member streams.
 */
export async function reinitializeStragglers(view: ClusterView, rounds = 3): Promise<string[]> {
  const reinitialized: string[] = [];
  for (let round = 1; ; round++) {
    const cluster = await clusterMembers(view.members);
    const leader = runningLeader(cluster);
    if (!leader) throw new Error(`no running leader to reinitialise from; the members say:\n${memberLogs(view.members)}`);
    const streaming = new Set((await standbysOf(leader)).filter((r) => r.state === 'streaming').map((r) => r.name));
    const stuck = (m: Member) =>
      !streaming.has(m.name) || cluster.find((c) => c.name === m.name)?.state !== 'running' || postgresLines(m).slice(-2).some((l) => RETRYING_WAL.test(l));
    for (const m of view.members.filter((m) => m.name !== leader.name && !reinitialized.includes(m.name) && stuck(m))) {
      const response = await fetch(`http://${m.host}:${m.restPort}/reinitialize`, { method: 'POST', body: JSON.stringify({ force: true }), signal: AbortSignal.timeout(5_000) });
      if (!response.ok) throw new Error(`${m.name} did not start reinitialising: ${response.status} ${await response.text()}`);
      reinitialized.push(m.name);
    }
    try {
      await untilSettled(view, 30_000);
      return reinitialized;
    } catch (err) {
      if (round === rounds) throw err;
    }
  }
}

/** Settled, HAProxy routing to the leader, and the first write through it: the table writable() writes to. */
export async function untilReady(view: ClusterView): Promise<void> {
  await untilSettled(view);
  await routedToLeaderAlone(view);
  await query({ connectionString: view.url }, `CREATE TABLE ${PROBE} (at timestamptz NOT NULL DEFAULT now())`);
}

export async function startPatroniCluster({ synchronous = false }: PatroniClusterOptions = {}): Promise<PatroniCluster> {
  await install();
  const user = await systemUser('postgres');
  const dir = mkdtempSync(join(tmpdir(), 'seckill-patroni-'));
  chownSync(dir, user.uid, user.gid);
  // etcd clients, etcd peers, PostgreSQL, Patroni REST APIs (three each), HAProxy.
  const base = await freePorts(4 * SIZE + 1);
  const writePort = base + 4 * SIZE;
  const url = `postgres://postgres@${HOST}:${writePort}`;
  const socket = join(dir, 'haproxy.sock');
  const members: Member[] = Array.from({ length: SIZE }, (_, i) => ({
    name: `pg${i}`,
    host: HOST,
    pgPort: base + 2 * SIZE + i,
    restPort: base + 3 * SIZE + i,
    dataDir: join(dir, `pg${i}`),
    killed: false,
  }));
  const others: Running[] = [];

  const alive = () => members.filter((m) => !m.killed);
  const view = (): ClusterView => ({ url, socket, synchronous, members: alive() });
  const onExit = () => {
    stopMembersSync(members, user);
    for (const other of others) other.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  const stop = stopOnce(async () => {
    await stopMembers(members, user, dir);
    await Promise.all(others.map((other) => other.stop('SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  }, onExit);

  try {
    const token = `seckill-${base}`;
    const etcdHosts = members.map((_, i) => `${HOST}:${base + i}`);
    const etcdPeers = members.map((_, i) => `${HOST}:${base + SIZE + i}`);
    for (let i = 0; i < SIZE; i++) others.push(start('etcd', etcdArgs(dir, i, etcdHosts, etcdPeers, token), { cwd: dir }));
    await etcdElected(etcdHosts[0]!, others);

    for (const m of members) {
      // setsid: a process group of its own, which stop() kills with everything Patroni runs but PostgreSQL.
      m.patroni = start('setsid', ['patroni', patroniConfigFile(dir, m, etcdHosts, synchronous, user)], { user, cwd: dir, env: { HOME: dir } });
    }
    others.push(startHaproxy(dir, socket, writePort, members));
    await untilReady(view());
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    url,
    leader: async () => (await leaderOf(members)).name,
    async killLeader() {
      const leader = await leaderOf(members);
      const member = members.find((m) => m.name === leader.name)!;
      const { pid, segment } = postmaster(member.dataDir);
      const began = performance.now();
      signalGroup(member.patroni!);
      process.kill(pid, 'SIGKILL');
      member.killed = true;
      await member.patroni!.exit;
      if (segment) await run('ipcrm', ['-m', segment]);
      const ms = await writable(view(), began, leader.port);
      await untilSettled(view());
      return ms;
    },
    async switchover() {
      const cluster = await clusterMembers(members);
      const leader = cluster.find((m) => m.role === 'leader');
      // In synchronous mode Patroni switches over to the synchronous standby only.
      const candidate = cluster.find((m) => m.role === 'sync_standby') ?? cluster.find((m) => m.role === 'replica' && m.state === 'running');
      if (!leader || !candidate) throw new Error(`no leader or no candidate to switch over to: ${JSON.stringify(cluster)}`);
      const began = performance.now();
      let failure: Error | undefined;
      // Patroni answers once the new leader holds the lock: the write is tried meanwhile, which is what is measured.
      const { host, restPort } = members.find((m) => m.name === leader.name)!;
      const answered = fetch(`http://${host}:${restPort}/switchover`, {
        method: 'POST',
        body: JSON.stringify({ leader: leader.name, candidate: candidate.name }),
        signal: AbortSignal.timeout(30_000),
      }).then(async (response) => {
        if (!response.ok) failure = new Error(`POST /switchover answered ${response.status}: ${await response.text()}`);
      }, (err: Error) => void (failure = err));
      const ms = await writable(view(), began, leader.port, () => failure);
      await answered;
      if (failure) throw failure;
      await untilSettled(view());
      return ms;
    },
    stop,
  };
}

/** SIGKILLs a process started through setsid and all of its group; resolves once it has exited. */
async function killGroup(running: Running): Promise<void> {
  signalGroup(running);
  await running.exit;
}

function signalGroup(running: Running): void {
  try {
    if (!running.exited) process.kill(-running.child.pid!, 'SIGKILL');
  } catch {
    // exited meanwhile
  }
}
