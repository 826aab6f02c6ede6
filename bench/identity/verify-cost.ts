// What one signature check of a provider token costs (a buyer's first request; the repeats are
// cache hits): jose's compactVerify, as the engine verifies, beside node:crypto's synchronous
// verify on the same key, and HS256 as tokens.ts checks it.
//   node --import tsx bench/identity/verify-cost.ts [--tokens 2000] [--rounds 5]
import { createHmac, createSecretKey, KeyObject, verify } from 'node:crypto';
import { compactVerify, exportJWK, generateKeyPair, importJWK, SignJWT } from 'jose';
import { machineInfo } from '../../src/loadgen/machine.js';
import { readFlags } from '../support/flags.js';
import { median } from '../support/stats.js';

const { tokens: count, rounds } = readFlags({ tokens: 2_000, rounds: 5 });
const ALGS = ['RS256', 'ES256', 'EdDSA'] as const;

/** CPU µs (this process, worker threads included) per call of `run` over every token. */
async function cpuPer(tokens: string[], run: (tokens: string[]) => Promise<unknown> | unknown): Promise<number> {
  const started = process.cpuUsage();
  await run(tokens);
  const used = process.cpuUsage(started);
  return (used.user + used.system) / tokens.length;
}

const m = machineInfo();
console.log(`machine: ${m.cpus} × ${m.cpuModel}, Node ${m.node}; ${count} tokens, median of ${rounds} rounds, CPU µs per verification`);
const hsKey = createSecretKey(Buffer.from('bench-identity-secret-of-32-bytes-or-more'));
for (const alg of ALGS) {
  const { publicKey, privateKey } = await generateKeyPair(alg);
  const key = await importJWK(await exportJWK(publicKey), alg);
  const keyObject = KeyObject.from(key as never);
  const tokens = await Promise.all(Array.from({ length: count }, (_, i) => new SignJWT({ sub: String(i + 1) }).setProtectedHeader({ alg, kid: 'k' }).sign(privateKey)));
  const joseAll = (list: string[]) => Promise.all(list.map((token) => compactVerify(token, key, { algorithms: [alg] })));
  const nodeAll = (list: string[]) => {
    for (const token of list) {
      const dot = token.lastIndexOf('.');
      const signature = Buffer.from(token.slice(dot + 1), 'base64url');
      const input = Buffer.from(token.slice(0, dot));
      const ok = verify(alg === 'EdDSA' ? null : 'sha256', input, alg === 'ES256' ? { key: keyObject, dsaEncoding: 'ieee-p1363' } : keyObject, signature);
      if (!ok) throw new Error('a signature did not verify');
    }
  };
  const hsAll = (list: string[]) => {
    for (const token of list) createHmac('sha256', hsKey).update(token.slice(0, token.lastIndexOf('.'))).digest();
  };
  const samples = { jose: [] as number[], node: [] as number[], hmac: [] as number[] };
  await cpuPer(tokens, joseAll); // warm-up
  for (let round = 0; round < rounds; round++) {
    samples.jose.push(await cpuPer(tokens, joseAll));
    samples.node.push(await cpuPer(tokens, nodeAll));
    samples.hmac.push(await cpuPer(tokens, hsAll));
  }
  console.log(`${alg}: jose compactVerify ${median(samples.jose).toFixed(1)} · node:crypto verify ${median(samples.node).toFixed(1)} · HMAC-SHA256 of the same input ${median(samples.hmac).toFixed(1)}`);
}
