// A MariaDB Galera cluster of a test's own: three nodes on 127.0.0.1, on free ports, data in one
// temporary directory, for what the shared server on 3306 must never see (a node killed, a node
// shut down under its clients). Clients reach one node, the writer, through a TcpProxy, as through
// HAProxy with one active backend and the others as backups; killWriter() and switchover() move it.
// Every server runs as the mysql system user with a configuration file of its own
// (--defaults-file), so that nothing of /etc/mysql, the shared server's, is read; the rsync state
// transfer script that a joining node runs is handed the same file.
import { chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Connection, createConnection, type RowDataPacket } from 'mysql2/promise';
import { freePorts } from './free-ports.js';
import { run, type Running, start, stopOnce, type SystemUser, systemUser } from './processes.js';
import { TcpProxy } from './tcp-proxy.js';
import { waitFor } from './wait.js';

const HOST = '127.0.0.1';
const MARIADBD = '/usr/sbin/mariadbd';
const PROVIDER = '/usr/lib/galera/libgalera_smm.so';
const SIZE = 3;
/** Ports per node: client, group communication, incremental and full state transfer. */
const PORTS_PER_NODE = 4;
/** The table of the writes that tell a writer that accepts them. */
const PROBE = 'galera_probe.writes';



export interface GaleraCluster {
  /** mysql://root@… through the proxy, no database: the writer, whichever node that is. */
  url: string;
  /** The index (0, 1, 2) of the node the proxy sends new connections to. */
  writer(): number;
  /**
   * SIGKILLs the writer's mariadbd and points the proxy at a surviving node; resolves with the ms
   * from the kill until a write through url succeeds there. The node stays down: only a cluster of
   * three can lose one this way and keep its quorum.
   */
  killWriter(): Promise<number>;
  /**
   * Points the proxy at another node, then shuts the old writer down cleanly (SIGTERM); resolves
   * with the ms until a write through url succeeds on the new writer. The old writer is then
   * started again and rejoins (a rolling restart's step): a clean leave shrinks the quorum's
   * count, and a cluster left at two would lose its quorum with the next node killed.
   */
  switchover(): Promise<number>;
  /** Idempotent: every server down, the proxy closed, the directory removed. */
  stop(): Promise<void>;
}

interface Node {
  index: number;
  name: string;
  port: number;
  dataDir: string;
  config: string;
  server?: Running;
  up: boolean;
}


const tmpDirOf = (dir: string, node: Node) => join(dir, `${node.name}.tmp`);

function nodeConfig(dir: string, node: Node, base: number): string {
  const [gcomm, ist, sst] = [1, 2, 3].map((offset) => base + node.index * PORTS_PER_NODE + offset);
  const peers = Array.from({ length: SIZE }, (_, i) => `${HOST}:${base + i * PORTS_PER_NODE + 1}`).join(',');
  // Failure detection left at Galera's defaults (evs.suspect_timeout 5 s): killWriter() measures
  // what production would see. The write-set cache, from which a node restarted by switchover()
  // catches up, is kept at a quarter of its default file (128M), which is plenty for a test.
  const provider = [`base_port=${gcomm}`, `gmcast.listen_addr=tcp://${HOST}:${gcomm}`, `ist.recv_addr=${HOST}:${ist}`, 'gcache.size=32M'];
  return [
    '[mysqld]',
    `datadir=${node.dataDir}`,
    // Its own: a server starting up deletes every "#sql…" file in its tmpdir, and in /tmp those
    // are the shared server's temporary tables, in use ("Error on delete of '/tmp/#sql-temptable…'").
    `tmpdir=${tmpDirOf(dir, node)}`,
    `socket=${join(dir, `${node.name}.sock`)}`,
    `pid-file=${join(dir, `${node.name}.pid`)}`,
    `bind-address=${HOST}`,
    `port=${node.port}`,
    'skip-name-resolve',
    // As the shared server: the engine's statements and collations behave the same.
    'character-set-server=utf8mb4',
    'collation-server=utf8mb4_general_ci',
    // Small and fast: the data is removed after the test.
    'innodb_buffer_pool_size=64M',
    'innodb_log_file_size=16M',
    'innodb_flush_log_at_trx_commit=0',
    // What Galera requires.
    'binlog_format=ROW',
    'innodb_autoinc_lock_mode=2',
    'default_storage_engine=InnoDB',
    'wsrep_on=ON',
    `wsrep_provider=${PROVIDER}`,
    'wsrep_cluster_name=seckill',
    `wsrep_cluster_address=gcomm://${peers}`,
    `wsrep_node_name=${node.name}`,
    `wsrep_node_address=${HOST}`,
    `wsrep_provider_options="${provider.join(';')}"`,
    `wsrep_sst_receive_address=${HOST}:${sst}`,
    'wsrep_sst_method=rsync',
    '',
  ].join('\n');
}

/** A connection that fails within `ms` when the server does not answer. */
async function connect(options: { uri: string } | { port: number }, ms: number): Promise<Connection> {
  const target = 'uri' in options ? { uri: options.uri } : { host: HOST, port: options.port, user: 'root' };
  return createConnection({ ...target, connectTimeout: ms });
}

/** Runs each statement in turn on a connection of its own (nodes come and go); the rows of the last. */
async function statements(target: { uri: string } | { port: number }, sqls: string[], ms = 10_000): Promise<RowDataPacket[]> {
  const conn = await connect(target, ms);
  conn.on('error', () => {}); // the server may go away under it: the statement fails instead
  let rows: RowDataPacket[] = [];
  try {
    for (const sql of sqls) [rows] = await conn.query<RowDataPacket[]>({ sql, timeout: ms });
  } catch (err) {
    conn.destroy();
    throw err;
  }
  // Closed cleanly: each connection dropped would be an "Aborted connection" warning in the node's log.
  await conn.end();
  return rows;
}

/** The port of the node a write through `url` was committed on, or null when none was. */
async function write(url: string): Promise<number | null> {
  try {
    // A write blocks while the cluster decides a lost node is gone: one attempt waits for that.
    const [row] = await statements({ uri: url }, [`INSERT INTO ${PROBE} () VALUES ()`, 'SELECT @@port AS port'], 20_000);
    return row ? Number(row.port) : null;
  } catch {
    return null;
  }
}

/** What a node says of itself: a member of a primary cluster of `size` nodes, in sync with it. */
async function synced(node: Node, size: number): Promise<boolean> {
  const rows = await statements({ port: node.port }, ["SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_cluster_size', 'wsrep_cluster_status', 'wsrep_local_state_comment', 'wsrep_ready')"], 2_000);
  const status = new Map(rows.map((r) => [r.Variable_name as string, r.Value as string]));
  return status.get('wsrep_cluster_size') === String(size) && status.get('wsrep_cluster_status') === 'Primary' && status.get('wsrep_local_state_comment') === 'Synced' && status.get('wsrep_ready') === 'ON';
}

/** SIGKILLs a server started through setsid with its whole group: a state transfer script and its rsync too. */
function killGroup(node: Node): void {
  try {
    if (node.server) process.kill(-node.server.child.pid!, 'SIGKILL');
  } catch {
    // the group is gone already
  }
}

export async function startGaleraCluster(): Promise<GaleraCluster> {
  const user = await systemUser('mysql');
  const dir = mkdtempSync(join(tmpdir(), 'seckill-galera-'));
  chownSync(dir, user.uid, user.gid);
  // Each node's four, then the proxy's.
  const base = await freePorts(SIZE * PORTS_PER_NODE + 1);
  const proxyPort = base + SIZE * PORTS_PER_NODE;
  const url = `mysql://root@${HOST}:${proxyPort}`;
  const proxy = new TcpProxy(HOST, base);
  const nodes: Node[] = Array.from({ length: SIZE }, (_, index) => {
    const name = `node${index}`;
    return { index, name, port: base + index * PORTS_PER_NODE, dataDir: join(dir, name), config: join(dir, `${name}.cnf`), up: false };
  });
  let writer = 0;

  const onExit = () => {
    nodes.forEach(killGroup);
    rmSync(dir, { recursive: true, force: true });
  };
  const stop = stopOnce(async () => {
    // SIGKILL: no clean shutdown for data about to be removed.
    nodes.forEach(killGroup);
    await Promise.all(nodes.map((n) => n.server?.exit));
    await proxy.stop();
    rmSync(dir, { recursive: true, force: true });
  }, onExit);

  const describe = () => nodes.map((n) => `${n.name}:\n${n.server?.lines.slice(-15).join('\n') ?? '(not started)'}`).join('\n');
  const up = () => nodes.filter((n) => n.up);

  /** Starts a node's mariadbd, in a process group of its own (setsid) for killGroup(). */
  const launch = (node: Node, ...args: string[]) => {
    node.server = start('setsid', [MARIADBD, `--defaults-file=${node.config}`, ...args], { user, cwd: dir });
    node.up = true;
  };
  /** Until every node up is in sync in a primary cluster of them all. */
  const untilSynced = () =>
    waitFor(() => `${up().length} nodes in sync; the nodes say:\n${describe()}`, async () => {
      const exited = up().find((n) => n.server!.exited);
      if (exited) throw new Error(`mariadbd ${exited.name} exited:\n${describe()}`);
      const states = await Promise.all(up().map((n) => synced(n, up().length).catch(() => false)));
      return states.every(Boolean);
    }, 60_000, 100);
  /** The ms since `began` until a write through url lands on the writer. */
  const writable = async (began: number) => {
    let ms = 0;
    await waitFor(() => `a write through ${url} on ${nodes[writer]!.name}; the nodes say:\n${describe()}`, async () => {
      if ((await write(url)) !== nodes[writer]!.port) return false;
      ms = performance.now() - began;
      return true;
    }, 60_000, 50);
    return ms;
  };
  /** A node up other than the writer, for the proxy to send to next. */
  const successor = () => {
    const next = up().find((n) => n.index !== writer);
    if (!next) throw new Error('no node up besides the writer');
    return next;
  };
  const moveWriter = (to: Node) => {
    writer = to.index;
    proxy.retarget(HOST, to.port);
  };

  try {
    for (const node of nodes) {
      writeFileSync(node.config, nodeConfig(dir, node, base));
      mkdirSync(tmpDirOf(dir, node));
      chownSync(tmpDirOf(dir, node), user.uid, user.gid);
    }
    // Only the first node is initialised: the others receive its data by state transfer.
    const install = await run('mariadb-install-db', [`--defaults-file=${nodes[0]!.config}`, '--auth-root-authentication-method=normal', '--skip-test-db'], { user, cwd: dir, timeoutMs: 60_000 });
    if (install.code !== 0) throw new Error(`mariadb-install-db failed: ${install.stdout}${install.stderr}`);
    for (const node of nodes.slice(1)) {
      mkdirSync(node.dataDir);
      chownSync(node.dataDir, user.uid, user.gid);
    }
    launch(nodes[0]!, '--wsrep-new-cluster');
    await untilSynced();
    // One at a time: two joining at once wait for each other (measured: slower than in turn).
    for (const node of nodes.slice(1)) {
      launch(node);
      await untilSynced();
    }
    await proxy.start(proxyPort);
    await statements({ uri: url }, ['CREATE DATABASE IF NOT EXISTS galera_probe', `CREATE TABLE IF NOT EXISTS ${PROBE} (id BIGINT AUTO_INCREMENT PRIMARY KEY)`]);
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    url,
    writer: () => writer,
    async killWriter() {
      if (up().length < SIZE) throw new Error(`killWriter() needs ${SIZE} nodes up (${up().length} are): the rest would lose the quorum`);
      const old = nodes[writer]!;
      const began = performance.now();
      killGroup(old);
      await old.server!.exit;
      old.up = false;
      moveWriter(successor());
      const ms = await writable(began);
      await untilSynced();
      return ms;
    },
    async switchover() {
      const old = nodes[writer]!;
      const began = performance.now();
      moveWriter(successor());
      const exited = old.server!.stop('SIGTERM');
      const ms = await writable(began);
      if ((await exited) !== 0) throw new Error(`mariadbd ${old.name} did not shut down cleanly:\n${describe()}`);
      launch(old);
      await untilSynced();
      return ms;
    },
    stop,
  };
}
