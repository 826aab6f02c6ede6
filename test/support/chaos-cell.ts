// One cell of the fault campaign as a test: every buyer's answer joined with both stores after
// the heal and the drain; the cell keeps its mode's promise and the engine's own audit is clean.
// The longest stretch without a settled answer is reported, not asserted: on a 2-core box shared
// with the rest of the suite it measures the box as much as the engine (the campaign's table gives
// it from a quiet machine). Each cell is a test file of its own so that cells run side by side;
// the whole matrix is `npm run chaos`, not a test.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { type CellOptions, FAULTS, type Mode, runCell } from '../../bench/chaos/cells.js';

/**
 * `holdMs`: a shorter fault than the campaign's, where its length is not what the cell tests;
 * `database`: the replicated database of a database fault.
 */
export function campaignCell(faultName: string, mode: Mode, { holdMs, database }: Pick<CellOptions, 'holdMs' | 'database'> = {}): void {
  it(`${faultName} under ${mode}${database ? ` on ${database}` : ''}: the promise holds and the audit is clean`, { timeout: 240_000 }, async (ctx) => {
    const fault = FAULTS.find((f) => f.name === faultName)!;
    const result = await runCell(fault, mode, { seconds: 10, rate: 150, holdMs, database, log: (line) => ctx.diagnostic(line) });
    ctx.diagnostic(result.line);
    assert.deepEqual(result.verdict.broken, [], result.line);
    assert.ok(result.auditOk, result.line);
    assert.ok(result.report.total.tally.acked > 0, 'buyers were acknowledged');
  });
}
