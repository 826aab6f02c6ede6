// `seckill bench`: a flash sale against a running deployment, judged against both of its stores;
// with --queue, a queued drop (buyers join a pre-queue, drawn at the start). Flags → the bench
// engine (src/loadgen) → a table, JSON and/or an HTML report. Exit code 1 when the verdict fails
// (oversold, lost, duplicated, the draw not re-checked, or any other check).
import { writeFile } from 'node:fs/promises';
import type { Config } from '../config.js';
import { parseId } from '../id-text.js';
import { type BenchOptions, type BenchRun, KINDS, runBench, runCompare } from '../loadgen/bench.js';
import { type Credentials, mintCredentials, readTokenFile } from '../loadgen/credentials.js';
import type { VoucherKind } from '../loadgen/deployment.js';
import { htmlReport } from '../loadgen/html-report.js';
import { machineInfo } from '../loadgen/machine.js';
import { runQueueBench } from '../loadgen/queue-drop.js';
import { compareText, machineLine, runText } from '../loadgen/text-report.js';

/** --pay-by: the buyers, or the shop through the Stripe webhook (which needs the endpoint's secret). */
function payer(config: Config, payBy: string): 'buyers' | 'stripe' {
  if (payBy !== 'buyers' && payBy !== 'stripe') throw new Error(`--pay-by must be buyers or stripe, got "${payBy}"`);
  if (payBy === 'stripe' && config.stripeWebhookSecret === '') throw new Error('--pay-by stripe signs the webhook events with STRIPE_WEBHOOK_SECRET: set it to the deployment\'s');
  return payBy;
}

export interface BenchFlags {
  url?: string;
  secret?: string;
  tokenFile?: string;
  voucher?: string;
  kind: string;
  stock: string;
  paymentTimeout: string;
  users?: string;
  firstUser: string;
  repeat: string;
  sameKey: string;
  seed: string;
  connections: string;
  duration?: string;
  requests?: string;
  timeout: string;
  pay: string;
  payBy: string;
  price: string;
  drainTimeout: string;
  compare?: boolean;
  queue?: boolean;
  drawIn?: string;
  json?: boolean;
  report?: string;
  progress: boolean;
}

/** Minted tokens outlive any run. */
const TOKEN_TTL_S = 24 * 3600;
const DEFAULT_BUYERS = 10_000;

export function count(flag: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${flag} must be an integer >= ${min}, got "${raw}"`);
  return n;
}

function fraction(flag: string, raw: string): number {
  const n = Number(raw);
  if (!(n >= 0 && n <= 1)) throw new Error(`--${flag} must be a share between 0 and 1, got "${raw}"`);
  return n;
}

function kind(raw: string): VoucherKind {
  if (!(KINDS as string[]).includes(raw)) throw new Error(`--kind must be one of ${KINDS.join(', ')}, got "${raw}"`);
  return raw as VoucherKind;
}

async function credentials(config: Config, flags: BenchFlags): Promise<Credentials> {
  const users = flags.users === undefined ? undefined : count('users', flags.users, 1);
  if (flags.tokenFile) {
    if (flags.secret) throw new Error('give --secret or --token-file, not both');
    return readTokenFile(flags.tokenFile, users);
  }
  const firstUserId = parseId(flags.firstUser);
  if (firstUserId === null) throw new Error(`--first-user must be a positive 64-bit decimal id, got "${flags.firstUser}"`);
  return mintCredentials({ secret: flags.secret ?? config.jwtSecret, buyers: users ?? DEFAULT_BUYERS, firstUserId, ttlSeconds: TOKEN_TTL_S });
}

/** Flags that cannot go with --queue, or that need it. */
function queueFlags(flags: BenchFlags): void {
  if (flags.drawIn !== undefined && !flags.queue) throw new Error('--draw-in sets the start of a queue voucher: it needs --queue');
  if (!flags.queue) return;
  if (flags.compare) throw new Error('--queue drives one queued drop; it cannot take --compare');
  if (flags.kind !== 'seckill') throw new Error(`queue vouchers are seckill vouchers; --queue cannot take --kind ${flags.kind}`);
  if (flags.requests !== undefined || flags.duration !== undefined) throw new Error('with --queue every buyer joins once; --requests and --duration do not apply');
  // Units that expire go to the next places of the queue: the unpaid ones never settle as expired.
  if (fraction('pay', flags.pay) > 0) throw new Error('--pay cannot go with --queue: an unpaid unit goes to the next place of the queue, it does not come back as stock');
  if (flags.drawIn !== undefined && flags.voucher) throw new Error('--draw-in sets the start of the voucher the bench creates; a --voucher keeps its own');
}

export interface CliBenchOptions extends Omit<BenchOptions, 'signal'> {
  queue: boolean;
  drawInSeconds?: number;
}

/** The engine's options from the flags (everything validated before any load is sent). */
export async function benchOptions(config: Config, flags: BenchFlags): Promise<CliBenchOptions> {
  if (flags.compare && flags.voucher) throw new Error('--compare creates one voucher per kind; it cannot take --voucher');
  queueFlags(flags);
  const voucherId = flags.voucher === undefined ? undefined : parseId(flags.voucher)?.toString();
  if (flags.voucher !== undefined && !voucherId) throw new Error(`--voucher must be a positive 64-bit decimal id, got "${flags.voucher}"`);
  const url = flags.url ?? `http://${config.host}:${config.port}`;
  if (!/^https?:$/.test(new URL(url).protocol)) throw new Error(`--url must be an http:// URL, got "${url}"`);
  return {
    url,
    credentials: await credentials(config, flags),
    voucherId,
    kind: kind(flags.kind),
    stock: count('stock', flags.stock, 1),
    paymentTimeoutSeconds: count('payment-timeout', flags.paymentTimeout, 1),
    repeatShare: fraction('repeat', flags.repeat),
    sameKeyShare: fraction('same-key', flags.sameKey),
    seed: count('seed', flags.seed, 0),
    connections: count('connections', flags.connections, 1),
    requests: flags.requests === undefined ? undefined : count('requests', flags.requests, 1),
    seconds: flags.duration === undefined ? undefined : count('duration', flags.duration, 1),
    requestTimeoutMs: count('timeout', flags.timeout, 1) * 1000,
    payShare: fraction('pay', flags.pay),
    price: count('price', flags.price, 0),
    ...(payer(config, flags.payBy) === 'stripe' ? { stripeSecret: config.stripeWebhookSecret } : {}),
    drainTimeoutMs: count('drain-timeout', flags.drainTimeout, 1) * 1000,
    progress: flags.progress ? process.stderr : null,
    queue: Boolean(flags.queue),
    drawInSeconds: flags.drawIn === undefined ? undefined : count('draw-in', flags.drawIn, 1),
  };
}

/** The command line as typed, without the secret. */
function commandLine(): string {
  const args = process.argv.slice(2).map((a, i, all) => (all[i - 1] === '--secret' ? '***' : a.replace(/^--secret=.*/, '--secret=***')));
  return ['seckill', ...args].join(' ');
}

export async function bench(config: Config, flags: BenchFlags): Promise<void> {
  const options = await benchOptions(config, flags);
  // Ctrl-C ends the load early; the run still drains, audits and reports.
  const stop = new AbortController();
  const onSigint = () => stop.abort();
  process.once('SIGINT', onSigint);
  let runs: BenchRun[];
  try {
    const o = { ...options, signal: stop.signal };
    runs = flags.compare ? await runCompare(o) : [await (options.queue ? runQueueBench(o) : runBench(o))];
  } finally {
    process.off('SIGINT', onSigint);
  }
  const machine = machineInfo();
  if (flags.report) {
    await writeFile(flags.report, htmlReport({ runs, machine, command: commandLine(), createdAt: new Date() }));
  }
  if (flags.json) {
    console.log(JSON.stringify({ command: commandLine(), machine, ok: runs.every((r) => r.verdict.ok), runs }, null, 2));
  } else {
    console.log(`\n${flags.compare ? compareText(runs) : runText(runs[0]!)}\n\n${machineLine(machine)}`);
    if (flags.report) console.log(`report: ${flags.report}`);
  }
  process.exitCode = runs.every((r) => r.verdict.ok) ? 0 : 1;
}
