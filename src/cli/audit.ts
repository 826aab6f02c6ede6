import type { Config } from '../config.js';
import { createCore } from '../composition/core.js';
import { parseId } from '../id-text.js';
import { createLogger } from '../logger.js';

/**
 * `seckill audit --voucher ID [--json]`: the invariants of docs/design.md ("Invariants") on both stores, safe on a
 * live system. Exit code 1 when any invariant fails (3 when the voucher does not exist).
 */
export async function audit(config: Config, opts: { voucher: string; json?: boolean }): Promise<void> {
  const voucherId = parseId(opts.voucher);
  if (voucherId === null) throw new Error(`--voucher must be a positive 64-bit decimal id, got "${opts.voucher}"`);
  const core = await createCore(config, createLogger('warn'));
  try {
    const result = await core.audit(voucherId);
    if (!result) {
      console.error(`seckill: voucher ${voucherId} not found`);
      process.exitCode = 3;
      return;
    }
    if (opts.json) console.log(JSON.stringify({ voucherId: voucherId.toString(), ...result }, null, 2));
    else {
      console.log(`voucher ${voucherId}: initial stock ${result.initialStock}, DB stock ${result.dbStock}, Redis stock ${result.redisStock ?? '-'}, sold ${result.sold}, in flight ${result.inflight}`);
      console.log(`orders: ${Object.entries(result.orders).map(([s, n]) => `${s} ${n}`).join(', ')}`);
      for (const c of result.checks) {
        console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${c.id} ${c.name}${c.problems.length ? `: ${c.problems.join('; ')}` : ''}`);
      }
    }
    if (!result.ok) process.exitCode = 1;
  } finally {
    await core.close();
  }
}
