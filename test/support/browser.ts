// A headless Chromium for the page tests: Debian's /usr/bin/chromium driven by playwright-core
// (scripts/test.sh installs the package when it is missing; never a downloaded browser build), in
// a fresh profile removed when the file's tests end.
import { after } from 'node:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = process.env.TEST_CHROMIUM ?? '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'];

/** A browser context of its own; closed (and its profile deleted) after the file, suite or test. */
export async function startBrowser(): Promise<BrowserContext> {
  const profile = await mkdtemp(join(tmpdir(), 'seckill-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
  after(async () => {
    await context.close().catch(() => undefined);
    await rm(profile, { recursive: true, force: true });
  });
  return context;
}
