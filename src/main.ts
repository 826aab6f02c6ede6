// Composition root of the `seckill` command: configuration → the chosen command.
import { Command } from 'commander';
import { type Config, ConfigError, loadConfig } from './config.js';
import { configurationDoc } from './config/configuration-doc.js';
import { redactedConfig } from './config/redaction.js';
import { DEFAULT_TTL_SECONDS, token } from './cli/token.js';

function config() {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`seckill: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
}

const program = new Command('seckill').description('Flash-sale engine').showHelpAfterError();

type Run<O> = (config: Config, opts: O) => Promise<void>;

/**
 * A subcommand that runs with the configuration and its own options; declare its options on what
 * this returns. Its module is loaded when it runs: `seckill token` need not load the server's.
 */
function command<O>(name: string, description: string, load: () => Promise<Run<O>>): Command {
  return program
    .command(name)
    .description(description)
    .action(async (opts: O) => {
      const settings = config();
      await (await load())(settings, opts);
    });
}

command('serve', 'run the HTTP API (applies pending migrations first)', async () => (await import('./cli/serve.js')).serve)
  .option('--no-migrate', 'do not apply pending migrations')
  .option('--no-worker', 'do not run the order pipeline, payment timer and reconciliation in this process');

command('worker', 'run the order pipeline, the payment timer and scheduled reconciliation (no HTTP)', async () => (await import('./cli/worker.js')).worker);

command('migrate', 'create the database if missing and apply pending migrations', async () => (await import('./cli/migrate.js')).migrate);

command('token', 'print a bearer token signed with JWT_SECRET', async () => token)
  .requiredOption('--user <id>', 'user id (positive 64-bit decimal)')
  .option('--admin', 'grant the admin role')
  .option('--service', "grant the service role (the shop's backend: payments, refunds, any order)")
  .option('--ttl <seconds>', `lifetime in seconds, at most JWT_MAX_TTL_SECONDS (default ${DEFAULT_TTL_SECONDS}, or that maximum when shorter; 0 = no expiry, only with JWT_MAX_TTL_SECONDS=0)`);

command('bench', 'a flash sale (or with --queue a queued drop) against a running deployment: load, latency, drain lag and the verdict of both stores (exit 1 when it fails)', async () => (await import('./cli/bench.js')).bench)
  .option('--url <url>', 'base URL of the deployment (default: http://HOST:PORT)')
  .option('--secret <secret>', "the deployment's JWT secret, to sign the admin's and every buyer's token (default: JWT_SECRET)")
  .option('--token-file <file>', 'tokens instead of --secret: one bearer token per line, buyers plus one with role admin')
  .option('--voucher <id>', 'use this voucher instead of creating one (the bench must be its only buyer; with --queue a queue voucher before its start)')
  .option('--kind <kind>', 'kind of the voucher created: seckill, limited or common', 'seckill')
  .option('--stock <units>', 'units of the voucher created', '1000')
  .option('--payment-timeout <seconds>', 'payment window of the voucher created', '900')
  .option('--users <count>', 'distinct buyers, each with a token of their own (default 10,000; with --token-file: all in the file)')
  .option('--first-user <id>', 'user id of the first buyer signed with --secret; the others follow', '1000001')
  .option('--repeat <share>', 'share of buyers who keep repeating their request (not with --queue: each buyer joins once)', '0.2')
  .option('--same-key <share>', "share of repeats sent with the buyer's first Idempotency-Key (the others use a new one)", '0.5')
  .option('--seed <n>', 'seed of the request plan (who asks when)', '1')
  .option('--connections <count>', 'concurrent connections', '64')
  .option('--duration <seconds>', 'stop sending after this long')
  .option('--requests <count>', 'stop sending after this many requests (default: each buyer once, each repeater once more)')
  .option('--timeout <seconds>', 'a request with no answer after this long counts as unanswered', '30')
  .option('--pay <share>', 'after the sale, pay this share of the orders and wait for the rest to expire', '0')
  .option('--pay-by <who>', 'who pays with --pay: buyers (PAYMENT_MODE=simulated) or stripe (the shop, through the Stripe webhook signed with STRIPE_WEBHOOK_SECRET; one payment more arrives late)', 'buyers')
  .option('--price <minor units>', 'price of the voucher created', '0')
  .option('--drain-timeout <seconds>', 'longest wait for every admitted order to be stored', '120')
  .option('--compare', 'the same buyers against a seckill, a limited and a common voucher, side by side')
  .option('--queue', 'a queued drop: a queue voucher whose pre-queue every buyer joins once; then the draw at its start, every standing read, the draw re-checked (not with --compare or --pay)')
  .option('--draw-in <seconds>', 'with --queue, the start (the draw) of the voucher created this long after it (default: 2 s + 1 s per 1,000 buyers, at least 4 s)')
  .option('--json', 'print the results as JSON (the progress line goes to stderr)')
  .option('--report <file>', 'write a self-contained HTML report with latency and rate charts')
  .option('--no-progress', 'no live progress line');

command('demo', 'hold a real flash sale on this machine and check the result against Redis and the database', async () => (await import('./cli/demo.js')).demo)
  .option('--big', '10,000 units for 100,000 buyers')
  .option('--stock <units>', 'units for sale (default 100)')
  .option('--buyers <count>', 'distinct buyers (default 1,000)')
  .option('--queue', 'a queued drop: buyers join a pre-queue drawn at the start, the first places are admitted, cancelled units go to the next places; verdict with the draw re-checked')
  .option('--keep', 'keep the service up after the verdict (Ctrl-C stops it), to look around in the console')
  .option('--port <port>', 'listen on this port (default: any free one)');

command('audit', 'check the invariants of one voucher on both stores (exit 1 when one fails)', async () => (await import('./cli/audit.js')).audit)
  .requiredOption('--voucher <id>', 'voucher id')
  .option('--json', 'machine-readable report');

command('reconcile', 'compare Redis with the database now and repair drift (every voucher, or one)', async () => (await import('./cli/reconcile.js')).reconcile)
  .option('--voucher <id>', 'only this voucher')
  .option('--restore-lost', 'first admit again the acknowledged orders the database no longer holds (a failover the workers did not notice)')
  .option('--json', 'machine-readable report');

program
  .command('draw')
  .description("queue vouchers' draws")
  .command('verify <voucherId>')
  .description('recompute the draw from what the API published (seed, commitment, entrants) and compare (exit 1 when it does not match)')
  .option('--url <url>', 'base URL of the API (default: http://HOST:PORT)')
  .option('--json', 'machine-readable verdict')
  .action(async (voucherId: string, opts) => {
    const settings = config();
    await (await import('./cli/draw.js')).drawVerify(settings, voucherId, opts);
  });

program
  .command('config')
  .description('print the effective configuration, or with --markdown docs/configuration.md')
  .option('--markdown', 'print the table of every setting')
  .action((opts: { markdown?: boolean }) => {
    console.log(opts.markdown ? configurationDoc() : JSON.stringify(redactedConfig(config()), null, 2));
  });

program.parseAsync().catch((err: Error) => {
  console.error(`seckill: ${err.message}`);
  // A setting, or a setting and an option together, that cannot work: exit 2 as at start-up.
  process.exit(err instanceof ConfigError ? 2 : 1);
});
