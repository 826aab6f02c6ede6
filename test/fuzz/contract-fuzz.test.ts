// Every operation of the OpenAPI document under generated requests (fast-check, fixed seed):
// valid ones and mutated ones (tokens, ids, query strings, bodies, headers, methods, spellings of
// the path). No answer is a 5xx, every error is the contract's {code, message}, every status is
// one the document declares for the route, refused requests change neither store, and every
// operation of the document is exercised. FUZZ_RUNS and FUZZ_SEED change the run (`npm run fuzz`).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { startTestApp, suiteScope } from '../support/helpers.js';
import { requests } from './generators.js';
import { FuzzSession } from './session.js';

const RUNS = Number(process.env.FUZZ_RUNS || 60);
const SEED = Number(process.env.FUZZ_SEED || 20_260_618);

const t = await startTestApp(suiteScope(), 'fuzz');
const session = await FuzzSession.start(t);

describe('the API under generated requests, against its own OpenAPI document', () => {
  it('when every operation gets valid and mutated requests, then no 5xx, every error is the contract\'s, every status is declared, and refusals change nothing', async (context) => {
    const started = performance.now();
    context.diagnostic(`seed ${SEED}, ${RUNS} runs (FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} to repeat)`);
    await fc.assert(
      fc.asyncProperty(fc.array(requests(session.ops), { minLength: 1, maxLength: 12 }), async (batch) => {
        for (const plan of batch) await session.send(plan);
      }),
      // The stores carry over from run to run, so a shrunk run would not replay the failing one:
      // the failure names the request itself.
      { numRuns: RUNS, seed: SEED, endOnFailure: true, includeErrorInReport: true },
    );
    await session.checkUnchanged();
    const { stats } = session;
    const seconds = (performance.now() - started) / 1000;
    context.diagnostic(
      `${stats.requests} requests in ${seconds.toFixed(1)} s (${stats.mutated} mutated; ${stats.checkedUnchanged} checked to change nothing, ${stats.changing} successes allowed to)`,
    );
    for (const [key, byStatus] of [...stats.answers].sort()) {
      context.diagnostic(`${key}: ${[...byStatus].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(' ')}`);
    }
    const missed = session.ops.filter((op) => !stats.answers.has(op.key)).map((op) => op.key);
    assert.deepEqual(missed, [], 'every operation of the document is exercised');
  });

  it('when the document is read, then every operation declares the refusals the contract gives it', () => {
    for (const op of session.ops) {
      const declares = (status: string) => assert.ok(op.statuses.includes(status), `${op.key} declares ${status}`);
      declares('503');
      if (op.parameters.some((p) => p.in === 'path' || p.in === 'query' || p.in === 'header') || op.body) declares('400');
      if (op.secured) declares('401');
      if (op.method === 'POST') ['400', '413', '415'].forEach(declares);
      if (op.path.startsWith('/api/')) declares('429');
      if (op.path.includes('{id}')) declares('404');
      for (const status of op.statuses.filter((s) => s === '429' || s === '503')) {
        assert.deepEqual(op.responseHeaders[status], ['retry-after'], `${op.key} ${status} declares Retry-After`);
      }
    }
  });
});
