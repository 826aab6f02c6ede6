// The Patroni cluster of support/patroni-cluster.ts with each member on a test host of its own
// (bench/chaos/hosts.ts): on each, one etcd member, one Patroni and its PostgreSQL, all on the
// host's address; HAProxy in the root namespace on 127.0.0.1, checking each member's REST API
// across the bridge. For the db-primary-partition fault: the primary cut from its peers and from
// etcd, still reachable from the proxy side until it demotes itself (Patroni demotes a leader
// that cannot renew its leader key).
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../../support/free-ports.js';
import {
  type ClusterView,
  etcdArgs,
  etcdElected,
  install,
  leaderOf,
  type Member,
  type PatroniCluster,
  memberLogs,
  patroniConfigFile,
  reinitializeStragglers,
  query,
  startHaproxy,
  stopMembers,
  stopMembersSync,
  untilReady,
  untilSettled,
  writable,
} from '../../support/patroni-cluster.js';
import { type ProcessOptions, type Running, start, stopOnce, systemUser } from '../../support/processes.js';
import { waitFor } from '../../support/wait.js';
import { TestHosts } from './hosts.js';

const HOSTS = ['pg0', 'pg1', 'pg2'];
const ETCD_CLIENT_PORT = 2379;
const ETCD_PEER_PORT = 2380;
const REST_PORT = 8008;
/** Plus the member's index: one socket directory serves all, and a write's inet_server_port() names the member it landed on. */
const PG_PORT = 5433;

/** The cluster of support/patroni-cluster.ts (the member names are the test hosts'), partitioned rather than killed. */
export interface PatroniHosts extends Pick<PatroniCluster, 'url' | 'leader' | 'stop'> {
  /**
   * Cuts the leader's host from the other two, both ways (HAProxy still reaches it); resolves with the
   * ms until a write through url succeeds on a new leader, once the old one has demoted itself too.
   */
  partitionLeader(): Promise<number>;
  /**
   * Removes the cut; resolves once every member streams from the leader (rewound by Patroni, or
   * reinitialised where Patroni left one stuck), saying which member leads: the old leader may be
   * the leader again (see below).
   */
  heal(): Promise<string>;
}

export async function startPatroniOnHosts({ synchronous = false }: { synchronous?: boolean } = {}): Promise<PatroniHosts> {
  await install();
  const user = await systemUser('postgres');
  const dir = mkdtempSync(join(tmpdir(), 'seckill-patroni-hosts-'));
  chownSync(dir, user.uid, user.gid);
  const url = `postgres://postgres@127.0.0.1:${await freePorts(1)}`;
  const socket = join(dir, 'haproxy.sock');
  const members: Member[] = [];
  let hosts: TestHosts | undefined;
  let haproxy: Running | undefined;
  /** The member whose host is cut off, while it is. */
  let cut: Member | undefined;

  // Registered before TestHosts.up hooks its own (the first time), so that PostgreSQL is stopped before its host goes.
  const onExit = () => {
    stopMembersSync(members, user);
    haproxy?.child.kill('SIGKILL');
    hosts?.downSync();
    rmSync(dir, { recursive: true, force: true });
  };
  const stop = stopOnce(async () => {
    await stopMembers(members, user, dir);
    await hosts?.down(); // and etcd with it
    await haproxy?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }, onExit);

  const view = (inPlay: Member[]): ClusterView => ({ url, socket, synchronous, members: inPlay });
  const reachable = () => members.filter((m) => m !== cut);

  try {
    const up = await TestHosts.up(HOSTS);
    hosts = up;
    // setsid: a process group of its own, which stopMembers() kills with everything Patroni runs but PostgreSQL.
    const startOn = (host: string, command: string[], options: ProcessOptions = {}) => start('setsid', up.argv(host, command), { cwd: dir, ...options });
    members.push(...HOSTS.map((name, i) => ({ name, host: up.address(name), pgPort: PG_PORT + i, restPort: REST_PORT, dataDir: join(dir, name), killed: false })));
    const etcdHosts = members.map((m) => `${m.host}:${ETCD_CLIENT_PORT}`);
    const etcdPeers = members.map((m) => `${m.host}:${ETCD_PEER_PORT}`);
    const etcds = members.map((m, i) => startOn(m.name, ['etcd', ...etcdArgs(dir, i, etcdHosts, etcdPeers, `seckill-hosts-${up.net}`)]));
    await etcdElected(etcdHosts[0]!, etcds);

    const overrides = {
      // The hosts' /24 (scripts/test-hosts.sh): the members, and the root namespace HAProxy connects from.
      network: `${members[0]!.host.replace(/\.\d+$/, '.0')}/24`,
      // A leader that shuts down waits for its walsenders to send the shutdown checkpoint; across a
      // cut they wait until this timeout (60 s by default), and the demotion with them.
      parameters: { wal_sender_timeout: '5s' },
    };
    for (const m of members) {
      const config = patroniConfigFile(dir, m, etcdHosts, synchronous, user, overrides);
      // Entering a namespace takes root: the user is dropped inside it.
      m.patroni = startOn(m.name, ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', 'patroni', config], { env: { HOME: dir } });
    }
    haproxy = startHaproxy(dir, socket, Number(new URL(url).port), members);
    await untilReady(view(members));
  } catch (err) {
    await stop();
    throw err;
  }

  /** Its PostgreSQL (reached directly, not through HAProxy) answers as a standby. */
  const demoted = (m: Member) =>
    waitFor(() => `${m.name} to demote itself; it says:\n${memberLogs([m])}`, async () => {
      const connection = { host: m.host, port: m.pgPort, user: 'postgres', database: 'postgres' };
      return query(connection, 'SELECT pg_is_in_recovery() AS standby').then(({ rows }) => rows[0].standby === true, () => false);
    }, 30_000, 100);

  return {
    url,
    // A cut-off member may still believe itself the leader: the others are asked.
    leader: async () => (await leaderOf(reachable())).name,
    async partitionLeader() {
      const leader = await leaderOf(reachable());
      const member = members.find((m) => m.name === leader.name)!;
      const began = performance.now();
      await hosts!.cut(member.name, members.filter((m) => m !== member).map((m) => m.name));
      cut = member;
      const ms = await writable(view(reachable()), began, member.pgPort);
      await demoted(member);
      return ms;
    },
    async heal() {
      const old = cut;
      const leader = old && (await leaderOf(reachable())).name;
      await hosts!.heal();
      cut = undefined;
      // 6 to 13 s when every member rejoins by itself.
      const healed = { ...view(members), syncStandbyIn: 'postgres' as const };
      const reinitialized = await untilSettled(healed, 30_000).then(() => [], () => reinitializeStragglers(healed));
      // Patroni 3.0.2 (Debian 12) may take the key back: right after the heal the old leader reads its
      // own etcd member, not caught up yet (serializable reads), finds itself the leader, and renews
      // the key with an unconditional put (patroni/patroni#2689, fixed after 3.0.2).
      const now = (await leaderOf(members)).name;
      const led = old && now === old.name ? `${old.name} took the leader key back from ${leader} after the heal (what ${leader} committed meanwhile lost)` : `${now} leads, ${old?.name} follows it`;
      return reinitialized.length ? `${led}; ${reinitialized.join(' and ')} reinitialised from ${now} (WAL past its history, not rewound)` : led;
    },
    stop,
  };
}
