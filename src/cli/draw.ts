import type { Config } from '../config.js';
import { parseId } from '../id-text.js';
import { JsonClient } from '../loadgen/http-client.js';
import { readPublishedDraw, verifyDraw } from '../queue/verify.js';

/**
 * `seckill draw verify <voucherId> [--url]`: recomputes a queue voucher's draw from what the API
 * published (the public routes, as any buyer can) and says whether it matches. Exit 0 when it
 * does, 1 when it does not.
 */
export async function drawVerify(config: Config, voucher: string, opts: { url?: string; json?: boolean }): Promise<void> {
  if (parseId(voucher) === null) throw new Error(`the voucher id must be a positive 64-bit decimal id, got "${voucher}"`);
  const client = new JsonClient(opts.url ?? `http://${config.host}:${config.port}`, 4);
  try {
    const published = await readPublishedDraw(async (path) => {
      const res = await client.request('GET', path);
      if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${String(res.body.code ?? '')} ${String(res.body.message ?? '')}`.trim());
      return res.body;
    }, voucher);
    const verdict = verifyDraw(published);
    if (opts.json) console.log(JSON.stringify({ voucherId: voucher, entrants: published.entrants, ...verdict }, null, 2));
    else {
      console.log(`voucher ${voucher}: ${published.entrants} entrants, seed ${published.seed ?? '-'}, commitment ${published.commitment}`);
      for (const p of verdict.problems) console.log(`  ${p}`);
      console.log(verdict.ok ? 'the draw matches what was published' : 'the draw does NOT match what was published');
    }
    if (!verdict.ok) process.exitCode = 1;
  } finally {
    client.close();
  }
}
