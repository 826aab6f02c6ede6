// Composition root of the `seckill` command: configuration → the chosen command.
import { Command } from 'commander';
import { ConfigError, configTable, loadConfig } from './config.js';
import { audit } from './cli/audit.js';
import { demo } from './cli/demo.js';
import { migrate } from './cli/migrate.js';
import { reconcile } from './cli/reconcile.js';
import { serve } from './cli/serve.js';
import { token } from './cli/token.js';
import { worker } from './cli/worker.js';

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

program
  .command('serve')
  .description('run the HTTP API (applies pending migrations first)')
  .option('--no-migrate', 'do not apply pending migrations')
  .option('--no-worker', 'do not run the order pipeline, payment timer and reconciliation in this process')
  .action((opts: { migrate: boolean; worker: boolean }) => serve(config(), opts));

program
  .command('worker')
  .description('run the order pipeline, the payment timer and scheduled reconciliation (no HTTP)')
  .action(() => worker(config()));

program.command('migrate').description('create the database if missing and apply pending migrations').action(() => migrate(config()));

program
  .command('token')
  .description('print a bearer token signed with JWT_SECRET')
  .requiredOption('--user <id>', 'user id (positive 64-bit decimal)')
  .option('--admin', 'grant the admin role')
  .option('--ttl <seconds>', 'lifetime in seconds (0 = no expiry)', '3600')
  .action((opts) => token(config(), opts));

program
  .command('demo')
  .description('run a real flash sale on this machine and check the result against Redis and MariaDB')
  .option('--big', '10,000 units for 100,000 buyers')
  .option('--stock <units>', 'units for sale (default 100)')
  .option('--buyers <count>', 'distinct buyers (default 1,000)')
  .action((opts) => demo(config(), opts));

program
  .command('audit')
  .description('check the invariants of one voucher on both stores (exit 1 when one fails)')
  .requiredOption('--voucher <id>', 'voucher id')
  .option('--json', 'machine-readable report')
  .action((opts) => audit(config(), opts));

program
  .command('reconcile')
  .description('compare Redis with the database now and repair drift (every voucher, or one)')
  .option('--voucher <id>', 'only this voucher')
  .option('--json', 'machine-readable report')
  .action((opts) => reconcile(config(), opts));

program
  .command('config')
  .description('print the configuration table (markdown) or the effective configuration')
  .option('--markdown', 'print the table of every setting')
  .action((opts: { markdown?: boolean }) => {
    console.log(opts.markdown ? configTable() : JSON.stringify({ ...config(), jwtSecret: '<redacted>' }, null, 2));
  });

program.parseAsync().catch((err: Error) => {
  console.error(`seckill: ${err.message}`);
  process.exit(1);
});
