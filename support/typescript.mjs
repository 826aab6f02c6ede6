// `node --import ./support/typescript.mjs file.ts`: runs the TypeScript sources. On a Node that
// strips types itself (24 and later, the test runtime), one synchronous in-thread hook is all it
// takes: the sources import each other as './x.js' (what tsc emits), so a relative './x.js'
// asked for by a .ts file is answered with its './x.ts'. Elsewhere (Node 20) tsx does the work.
// Why not tsx everywhere: its hooks run on a thread of their own and every import, node_modules
// included, crosses to it; the server's modules cost 2.4–2.6 s of CPU to load through tsx
// against 1.5 s this way (Node 24), paid again by every test file and every spawned command.
import { existsSync } from 'node:fs';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

if (module.registerHooks && process.features.typescript) {
  module.registerHooks({
    resolve(specifier, context, nextResolve) {
      if (specifier.startsWith('.') && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
        const source = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
        if (existsSync(fileURLToPath(source))) return nextResolve(source.href, context);
      }
      return nextResolve(specifier, context);
    },
  });
} else {
  const { register } = await import('tsx/esm/api');
  register();
}
