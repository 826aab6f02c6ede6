// docs/console.png: the operator console during a demo sale (10,000 units, 100,000 buyers), taken by a headless Chromium
// (Debian's /usr/bin/chromium driven by playwright-core, a fresh profile removed afterwards).
// Run: node --import tsx scripts/console-screenshot.ts   (Redis and MariaDB up: npm run services)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { createTokenService } from '../src/auth/tokens.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'];
// A secret of this run only: the admin token below is worth nothing elsewhere.
const secret = randomBytes(24).toString('base64url');

const demo = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'demo', '--stock', '10000', '--buyers', '100000', '--keep'], {
  cwd: ROOT,
  env: { ...process.env, JWT_SECRET: secret },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let output = '';
/** Resolves with the first match of `pattern` in the demo's stdout. */
const line = (pattern: RegExp) =>
  new Promise<RegExpExecArray>((resolve, reject) => {
    const check = () => {
      const match = pattern.exec(output);
      if (match) resolve(match);
    };
    demo.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      process.stdout.write(chunk);
      check();
    });
    demo.once('exit', (code) => reject(new Error(`demo exited (${code}) before ${pattern}`)));
    check();
  });

const profile = await mkdtemp(join(tmpdir(), 'seckill-shot-'));
try {
  const [, url, voucherId] = await line(/store\s+(http:\/\/127\.0\.0\.1:\d+)\/store\/(\d+)/);
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 900 } });
  try {
    const page = await context.newPage();
    await page.goto(`${url}/console`);
    await page.fill('#token', await createTokenService(secret).sign({ userId: 1n, admin: true }, 600));
    await page.click('#sign-in-form button');
    await page.click(`#voucher-rows tr[data-id="${voucherId}"] a`);
    await page.waitForSelector('#voucher-title:not(:empty)');
    // Some seconds of snapshots into the sale, so that the charts and the figures show it under
    // way (the live stream's first snapshot can take seconds while the sale fills both cores).
    await page.waitForSelector('#live-status:has-text("live ·")', { timeout: 30_000 });
    await page.waitForTimeout(8_000);
    // The audit of a sale whose orders expire and sell again every few seconds may find the
    // database moving while it reads ("not verified, run again"): asked again until it could judge.
    for (let attempt = 0; attempt < 10 && !(await page.isVisible('#audit-verdict:has-text("Audit OK")')); attempt++) {
      await page.click('#run-audit');
      await page.waitForSelector('#audit-verdict:has-text("Audit")', { timeout: 10_000 });
      await page.waitForTimeout(2_000);
    }
    await page.screenshot({ path: join(ROOT, 'docs/console.png'), fullPage: true });
    console.log('wrote docs/console.png');
  } finally {
    await context.close();
  }
} finally {
  demo.kill('SIGINT');
  await rm(profile, { recursive: true, force: true });
}
