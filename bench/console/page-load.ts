// How long /console and /store/:id take to load on localhost in Debian's Chromium (headless,
// playwright-core), each load in a fresh profile (nothing cached), from the browser's Navigation
// Timing: `load` (every script, style and the first API answers' requests started) and the time
// until the page shows its first live figure. Against a demo service kept up (`seckill demo --keep`).
//   node --import tsx bench/console/page-load.ts [--loads 5]
// Target: ≤ 1 s on localhost.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { createTokenService } from '../../src/auth/tokens.js';
import { readFlags } from '../support/flags.js';
import { median } from '../support/stats.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'];
const { loads: LOADS } = readFlags({ loads: 5 });
const secret = randomBytes(24).toString('base64url'); // this run's only

const demo = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'demo', '--keep'], { cwd: ROOT, env: { ...process.env, JWT_SECRET: secret }, stdio: ['ignore', 'pipe', 'inherit'] });
let output = '';
demo.stdout.setEncoding('utf8').on('data', (chunk: string) => void (output += chunk));
const waitFor = async (pattern: RegExp) => {
  for (let i = 0; i < 1200; i++) {
    const m = pattern.exec(output);
    if (m) return m;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the demo did not print ${pattern}`);
};

try {
  const [, consoleUrl] = await waitFor(/console (http:\/\/\S+\/console)/);
  const [, storeUrl] = await waitFor(/store\s+(http:\/\/\S+\/store\/\d+)/);
  await waitFor(/PASS|FAIL/); // the sale is over; the service stays up (--keep)
  const tokens = createTokenService(secret);
  const tokenFor = { console: await tokens.sign({ userId: 1n, admin: true }, 600), store: await tokens.sign({ userId: 7n, admin: false }, 600) };
  const pages = [
    // Ready: the voucher list has its first link; the store shows a number of units left.
    { name: 'console', url: consoleUrl!, token: tokenFor.console, key: 'seckill.console.token', ready: ['#vouchers a', '\\d'] },
    { name: 'store', url: storeUrl!, token: tokenFor.store, key: 'seckill.store.token', ready: ['#units', '^\\d+$'] },
  ];
  for (const page of pages) {
    const loads: number[] = [];
    const ready: number[] = [];
    for (let i = 0; i < LOADS; i++) {
      const profile = await mkdtemp(join(tmpdir(), 'seckill-page-load-'));
      const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
      try {
        // Signed in already (the token in session storage, as after the first visit), so the page
        // goes straight to its live figures.
        await context.addInitScript(([key, token]) => sessionStorage.setItem(key!, token!), [page.key, page.token]);
        const tab = await context.newPage();
        const started = Date.now();
        await tab.goto(page.url, { waitUntil: 'load' });
        await tab.waitForFunction(([selector, pattern]) => new RegExp(pattern!).test((document.querySelector(selector!)?.textContent ?? '').trim()), page.ready, { timeout: 10_000 });
        ready.push(Date.now() - started);
        loads.push(await tab.evaluate(() => (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).loadEventEnd));
      } finally {
        await context.close();
        await rm(profile, { recursive: true, force: true });
      }
    }
    console.log(`${page.name}: load ${median(loads).toFixed(0)} ms (max ${Math.max(...loads).toFixed(0)}), first live figure ${median(ready)} ms (max ${Math.max(...ready)}), ${LOADS} loads, fresh profile each`);
  }
} finally {
  demo.kill('SIGINT');
}
