// `npm run chaos -- --fault <name> --mode memory|fsync|replica --seconds N [--database lagging-standby|patroni|galera]`:
// one cell of the fault campaign; with no --fault, every fault in every mode, then the table.
// --database: the replicated database of the database faults (databases.ts). Exits 1 when a cell breaks
// its mode's promise or the engine's audit is not clean after the drain.
import { parseArgs } from 'node:util';
import { type CellResult, FAULTS, type Mode, MODES, runCell } from './cells.js';
import { DATABASES, type DatabaseKind } from './databases.js';

const { values } = parseArgs({
  options: {
    fault: { type: 'string' },
    mode: { type: 'string' },
    seconds: { type: 'string', default: '20' },
    rate: { type: 'string', default: '200' },
    database: { type: 'string', default: 'lagging-standby' },
    json: { type: 'boolean', default: false },
  },
});
const faults = values.fault ? FAULTS.filter((f) => f.name === values.fault) : FAULTS;
if (faults.length === 0) {
  console.error(`unknown fault ${values.fault}; one of ${FAULTS.map((f) => f.name).join(', ')}`);
  process.exit(2);
}
const modes = values.mode ? MODES.filter((m) => m === values.mode) : MODES;
if (modes.length === 0) {
  console.error(`unknown mode ${values.mode}; one of ${MODES.join(', ')}`);
  process.exit(2);
}
if (!(DATABASES as readonly string[]).includes(values.database)) {
  console.error(`unknown database ${values.database}; one of ${DATABASES.join(', ')}`);
  process.exit(2);
}
const database = values.database as DatabaseKind;
const seconds = Number(values.seconds);
const rate = Number(values.rate);
if (!(seconds >= 5 && seconds <= 600) || !(rate >= 10 && rate <= 10_000)) {
  console.error('--seconds must be 5..600 and --rate 10..10000');
  process.exit(2);
}

const results: CellResult[] = [];
for (const fault of faults) {
  for (const mode of modes as Mode[]) {
    const result = await runCell(fault, mode, { seconds, rate, database, log: (line) => console.error(line) });
    console.log(result.line);
    results.push(result);
  }
}

if (results.length > 1) {
  const shown = ['acked-lost', 'acked-failed', 'limit-breach-acked', 'replay-mismatch', 'oversold', 'duplicates', 'ids-twice', 'false-sold-out', 'processing-forever'] as const;
  console.log(`\n| fault | mode | acked | unknown | ${shown.join(' | ')} | longest gap | audit | promise |`);
  console.log(`| --- | --- | ${['---:', '---:', ...shown.map(() => '---:'), '---:', '---', '---'].join(' | ')} |`);
  for (const r of results) {
    const c = r.report.total.counts;
    console.log(
      `| ${r.fault} | ${r.mode} | ${r.report.total.tally.acked} | ${r.report.total.tally.unknown} | ${shown.map((a) => c[a]).join(' | ')} | ${(r.longestGapMs / 1000).toFixed(1)} s | ${r.auditOk ? 'clean' : 'NOT clean'} | ${r.verdict.ok ? 'kept' : 'broken'} |`,
    );
  }
}
if (values.json) console.log(JSON.stringify(results.map((r) => ({ fault: r.fault, mode: r.mode, counts: r.report.total.counts, tally: r.report.total.tally, longestGapMs: r.longestGapMs, auditOk: r.auditOk, verdict: r.verdict })), null, 2));
process.exitCode = results.every((r) => r.verdict.ok && r.auditOk) ? 0 : 1;
