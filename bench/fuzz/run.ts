// `npm run fuzz -- [--runs N] [--seed S] [--postgres]`: the contract fuzzer of npm test
// (test/fuzz/contract-fuzz.test.ts) for longer, with a random seed unless given one; prints the
// seed first, then the test's own report (requests, answers per operation and status). Exits as
// the test does: 0 when every answer kept the contract and no refusal changed the stores.
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { machineInfo } from '../../src/loadgen/machine.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '2000' },
    seed: { type: 'string' },
    postgres: { type: 'boolean', default: false },
  },
});
const runs = Number(values.runs);
const seed = values.seed === undefined ? randomInt(2 ** 31) : Number(values.seed);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed)) {
  console.error('--runs must be a positive integer, --seed an integer');
  process.exit(2);
}

const m = machineInfo();
console.log(`fuzz: seed ${seed}, ${runs} runs, ${values.postgres ? 'PostgreSQL' : 'MariaDB'}; ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}, load ${os.loadavg()[0]!.toFixed(1)}`);
const started = performance.now();
const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-force-exit', 'test/fuzz/contract-fuzz.test.ts'], {
  stdio: 'inherit',
  env: {
    ...process.env,
    FUZZ_RUNS: String(runs),
    FUZZ_SEED: String(seed),
    ...(values.postgres ? { TEST_DATABASE_SERVER: process.env.TEST_POSTGRES_SERVER ?? 'postgres://postgres@127.0.0.1:5432' } : {}),
  },
});
const code = await new Promise<number>((resolve) => child.once('exit', (c) => resolve(c ?? 1)));
console.log(`fuzz: ${code === 0 ? 'passed' : 'FAILED'} in ${((performance.now() - started) / 1000).toFixed(0)} s (seed ${seed}, ${runs} runs; repeat with --seed ${seed} --runs ${runs})`);
process.exit(code);
