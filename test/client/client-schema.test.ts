// The typed client's schema (src/client/schema.ts) is the OpenAPI document as it is now: a route,
// a body or an answer changed without regenerating it fails here.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { CLIENT_SCHEMA_COMMAND, clientSchemaSource } from '../../scripts/client-schema.js';
import { startTestApp, suiteScope } from '../support/helpers.js';

const t = await startTestApp(suiteScope(), 'client_schema');

describe('the typed client', () => {
  it('is generated from the OpenAPI document the API serves', async () => {
    const served = await t.app.inject({ method: 'GET', url: '/docs/json' });
    const committed = await readFile(new URL('../../src/client/schema.ts', import.meta.url), 'utf8');
    assert.ok((await clientSchemaSource(served.json())) === committed, `src/client/schema.ts is stale: run \`${CLIENT_SCHEMA_COMMAND}\``);
  });
});
