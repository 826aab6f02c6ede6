// A PostgreSQL primary and one asynchronous streaming standby of a test's own, on free ports, for
// what the shared server on 5432 must never see: a crash, a promotion, a standby left behind.
// Clients reach the primary through a proxy that follows the failover to the standby. The standby
// replicates through a proxy of its own, which pauseReplication() stalls: WAL stops reaching it
// while the primary keeps committing (pg_wal_replay_pause() would stop replay, not receipt, and
// the received WAL would be replayed on promotion).
import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePorts } from './free-ports.js';
import { run, type Running, start, stopOnce, type SystemUser, systemUser } from './processes.js';
import { TcpProxy } from './tcp-proxy.js';
import { waitFor } from './wait.js';

const HOST = '127.0.0.1';
const INSTALLS = '/usr/lib/postgresql';



export interface PostgresPairOptions {
  /** More server settings (name → value), for both servers: the standby becomes the primary. */
  settings?: Record<string, string>;
}

export interface PostgresPair {
  /** postgres://… through the proxy: the primary, and after failover() the promoted standby. */
  url: string;
  primaryPort: number;
  standbyPort: number;
  /** Holds back every byte between primary and standby (both ways) until resumeReplication(). */
  pauseReplication(): void;
  resumeReplication(): void;
  /** How far the standby's replay is behind the primary's WAL, in bytes. */
  lagBytes(): Promise<number>;
  /** Waits until the standby has replayed all the primary's WAL. */
  caughtUp(timeoutMs?: number): Promise<void>;
  /** SIGKILLs the primary, promotes the standby and points the url at it; resolves with the ms it took. */
  failover(): Promise<number>;
  /** Idempotent: both servers down, the proxies closed, the data directories removed. */
  stop(): Promise<void>;
}

/** The bin directory of the highest PostgreSQL version installed (Debian's layout). */
function binaries(): string {
  const versions = readdirSync(INSTALLS).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  if (!versions[0]) throw new Error(`no PostgreSQL version under ${INSTALLS}`);
  return join(INSTALLS, versions[0], 'bin');
}


/** Runs one of the PostgreSQL tools as `user` to its end; fails unless it exits 0. */
async function tool(path: string, args: string[], user: SystemUser, cwd: string): Promise<void> {
  const done = await run(path, args, { user, cwd, timeoutMs: 60_000 });
  if (done.code !== 0) throw new Error(`${path} ${args.join(' ')} failed: ${done.stderr}`);
}

/** The first row's first value of one statement, on a connection of its own (servers come and go). */
async function value(port: number, text: string, params: unknown[] = []): Promise<unknown> {
  const client = new pg.Client({ host: HOST, port, user: 'postgres', database: 'postgres' });
  await client.connect();
  try {
    const { rows } = await client.query(text, params);
    return Object.values(rows[0] as object)[0];
  } finally {
    await client.end();
  }
}

/**
 * The id of a running server's SysV shared memory segment (postmaster.pid's 7th line: key, id).
 * A SIGKILLed postmaster cannot remove it: without ipcrm each crash would leave one behind.
 */
function segmentId(dataDir: string): string {
  const id = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[6]?.trim().split(/\s+/)[1];
  if (!id) throw new Error(`no shared memory id in ${dataDir}/postmaster.pid`);
  return id;
}

export async function startPostgresPair({ settings = {} }: PostgresPairOptions = {}): Promise<PostgresPair> {
  const bin = binaries();
  const user = await systemUser('postgres');
  const dir = mkdtempSync(join(tmpdir(), 'seckill-postgres-'));
  chownSync(dir, user.uid, user.gid);
  const primaryDir = join(dir, 'primary');
  const standbyDir = join(dir, 'standby');
  const primaryPort = await freePorts(2);
  const standbyPort = primaryPort + 1;
  const clients = new TcpProxy(HOST, primaryPort);
  const replication = new TcpProxy(HOST, primaryPort);
  const servers: { server: Running; dataDir: string }[] = [];

  // Fast, local only, and the same on both: the standby becomes the primary.
  const serverSettings = {
    listen_addresses: HOST,
    unix_socket_directories: dir,
    fsync: 'off',
    wal_level: 'replica',
    hot_standby: 'on',
    wal_retrieve_retry_interval: '100ms',
    ...settings,
  };
  const launch = async (dataDir: string, port: number) => {
    const args = ['-D', dataDir, '-p', String(port), ...Object.entries(serverSettings).flatMap(([name, v]) => ['-c', `${name}=${v}`])];
    const server = start(join(bin, 'postgres'), args, { user, cwd: dir });
    servers.push({ server, dataDir });
    await server.line(/database system is ready to accept (read-only )?connections/, 30_000);
    return server;
  };

  // Immediate shutdown (SIGQUIT): no checkpoint for data about to be deleted, and unlike SIGKILL
  // the server still removes its shared memory. Also when this process exits without stop(), then
  // through pg_ctl, which waits until the server is gone: removing the directory while a server is
  // still shutting down leaves part of it behind.
  const onExit = () => {
    for (const { server, dataDir } of servers) {
      if (!server.exited) spawnSync(join(bin, 'pg_ctl'), ['stop', '-D', dataDir, '-m', 'immediate'], { ...user, stdio: 'ignore', timeout: 10_000 });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const stop = stopOnce(async () => {
    await Promise.all(servers.map(({ server }) => server.stop('SIGQUIT')));
    await Promise.all([clients.stop(), replication.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }, onExit);

  try {
    await tool(join(bin, 'initdb'), ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'], user, dir);
    const primary = await launch(primaryDir, primaryPort);
    await Promise.all([clients.start(), replication.start()]);
    // Through the replication proxy: -R writes its port into the standby's primary_conninfo.
    await tool(join(bin, 'pg_basebackup'), ['-h', HOST, '-p', String(replication.port), '-U', 'postgres', '-D', standbyDir, '-R', '--checkpoint=fast', '--no-sync'], user, dir);
    await launch(standbyDir, standbyPort);

    const lagBytes = async () => {
      const primaryLsn = await value(primaryPort, 'SELECT pg_current_wal_lsn()');
      const lag = await value(standbyPort, 'SELECT pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn())', [primaryLsn]);
      if (lag === null) throw new Error('the standby reports no replay position');
      // Below 0 when the standby replayed WAL written after the primary's position was read.
      return Math.max(0, Number(lag));
    };
    return {
      url: `postgres://postgres@${HOST}:${clients.port}/postgres`,
      primaryPort,
      standbyPort,
      pauseReplication: () => replication.stall(),
      resumeReplication: () => replication.resume(),
      lagBytes,
      async caughtUp(timeoutMs = 10_000) {
        let lag = -1;
        await waitFor(() => `the standby to catch up (${lag} bytes behind)`, async () => (lag = await lagBytes()) === 0, timeoutMs);
      },
      async failover() {
        const began = performance.now();
        const segment = segmentId(primaryDir);
        await primary.stop('SIGKILL');
        await run('ipcrm', ['-m', segment]);
        // What the stalled proxy still holds must not reach the standby later: lost with the primary.
        await replication.stop();
        const promoted = await value(standbyPort, 'SELECT pg_promote(true, 10)');
        if (promoted !== true) throw new Error('the standby was not promoted within 10 s');
        clients.retarget(HOST, standbyPort);
        return performance.now() - began;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** One statement on a connection of its own: across a failover, each one reconnects. */
export async function queryOnce(url: string, text: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text, params);
  } finally {
    await client.end();
  }
}
