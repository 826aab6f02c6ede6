// A MariaDB or PostgreSQL server of the bench's own, sized like a shop's that keeps a year of
// orders: the shared servers run with the default buffer pool (128 MiB), which a 10 M-row orders
// table with its indexes (~2 GiB) no longer fits, and they may not be reconfigured. Every other
// setting is the shared servers' (durability, character set, connections), so the buffer pool is
// the one difference. It runs on a free port with a data dir of its own under the system's
// temporary directory, and is stopped with that dir removed on every exit path (the end, an
// error, SIGINT, SIGTERM), unless kept.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createConnection } from 'mysql2/promise';
import pg from 'pg';
import { Redis } from 'ioredis';
import { createDb } from '../../src/infra/db/database.js';
import { waitFor } from '../../support/wait.js';
import { type Durability, readDurability } from '../drain/probes.js';
import { freePorts } from '../../support/free-ports.js';

export type PrivateServerKind = 'mariadb' | 'postgres';

export interface PrivateServer {
  kind: PrivateServerKind;
  /** The server's URL, without a database. */
  url: string;
  pid: number;
  dir: string;
  /** Stops it and removes its data dir; when kept, leaves both and says how to stop it. Idempotent. */
  close(): void;
}

export interface PrivateServerOptions {
  kind: PrivateServerKind;
  bufferPoolMiB: number;
  keep: boolean;
  log?: (line: string) => void;
}

/**
 * A year of 10 M orders takes about 2.7 GiB of table and index pages on MariaDB (orders 2.0,
 * user_quantities 0.6) and 3.5 GiB on PostgreSQL, ten times what 1 M took here. 4 GiB holds
 * MariaDB's whole year with the empty store and the runs' own orders beside it, as a shop would size
 * it (InnoDB reads with O_DIRECT: no page cache behind the pool); PostgreSQL finds what does not fit
 * in the OS page cache. A sixth of this 24 GiB box, the rest left to the engine, Redis and the others.
 */
export const DEFAULT_BUFFER_POOL = '4G';

const KINDS: readonly string[] = ['mariadb', 'postgres'] satisfies PrivateServerKind[];

export function parseKind(text: string): PrivateServerKind {
  if (!KINDS.includes(text)) throw new Error(`--private-server must be one of ${KINDS.join(', ')}`);
  return text as PrivateServerKind;
}

/** MiB in "4G", "4GiB", "512M", "1536MiB". */
export function parseMiB(text: string): number {
  const m = /^(\d+)\s*([MG])(i?B)?$/i.exec(text.trim());
  if (!m) throw new Error(`--buffer-pool "${text}": give a size such as 4G or 512M`);
  const mib = Number(m[1]) * (m[2]!.toUpperCase() === 'G' ? 1024 : 1);
  if (mib < 128) throw new Error('--buffer-pool must be at least 128M (the servers\' default)');
  return mib;
}

const execFileAsync = promisify(execFile);
const running = (pid: number) => {
  try {
    // A child that has exited but is not reaped yet is a zombie: it holds nothing.
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

/** Debian's layout: /usr/lib/postgresql/<major>/bin, the newest major installed. */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((d) => existsSync(join(root, d, 'bin', 'postgres'))) : [];
  if (majors.length === 0) throw new Error(`no PostgreSQL server under ${root}`);
  return join(root, majors.sort((a, b) => Number(b) - Number(a))[0]!, 'bin');
}

/** Both servers refuse to run as root: MariaDB is told it may, PostgreSQL runs as its own system user. */
const asRoot = process.getuid?.() === 0;
function postgresUser(): { uid: number; gid: number } | Record<string, never> {
  if (!asRoot) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

interface Recipe {
  url: string;
  /** Makes the data dir (a fresh, empty cluster). */
  init(): Promise<void>;
  command: string;
  args: string[];
  user: { uid?: number; gid?: number };
  answers(): Promise<boolean>;
  /** The fastest stop that leaves nothing behind: the data is thrown away, so nothing is flushed. */
  stopSignal: NodeJS.Signals;
}

function mariadb(dir: string, port: number, bufferPoolMiB: number): Recipe {
  const data = join(dir, 'data');
  const user = asRoot ? ['--user=root'] : [];
  return {
    url: `mysql://root@127.0.0.1:${port}`,
    async init() {
      await execFileAsync('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...user]);
    },
    command: 'mariadbd',
    // --no-defaults: none of /etc/mysql's settings of the shared server (its datadir, port, socket);
    // the character set and name resolution it sets are set again here.
    args: [
      // --tmpdir its own: a server starting up deletes every "#sql…" file in its tmpdir, in /tmp the shared server's.
      '--no-defaults', `--datadir=${data}`, `--tmpdir=${dir}`, `--port=${port}`, `--socket=${join(dir, 'sock')}`, `--pid-file=${join(dir, 'pid')}`,
      '--bind-address=127.0.0.1', '--skip-networking=0', '--skip-name-resolve', '--character-set-server=utf8mb4',
      '--collation-server=utf8mb4_general_ci', `--innodb-buffer-pool-size=${bufferPoolMiB}M`, ...user,
    ],
    user: {},
    async answers() {
      const conn = await createConnection({ host: '127.0.0.1', port, user: 'root' }).catch(() => null);
      await conn?.end();
      return conn !== null;
    },
    // No SysV IPC to release: a kill leaves nothing but the data dir.
    stopSignal: 'SIGKILL',
  };
}

function postgres(dir: string, port: number, bufferPoolMiB: number): Recipe {
  const bin = postgresBin();
  const data = join(dir, 'data');
  const user = postgresUser();
  if (user.uid !== undefined) chownSync(dir, user.uid, user.gid);
  return {
    url: `postgres://postgres@127.0.0.1:${port}`,
    async init() {
      // The shared cluster's encoding and locale; --no-sync: the cluster is thrown away after the run.
      await execFileAsync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8', '--no-sync'], user);
    },
    command: join(bin, 'postgres'),
    args: ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', `shared_buffers=${bufferPoolMiB}MB`],
    user,
    async answers() {
      const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
      client.on('error', () => {});
      const ok = await client.connect().then(() => true, () => false);
      await client.end().catch(() => undefined);
      return ok;
    },
    // Immediate shutdown: the postmaster stops its backends and releases its shared memory, flushing nothing.
    stopSignal: 'SIGQUIT',
  };
}

/** Blocks the thread for `ms` (the exit paths cannot wait on the event loop). */
const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

export async function startPrivateServer(o: PrivateServerOptions): Promise<PrivateServer> {
  const log = o.log ?? ((line: string) => console.log(line));
  const port = await freePorts(1);
  const dir = mkdtempSync(join(os.tmpdir(), `history-${o.kind}-`));
  const serverLog = join(dir, 'server.log');
  let recipe: Recipe | null = null;
  let pid = 0;
  let kept = o.keep;
  let closed = false;

  // Synchronous, so that a signal's exit runs it to the end: once the server goes, the bench's
  // connections to it fail, and an error nobody listens for would end the process half-way.
  const close = () => {
    if (closed) return;
    closed = true;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('exit', close);
    if (kept) {
      log(`kept: the private ${o.kind} server at ${recipe!.url} (pid ${pid}, data dir ${dir}); to stop it: kill ${pid}, then rm -rf ${dir}`);
      return;
    }
    if (pid && running(pid)) {
      process.kill(pid, recipe!.stopSignal);
      for (const deadline = Date.now() + 30_000; running(pid) && Date.now() < deadline; ) sleepSync(20);
      if (running(pid)) {
        process.kill(-pid, 'SIGKILL');
        log(`the private ${o.kind} server (pid ${pid}) did not exit within 30 s: killed`);
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // The signals' default would end the process at once, skipping the callers' finally blocks.
  const onSignal = (signal: NodeJS.Signals) => {
    close();
    process.exit(128 + os.constants.signals[signal]);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.once('exit', close);

  try {
    recipe = (o.kind === 'mariadb' ? mariadb : postgres)(dir, port, o.bufferPoolMiB);
    await recipe.init();
    const out = openSync(serverLog, 'a');
    // A process group of its own: a Ctrl-C at the terminal reaches the bench alone, which stops the server.
    const child = spawn(recipe.command, recipe.args, { ...recipe.user, detached: true, stdio: ['ignore', out, out] });
    closeSync(out);
    let spawnError: Error | null = null;
    child.once('error', (err) => (spawnError = err));
    pid = child.pid ?? 0;
    if (o.keep) child.unref();
    const answers = recipe.answers;
    await waitFor(
      () => `the private ${o.kind} server to answer on port ${port}`,
      async () => {
        if (!running(pid)) throw new Error(`the private ${o.kind} server did not start: ${spawnError?.message ?? readFileSync(serverLog, 'utf8').split('\n').slice(-20).join('\n')}`);
        return answers();
      },
      120_000,
      100,
    );
  } catch (err) {
    // A server that never answered is not worth keeping.
    kept = false;
    close();
    throw err;
  }
  log(`private ${o.kind} server: ${recipe.url}, buffer pool ${o.bufferPoolMiB} MiB, data dir ${dir} (pid ${pid})`);
  return { kind: o.kind, url: recipe.url, pid, dir, close };
}

/** What the server runs on (version, buffer pool, durability), as read from the server itself. */
export async function readServerSettings(databaseUrl: string, redisUrl: string): Promise<Durability> {
  const db = createDb(databaseUrl, 1);
  const redis = new Redis(redisUrl);
  try {
    return await readDurability(db, redis);
  } finally {
    redis.disconnect();
    await db.destroy();
  }
}

/** One line of them, byte counts in MiB. */
export const settingsLine = (d: Durability): string =>
  `${d.version}; ${Object.entries(d.settings).map(([k, v]) => `${k}=${/^\d{7,}$/.test(v) ? `${Number(v) / 2 ** 20} MiB` : v}`).join(', ')}`;
