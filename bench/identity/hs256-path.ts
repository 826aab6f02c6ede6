// Does the HS256 path pay for the identity provider? The user guard run in-process on the same
// HS256 tokens, three ways, in interleaved rounds: the guard as it was before JWKS support (kept
// here: tokens.verify in a try/catch), the guard with JWT_JWKS_URL empty, and with it set (the
// token's header is told apart from a provider token's before anything else).
//   node --import tsx bench/identity/hs256-path.ts [--rounds 7] [--tokens 2000] [--passes 50]
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { pino } from 'pino';
import { createGuards } from '../../src/auth/guards.js';
import { createIdentity } from '../../src/auth/identity.js';
import { createTokenService } from '../../src/auth/tokens.js';
import { machineInfo } from '../../src/loadgen/machine.js';
import { readFlags } from '../support/flags.js';
import { median } from '../support/stats.js';

const { rounds, tokens: count, passes } = readFlags({ rounds: 7, tokens: 2_000, passes: 50 });

const provider = createServer((_request, response) => void response.writeHead(200).end('{"keys":[]}'));
provider.listen(0, '127.0.0.1');
await once(provider, 'listening');
const tokens = createTokenService('bench-identity-secret-of-32-bytes-or-more');
const config = { jwtIssuer: '', jwtAudience: '', jwtUserClaim: 'sub', jwtRolesClaim: 'role', jwtMaxTtlSeconds: 86_400 };
const log = pino({ level: 'silent' });
const off = createIdentity({ tokens, log, config: { ...config, jwtJwksUrl: '' } });
const on = createIdentity({ tokens, log, config: { ...config, jwtJwksUrl: `http://127.0.0.1:${(provider.address() as AddressInfo).port}/` } });
await on.ready;

type Hook = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void;
const before: Hook = (request, _reply, done) => {
  try {
    request.principal = tokens.verify(request.headers.authorization);
    done();
  } catch (err) {
    done(err as Error);
  }
};
const hooks: Record<string, Hook> = { before, 'JWKS off': createGuards(off).user, 'JWKS on': createGuards(on).user };

const requests = await Promise.all(Array.from({ length: count }, async (_, i) => ({ headers: { authorization: `Bearer ${await tokens.sign({ userId: BigInt(i + 1), admin: false }, 3_600)}` }, principal: null })));
let failures = 0;
const done = (err?: Error) => void (err && failures++);
const run = (hook: Hook) => {
  const started = process.cpuUsage();
  for (let p = 0; p < passes; p++) for (const request of requests) hook(request as never, undefined as never, done);
  const used = process.cpuUsage(started);
  return ((used.user + used.system) * 1000) / (passes * count); // ns per request
};
for (const hook of Object.values(hooks)) run(hook); // warm-up
const samples: Record<string, number[]> = Object.fromEntries(Object.keys(hooks).map((name) => [name, []]));
const names = Object.keys(hooks);
for (let round = 0; round < rounds; round++) {
  for (let i = 0; i < names.length; i++) {
    const name = names[(i + round) % names.length]!;
    samples[name]!.push(run(hooks[name]!));
  }
}
off.close();
on.close();
provider.close();
if (failures) throw new Error(`${failures} tokens refused`);
const m = machineInfo();
console.log(`machine: ${m.cpus} × ${m.cpuModel}, Node ${m.node}; ${rounds} rounds × ${passes} passes over ${count} HS256 tokens`);
const base = median(samples.before!);
for (const name of names) console.log(`${name}: median ${(median(samples[name]!) / 1000).toFixed(2)} µs CPU per request (${(median(samples[name]!) / base).toFixed(3)} × before); rounds ${samples[name]!.map((ns) => (ns / 1000).toFixed(2)).join(' ')}`);
