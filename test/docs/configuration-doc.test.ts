import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CONFIGURATION_DOC_COMMAND } from '../../src/config/configuration-doc.js';
import { TYPESCRIPT } from '../../support/processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('docs/configuration.md', () => {
  it('is what scripts/configuration-doc.ts makes of the settings in src/config.ts', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [...TYPESCRIPT, 'scripts/configuration-doc.ts'], { cwd: ROOT });
    const committed = await readFile(`${ROOT}docs/configuration.md`, 'utf8');
    assert.ok(stdout === committed, `docs/configuration.md does not match src/config.ts: run \`${CONFIGURATION_DOC_COMMAND}\``);
  });
});
