// Server CPU per claim with HS256, RS256 and ES256 bearer tokens, each buyer reusing its token as in
// a sale, in one run: interleaved rounds, ratios against HS256.
//   node --import tsx bench/identity/run.ts [--rounds 6] [--buyers 2000] [--repeats 10] [--connections 50] [--json <file>]
// The server (server.ts) runs in a process of its own with JWT_JWKS_URL pointing at a JWKS this
// process serves on loopback. Every round sends, for each algorithm in turn (the order rotates from
// round to round), `repeats` claims from each of `buyers` new buyers (their first claim admitted, the
// others 409 LIMIT_EXCEEDED: the same answers for every algorithm), buyer after buyer within each
// pass. CPU is the server process's user + system time during that load (process.cpuUsage, asked over
// IPC before and after). At the end Redis must show one unit and one buyer per admitted claim.
// BENCH_DATABASE_SERVER picks the database server (default mysql://root@127.0.0.1:3306).
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { Pool } from 'undici';
import { createTokenService } from '../../src/auth/tokens.js';
import { machineInfo } from '../../src/loadgen/machine.js';
import { readFlags } from '../support/flags.js';
import { median } from '../support/stats.js';
import { nextMessage } from '../support/child-messages.js';

const { rounds, buyers, repeats, connections, json } = readFlags({ rounds: 6, buyers: 2_000, repeats: 10, connections: 50, json: null });
const ALGS = ['HS256', 'RS256', 'ES256'] as const;
type Alg = (typeof ALGS)[number];

// The shop's identity provider: one key per asymmetric algorithm.
const secret = 'bench-identity-secret-of-32-bytes-or-more';
const keys = { RS256: await generateKeyPair('RS256'), ES256: await generateKeyPair('ES256') };
const jwks = JSON.stringify({ keys: await Promise.all((['RS256', 'ES256'] as const).map(async (alg) => ({ ...(await exportJWK(keys[alg].publicKey)), kid: alg, alg, use: 'sig' }))) });
const provider = createServer((_request, response) => void response.writeHead(200, { 'content-type': 'application/json' }).end(jwks));
provider.listen(0, '127.0.0.1');
await once(provider, 'listening');

const hs256 = createTokenService(secret);
async function sign(alg: Alg, userId: number): Promise<string> {
  if (alg === 'HS256') return hs256.sign({ userId: BigInt(userId), admin: false }, 3_600);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ sub: String(userId), iat: now, exp: now + 3_600 }).setProtectedHeader({ alg, kid: alg, typ: 'JWT' }).sign(keys[alg].privateKey);
}

const name = `bench_identity_${process.pid}`;
const databaseServer = process.env.BENCH_DATABASE_SERVER || 'mysql://root@127.0.0.1:3306';
const server = fork(fileURLToPath(new URL('./server.ts', import.meta.url)), [], {
  execArgv: ['--import', 'tsx'],
  env: {
    ...process.env,
    BENCH_DATABASE_URL: `${databaseServer}/${name}`,
    BENCH_REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
    BENCH_PREFIX: name,
    BENCH_SECRET: secret,
    BENCH_JWKS_URL: `http://127.0.0.1:${(provider.address() as AddressInfo).port}/jwks.json`,
  },
});
/** Asks the server (`send`) or waits for what it says by itself, e.g. 'ready'. */
const ask = <T extends Record<string, unknown>>(type: string, send = true) => {
  const answer = nextMessage<T>(server, type);
  if (send) server.send({ type });
  return answer;
};

interface Round {
  round: number;
  alg: Alg;
  requests: number;
  cpuUs: number;
  usPerRequest: number;
  wallS: number;
  statuses: Record<number, number>;
}

try {
  const { port, voucherId } = await ask<{ port: number; voucherId: string }>('ready', false);
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections });
  // Every buyer of every round and algorithm, signed before anything is measured.
  let nextUser = 1_000;
  const plan: { round: number; alg: Alg; tokens: string[] }[] = [];
  for (let round = 1; round <= rounds; round++) {
    for (let i = 0; i < ALGS.length; i++) {
      const alg = ALGS[(i + round - 1) % ALGS.length]!;
      plan.push({ round, alg, tokens: await Promise.all(Array.from({ length: buyers }, () => sign(alg, nextUser++))) });
    }
  }
  const load = async (tokens: string[]) => {
    const requests = Array.from({ length: repeats }, () => tokens).flat();
    const statuses: Record<number, number> = {};
    let i = 0;
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (i < requests.length) {
          const res = await pool.request({ method: 'POST', path: `/api/vouchers/${voucherId}/orders`, headers: { authorization: `Bearer ${requests[i++]}` } });
          await res.body.dump();
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        }
      }),
    );
    return { requests: requests.length, statuses };
  };
  // One unmeasured pass of each warms the JIT and the keys' import.
  for (const alg of ALGS) await load(await Promise.all(Array.from({ length: 300 }, () => sign(alg, nextUser++))));
  const warmBuyers = nextUser - 1_000 - rounds * ALGS.length * buyers;

  const results: Round[] = [];
  for (const { round, alg, tokens } of plan) {
    const before = (await ask<{ us: number }>('cpu')).us;
    const started = performance.now();
    const { requests, statuses } = await load(tokens);
    const wallS = (performance.now() - started) / 1000;
    const cpuUs = (await ask<{ us: number }>('cpu')).us - before;
    if (statuses[202] !== buyers || (statuses[409] ?? 0) !== requests - buyers) throw new Error(`round ${round} ${alg}: unexpected answers ${JSON.stringify(statuses)}`);
    results.push({ round, alg, requests, cpuUs, usPerRequest: cpuUs / requests, wallS, statuses });
    console.log(`round ${round} ${alg}: ${requests} claims, server CPU ${(cpuUs / 1000).toFixed(0)} ms, ${(cpuUs / requests).toFixed(1)} µs/claim, ${Math.round(requests / wallS)} claims/s`);
  }
  await pool.close();

  const check = await ask<{ sold: number; buyers: number }>('check');
  const admitted = rounds * ALGS.length * buyers + warmBuyers;
  const verdict = check.sold === admitted && check.buyers === admitted ? 'PASS' : 'FAIL';
  const m = machineInfo();
  const byAlg = Object.fromEntries(ALGS.map((alg) => [alg, median(results.filter((r) => r.alg === alg).map((r) => r.usPerRequest))])) as Record<Alg, number>;
  // Per round, each algorithm against the HS256 load of the same round.
  const ratio = (alg: Alg) => median(Array.from({ length: rounds }, (_, i) => results.find((r) => r.round === i + 1 && r.alg === alg)!.usPerRequest / results.find((r) => r.round === i + 1 && r.alg === 'HS256')!.usPerRequest));
  console.log(`machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}, ${m.platform}; database ${databaseServer}`);
  console.log(`${rounds} rounds × ${buyers} buyers × ${repeats} claims each, ${connections} connections`);
  for (const alg of ALGS) console.log(`${alg}: median ${byAlg[alg].toFixed(1)} µs server CPU per claim; median per-round ratio to HS256 ${ratio(alg).toFixed(3)}`);
  console.log(`stores: ${check.sold} units taken, ${check.buyers} buyers in Redis, ${admitted} claims admitted: ${verdict}`);
  if (json) writeFileSync(json, JSON.stringify({ machine: m, databaseServer, rounds, buyers, repeats, connections, results, byAlg, ratios: { RS256: ratio('RS256'), ES256: ratio('ES256') }, check, verdict }, null, 2));
  if (verdict !== 'PASS') process.exitCode = 1;
} finally {
  provider.close();
  if (server.exitCode === null) {
    server.send({ type: 'stop' });
    await once(server, 'exit');
  }
}
