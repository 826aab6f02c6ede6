import type { Config } from '../config.js';
import { createCore } from '../composition/core.js';
import { parseId } from '../id-text.js';
import { createLogger } from '../logger.js';

/**
 * `seckill reconcile [--voucher ID] [--restore-lost] [--json]`: one reconciliation run now; prints
 * what it found and repaired. One voucher is compared with all its buyers: a process of its own has
 * no lap to go on with. With --restore-lost, kept orders the database lost are admitted again first.
 */
export async function reconcile(config: Config, opts: { voucher?: string; restoreLost?: boolean; json?: boolean }): Promise<void> {
  const voucherId = opts.voucher === undefined ? undefined : parseId(opts.voucher);
  if (voucherId === null) throw new Error(`--voucher must be a positive 64-bit decimal id, got "${opts.voucher}"`);
  const core = await createCore(config, createLogger('warn'));
  try {
    if (opts.restoreLost) {
      const restored = await core.lostOrders.restore();
      (opts.json ? console.error : console.log)(`${restored} acknowledged order(s) the database lost admitted again`);
    }
    const reports = voucherId === undefined ? await core.reconciler.reconcileAll() : [await core.reconciler.reconcileVoucher(voucherId, { allBuyers: true })];
    if (opts.json) console.log(JSON.stringify(reports, null, 2));
    else {
      for (const r of reports) {
        const state = r.verified ? '' : ' (counts not verified: Redis kept changing; run again)';
        console.log(`voucher ${r.voucherId}: ${r.drift.length ? `${r.drift.length} drift(s), ${r.repaired} repaired` : 'no drift'}${state}`);
        for (const d of r.drift) console.log(`  ${d.repaired ? 'repaired' : 'found   '} ${d.kind}: ${d.detail}`);
      }
      if (reports.length === 0) console.log('no voucher to reconcile');
    }
  } finally {
    await core.close();
  }
}
