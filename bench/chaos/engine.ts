// The engine under a campaign: API processes (`seckill serve`, each with its workers), their
// database and key prefix of their own, the tokens to talk to them, and what an operator asks
// afterwards (is it drained, does its own audit pass).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { createTokenService } from '../../src/auth/tokens.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { freePorts } from '../../support/free-ports.js';
import { type Running, runSeckill, start, startSeckill } from '../../support/processes.js';
import { waitFor } from '../../support/wait.js';

export const JWT_SECRET = 'chaos-campaign-secret-of-at-least-32-bytes';
const tokens = createTokenService(JWT_SECRET);
const adminToken = tokens.sign({ userId: 1n, admin: true }, 3_600);
const buyerTokens = new Map<string, Promise<string>>();
export const buyerToken = (userId: string) => {
  let t = buyerTokens.get(userId);
  if (!t) buyerTokens.set(userId, (t = tokens.sign({ userId: BigInt(userId), admin: false }, 3_600)));
  return t;
};

export interface ApiProcess {
  origin: string;
  process: Running;
}

export interface Engine {
  env: Record<string, string>;
  databaseUrl: string;
  prefix: string;
  apis: ApiProcess[];
  createVoucher(body: Record<string, unknown>): Promise<string>;
  stats(voucherId: string): Promise<Record<string, any>>;
  /** Waits until nothing is in flight and the stream backlog is stored. */
  drained(voucherId: string, timeoutMs: number): Promise<void>;
  /** The engine's own audit of both stores (`seckill audit`), reconciling first as an operator would. */
  audit(voucherId: string): Promise<{ ok: boolean; detail: string }>;
  /** Stops the API processes (their output kept in logDir) and drops the database. */
  stop(logDir?: string): Promise<void>;
}

export interface EngineOptions {
  label: string;
  /** Environment of every API process (Redis target, durability, ...). */
  env: Record<string, string>;
  /** The database server without a database (mysql://… or postgres://…). */
  databaseServer: string;
  apis: number;
  /** A command prefix for one API process (e.g. faketime), by index. */
  wrap?: (index: number) => string[] | null;
}

async function json(origin: string, method: 'GET' | 'POST', path: string, token: string | null, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await request(`${origin}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : null };
}

export async function startEngine({ label, env, databaseServer, apis: count, wrap }: EngineOptions): Promise<Engine> {
  const name = `ch_${label.replace(/[^A-Za-z0-9]/g, "_").slice(0, 16)}_${Math.floor(Math.random() * 1e8)}`;
  const databaseUrl = `${databaseServer}/${name}`;
  const common = {
    DATABASE_URL: databaseUrl,
    REDIS_PREFIX: name,
    JWT_SECRET,
    LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn',
    HOST: '127.0.0.1',
    // A buyer retries through a fault; buckets would answer 429 and blur what the fault did.
    BUCKET_USER_RATE: '0',
    BUCKET_VOUCHER_RATE: '0',
    IP_RATE_LIMIT: '0',
    RECONCILE_INTERVAL_MS: '2000',
    CLAIM_IDLE_MS: '2000',
    ...env,
  };
  const base = await freePorts(count);
  const apis: ApiProcess[] = [];
  const stopAll = async () => {
    await Promise.all(apis.map((a) => a.process.stop('SIGTERM')));
  };
  try {
    // The first process migrates; the others start once it is up.
    for (let i = 0; i < count; i++) {
      const processEnv = { ...common, PORT: String(base + i) };
      const prefix = wrap?.(i);
      const args = ['serve', ...(i > 0 ? ['--no-migrate'] : [])];
      const proc = prefix
        ? start(prefix[0]!, [...prefix.slice(1), process.execPath, '--import', 'tsx', 'src/main.ts', ...args], { env: processEnv })
        : startSeckill(args, { env: processEnv });
      const origin = `http://127.0.0.1:${base + i}`;
      apis.push({ origin, process: proc });
      await waitFor(
        () => `API ${i} to be ready:\n${proc.lines.slice(-20).join('\n')}`,
        async () => {
          if (proc.exited) throw new Error(`API ${i} exited:\n${proc.lines.slice(-30).join('\n')}`);
          return (await json(origin, 'GET', '/readyz', null).catch(() => ({ status: 0 }))).status === 200;
        },
        60_000,
        200,
      );
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  const origin = () => apis[0]!.origin;
  const engine: Engine = {
    env: common,
    databaseUrl,
    prefix: name,
    apis,
    async createVoucher(body) {
      const res = await json(origin(), 'POST', '/api/vouchers', await adminToken, body);
      if (res.status !== 201) throw new Error(`voucher not created: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.id as string;
    },
    async stats(voucherId) {
      for (const api of apis) {
        const res = await json(api.origin, 'GET', `/api/vouchers/${voucherId}/stats`, await adminToken).catch(() => null);
        if (res?.status === 200) return res.body;
      }
      throw new Error('no API process answered the stats');
    },
    async drained(voucherId, timeoutMs) {
      await waitFor(`voucher ${voucherId} drained`, async () => (await engine.stats(voucherId).catch(() => null))?.inFlight === 0, timeoutMs, 250);
    },
    async audit(voucherId) {
      for (const api of apis) await json(api.origin, 'POST', `/api/vouchers/${voucherId}/reconcile`, await adminToken).catch(() => null);
      const env = { ...common, PORT: '0' };
      const out = await runSeckill(['audit', '--voucher', voucherId, '--json'], { env, timeoutMs: 60_000 });
      let ok = false;
      try {
        ok = JSON.parse(out.stdout).ok === true;
      } catch {
        // not JSON: the detail says why
      }
      return { ok: ok && out.code === 0, detail: (out.stdout + out.stderr).slice(0, 2_000) };
    },
    async stop(logDir) {
      await stopAll();
      if (logDir) apis.forEach((a, i) => writeFileSync(join(logDir, `api-${i + 1}.log`), `${a.process.lines.join('\n')}\n`));
      await dropDatabase(databaseUrl).catch(() => undefined);
    },
  };
  return engine;
}

export { adminToken, json };
