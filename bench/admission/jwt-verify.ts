// Micro-benchmark of bearer-token verification alone (no HTTP, no Redis): the TokenService of
// src/auth/tokens.ts against the two verifiers of variants.ts, with 64 verifications in flight as
// at 64 connections. Reports wall time and process CPU (all threads: WebCrypto runs its HMAC on
// the libuv thread pool) per verification.
//   node --import tsx bench/admission/jwt-verify.ts [--count 100000]
import { parseArgs } from 'node:util';
import { createTokenService, type TokenService } from '../../src/auth/tokens.js';
import { joseWithImportedKey, syncHmac } from './variants.js';

const IN_FLIGHT = 64;

async function measure(name: string, tokens: TokenService, headers: string[]): Promise<void> {
  // Warm-up: JIT, key caches, thread pool.
  await Promise.all(headers.slice(0, 5000).map((h) => tokens.verify(h)));
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < headers.length) await tokens.verify(headers[next++]!);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const wallUs = (performance.now() - t0) * 1000;
  const cpu = process.cpuUsage(cpu0);
  const n = headers.length;
  console.log(
    `${name.padEnd(22)} ${(wallUs / n).toFixed(1).padStart(7)} µs wall  ${((cpu.user + cpu.system) / n).toFixed(1).padStart(7)} µs CPU  per verification  (${Math.round(n / (wallUs / 1e6))}/s)`,
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { count: { type: 'string', default: '100000' } } });
  const count = Number(values.count);
  const secret = 'bench-secret-0123456789abcdef0123456789';
  const real = createTokenService(secret);
  const headers: string[] = [];
  for (let i = 1; i <= count; i++) headers.push(`Bearer ${await real.sign({ userId: BigInt(i), admin: false }, 3600)}`);
  console.log(`${count} distinct tokens, ${IN_FLIGHT} verifications in flight, ${process.version}`);
  await measure('src/auth/tokens.ts', real, headers);
  await measure('jose, key imported once', await joseWithImportedKey(secret, real), headers);
  await measure('sync node:crypto HMAC', syncHmac(secret, real), headers);
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exitCode = 1;
});
