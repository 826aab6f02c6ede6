// src/client/schema.ts: the TypeScript types of the OpenAPI document (/docs/json), made by
// openapi-typescript, that the typed client (src/client/index.ts) is built on.
// Run: node --import tsx scripts/client-schema.ts > src/client/schema.ts   (Redis and the database up: npm run services)
import openapiTS, { astToString } from 'openapi-typescript';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createContainer } from '../src/container.js';
import { createLogger } from '../src/logger.js';

export const CLIENT_SCHEMA_COMMAND = 'node --import tsx scripts/client-schema.ts > src/client/schema.ts';

/** The file's text for `document` (an OpenAPI 3 document as /docs/json serves it). */
export async function clientSchemaSource(document: object): Promise<string> {
  const types = astToString(await openapiTS(document as Parameters<typeof openapiTS>[0]));
  return `// Generated from the OpenAPI document by \`${CLIENT_SCHEMA_COMMAND}\`: do not edit.\n${types}`;
}

async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent' });
  const container = await createContainer(config, createLogger(config.logLevel));
  try {
    const app = await buildApp(container.appDeps);
    await app.ready();
    process.stdout.write(await clientSchemaSource(app.swagger()));
    await app.close();
  } finally {
    await container.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
