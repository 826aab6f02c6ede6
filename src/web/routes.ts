// The browser pages, served by the API itself (same origin: no CORS needed, works offline):
// GET /console (operator console, admin token) and GET /store/:voucherId (an example buyer's page,
// user token), and their plain ES modules and stylesheet under /assets/. The files are read
// once, at start, from the committed sources (assets/ beside this module; `npm run build` copies
// them into dist), and only those files are ever served. The chart library is served from its npm
// package as installed (no copy, no build step), under /assets/vendor/, by exact names.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type } from 'typebox';
import { ANSWER, type App, errorAnswers, IdString } from '../http.js';

const ASSETS_DIR = fileURLToPath(new URL('./assets/', import.meta.url));
/** /assets/ name → the package file it is read from. */
const VENDOR: Record<string, string> = {
  'vendor/uplot.esm.js': 'uplot/dist/uPlot.esm.js',
  'vendor/uPlot.min.css': 'uplot/dist/uPlot.min.css',
};
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};
// The pages load nothing from elsewhere and call only this origin.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Every file of the asset folder (and its subfolders) by its path relative to it. */
function readAssets(dir: string, prefix = ''): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const name = prefix + entry.name;
    if (entry.isDirectory()) for (const [k, v] of readAssets(join(dir, entry.name), `${name}/`)) files.set(k, v);
    else if (TYPES[extname(entry.name)]) files.set(name, readFileSync(join(dir, entry.name)));
  }
  return files;
}

export interface WebRouteDeps {
  /** PAYMENT_MODE: the store page offers its Pay button only when the buyer confirms the payment (simulated). */
  paymentMode: 'simulated' | 'external';
}

/** The store page's own meta tag names who takes the payment; the rest of the file is served as committed. */
const PAYMENT_MODE_META = '<meta name="payment-mode" content="simulated">';

export function registerWebRoutes(app: App, { paymentMode }: WebRouteDeps, assetsDir = ASSETS_DIR): void {
  const assets = readAssets(assetsDir);
  const require = createRequire(import.meta.url);
  for (const [name, file] of Object.entries(VENDOR)) assets.set(name, readFileSync(require.resolve(file)));
  const page = (name: string) => {
    const body = assets.get(name);
    if (!body) throw new Error(`web asset ${name} is missing from ${assetsDir}`);
    return body;
  };
  const consoleHtml = page('console.html');
  const storeHtml = Buffer.from(page('store.html').toString('utf8').replace(PAYMENT_MODE_META, `<meta name="payment-mode" content="${paymentMode}">`));
  const html = (body: Buffer) => (_request: unknown, reply: import('fastify').FastifyReply) => {
    void reply.type(TYPES['.html']!).header('content-security-policy', CSP).header('cache-control', 'no-cache').send(body);
  };

  const page200 = { description: 'the page (HTML)', content: { 'text/html': { schema: Type.String() } } };
  const pageSchema = (summary: string) => ({ tags: ['pages'], summary, security: [], response: { 200: page200, ...errorAnswers({}) } });
  app.get('/console', { schema: pageSchema('The operator console; it signs in with an admin bearer token') }, html(consoleHtml));
  app.get(
    '/store/:voucherId',
    {
      schema: {
        ...pageSchema("An example buyer's page of a voucher; it signs in with a user bearer token"),
        params: Type.Object({ voucherId: IdString }),
        response: { 200: page200, ...errorAnswers(ANSWER.badInput) },
      },
    },
    html(storeHtml),
  );
  app.get('/assets/*', { schema: { hide: true } }, async (request, reply) => {
    const name = (request.params as { '*': string })['*'];
    const body = assets.get(name);
    if (!body || name.endsWith('.html')) return reply.code(404).send({ code: 'NOT_FOUND', message: `no asset ${name}` });
    return reply.type(TYPES[extname(name)]!).header('cache-control', 'no-cache').send(body);
  });
}
