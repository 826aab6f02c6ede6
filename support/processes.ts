// Child processes for the tests and benches: a command run to completion, or a long-running one (a server, a
// worker, a redis-server) whose output is kept line by line and whose stop waits for its exit.
// `seckill` runs from the TypeScript sources through ./typescript.mjs (not bin/seckill.js, which
// would prefer a stale dist/ build), in the repository root, with the caller's environment on top of this one.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** `node --import <this> file.ts` runs a TypeScript file (support/typescript.mjs). */
export const TYPESCRIPT = ['--import', fileURLToPath(new URL('typescript.mjs', import.meta.url))];
const SECKILL = [...TYPESCRIPT, 'src/main.ts'];

export interface SystemUser {
  uid: number;
  gid: number;
}

export interface ProcessOptions {
  /** Added to this process's environment. */
  env?: Record<string, string>;
  cwd?: string;
  /** Runs it as this user (the tests run as root, which some servers refuse: PostgreSQL). */
  /** Run as this user (servers that refuse root, which the tests run as). */
  user?: SystemUser;
}

export interface Finished {
  /** The exit code; null when a signal ended the process. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command` to its end and reports how it ended, whatever the exit code (a test asserts
 * on it). Fails only when it cannot be started, or runs past `timeoutMs` (then it is killed).
 */
export function run(command: string, args: string[], options: ProcessOptions & { timeoutMs?: number } = {}): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: { ...process.env, ...options.env }, ...options.user, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            child.kill('SIGKILL');
            reject(new Error(`${command} ${args.join(' ')} still running after ${options.timeoutMs} ms; stderr: ${stderr}`));
          }, options.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** `seckill <args>` run to its end. */
export function runSeckill(args: string[], options: ProcessOptions & { timeoutMs?: number } = {}): Promise<Finished> {
  return run(process.execPath, [...SECKILL, ...args], options);
}

export interface Running {
  child: ChildProcess;
  /** Complete lines of stdout and stderr so far (when piped), in the order they arrived. */
  lines: string[];
  /** Resolves with the exit code (null after a signal) once the process has exited and its output is in. */
  exit: Promise<number | null>;
  readonly exited: boolean;
  /** The first line matching `pattern`, waiting for it; fails if the process exits first. */
  line(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Sends `signal` (SIGTERM by default) unless it has exited, and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `command` and keeps running. Output is piped and kept in `lines` unless `stdio` says
 * otherwise (e.g. 'ignore', or stderr inherited to show a worker's errors in the test output).
 */
export function start(command: string, args: string[], options: ProcessOptions & { stdio?: StdioOptions } = {}): Running {
  const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: { ...process.env, ...options.env }, ...options.user, stdio: options.stdio ?? 'pipe' });
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      partial += chunk;
      for (let end = partial.indexOf('\n'); end >= 0; end = partial.indexOf('\n')) {
        lines.push(partial.slice(0, end));
        partial = partial.slice(end + 1);
      }
    });
  }
  // Exited, and its output read to the end: when the pipes close, or a second after the exit if
  // something the process started still holds them.
  let finished = false;
  const exit = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      const done = () => {
        finished = true;
        resolve(code);
      };
      child.once('close', done);
      setTimeout(done, 1_000).unref();
    }),
  );
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  return {
    child,
    lines,
    exit,
    get exited() {
      return exited();
    },
    async line(pattern, timeoutMs = 60_000) {
      return waitFor(`a line matching ${pattern} from ${command} ${args.join(' ')}`, () => {
        for (const line of lines) {
          const match = pattern.exec(line);
          if (match) return match;
        }
        if (finished) throw new Error(`${command} ${args.join(' ')} exited before a line matching ${pattern}:\n${lines.join('\n')}`);
        return null;
      }, timeoutMs);
    },
    async stop(signal = 'SIGTERM') {
      if (!exited()) child.kill(signal);
      return exit;
    },
  };
}

/** `seckill <args>` started and left running. */
export function startSeckill(args: string[], options: ProcessOptions & { stdio?: StdioOptions } = {}): Running {
  return start(process.execPath, [...SECKILL, ...args], options);
}

/** A system user's ids (postgres, mysql: the servers run as them). */
export async function systemUser(name: string): Promise<SystemUser> {
  const id = async (flag: string) => {
    const found = await run('id', [flag, name]);
    if (found.code !== 0) throw new Error(`no ${name} system user: ${found.stderr}`);
    return Number(found.stdout);
  };
  return { uid: await id('-u'), gid: await id('-g') };
}

/**
 * `stop` made idempotent, with `stopNow`, its synchronous form (kill, remove), run instead when
 * this process exits first: no server or directory of a test outlives it.
 */
export function stopOnce(stop: () => Promise<void>, stopNow: () => void): () => Promise<void> {
  process.once('exit', stopNow);
  let stopping: Promise<void> | undefined;
  return () =>
    (stopping ??= (async () => {
      process.off('exit', stopNow);
      await stop();
    })());
}
