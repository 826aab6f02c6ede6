// The OpenAPI document (/docs/json, /docs/yaml) made from the routes' schemas, and its UI (/docs).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifySchema } from 'fastify';
import { type App, errorAnswers, textResponse } from './http.js';

// The OpenAPI UI's own scripts, styles and images, and calls to this origin ("Try it out").
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/**
 * The OpenAPI UI and the document are routes of the contract: shown in the document, which the
 * plugin leaves them out of (its own assets under /docs/static stay out). Their schemas are the
 * document's only: the routes answer as the plugin made them.
 */
const DOCS_ROUTES: Record<string, FastifySchema> = {
  '/docs': { tags: ['docs'], summary: 'The OpenAPI UI', security: [], response: { 200: textResponse('text/html', 'the OpenAPI UI (HTML)'), ...errorAnswers({}) } },
  '/docs/json': {
    tags: ['docs'],
    summary: 'This OpenAPI document (JSON)',
    security: [],
    response: { 200: { description: 'the OpenAPI 3 document', type: 'object', additionalProperties: true }, ...errorAnswers({}) },
  },
  '/docs/yaml': { tags: ['docs'], summary: 'This OpenAPI document (YAML)', security: [], response: { 200: textResponse('application/x-yaml', 'the OpenAPI 3 document'), ...errorAnswers({}) } },
};

/** Before the routes: the plugin collects the schemas of the routes registered after it. */
export async function registerOpenApiDocs(app: App): Promise<void> {
  await app.register(swagger, {
    openapi: {
      info: { title: 'seckill engine', version: '0.1.0', description: 'Flash-sale engine API (docs/api.md in the repository)' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
      security: [{ bearer: [] }],
    },
    // The plugin registers the UI's route as /docs and /docs/ and lists it under the latter.
    transform: ({ schema, url }) => {
      const path = url.replace(/(?<=.)\/$/, '');
      return { schema: DOCS_ROUTES[path] ?? schema, url: path };
    },
  });
  // BaseLayout: the routes without the top bar, whose logo is an SVG with an inline style.
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: DOCS_CSP, uiConfig: { layout: 'BaseLayout' } });
}
