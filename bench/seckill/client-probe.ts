// Which HTTP client should drive `seckill bench`? The bench's own driver (undici Pool.dispatch,
// src/loadgen/driver.ts) against autocannon 8 with a distinct buyer per request (setupRequest
// sets the token and Idempotency-Key, onResponse reads the body), both sending the same claims.
// By default to a plain HTTP server in a child process that answers like the claim route (one 202
// in three, otherwise 409 SOLD_OUT), so only client CPU is spent; with --url and --secret, to the
// real claim route of a running `seckill serve` (a fresh voucher of --stock units per run).
// Client CPU µs per request and requests/s, alternating, several rounds.
//   node --import tsx bench/seckill/client-probe.ts [--requests 300000] [--rounds 3] [--connections 64]
//        [--url http://127.0.0.1:3100 --secret S [--stock 2000]]
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { mintCredentials } from '../../src/loadgen/credentials.js';
import { Deployment } from '../../src/loadgen/deployment.js';
import { driveLoad } from '../../src/loadgen/driver.js';
import { RequestPlan } from '../../src/loadgen/plan.js';
import { SaleRecorder } from '../../src/loadgen/recorder.js';
import { readFlags } from '../support/flags.js';

const STUB_PATH = '/api/vouchers/1/orders';

/** The child: a claim-shaped answer per request, nothing else. */
function serve(): void {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const admitted = n++ % 3 === 0;
      const body = admitted ? `{"orderId":"${1e15 + n}","status":"processing"}` : '{"code":"SOLD_OUT","message":"sold out","waitlisted":false}';
      res.writeHead(admitted ? 202 : 409, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  server.listen(0, '127.0.0.1', () => process.send!((server.address() as { port: number }).port));
  process.on('disconnect', () => process.exit(0));
}

interface Autocannon {
  (options: Record<string, unknown>, done: (err: Error | null) => void): void;
}

/** Where the claims go: the stub child, or a fresh voucher on a real deployment per run. */
async function target(url: string | undefined, secret: string | undefined, stock: number, buyers: number) {
  if (!url || !secret) {
    const child = fork(fileURLToPath(import.meta.url), ['serve'], { execArgv: ['--import', 'tsx'] });
    const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve(m as number)));
    // Tokens of a realistic length (an HS256 JWT with sub, iat, exp is ~150 characters).
    const tokens = Array.from({ length: buyers }, (_, i) => `Bearer ${'x'.repeat(140)}${i}`);
    return { origin: `http://127.0.0.1:${port}`, tokens, path: async () => STUB_PATH, close: () => child.disconnect() };
  }
  const credentials = await mintCredentials({ secret, buyers, firstUserId: 9_000_000_001n, ttlSeconds: 3600 });
  const deployment = new Deployment(url, credentials.admin);
  return {
    origin: new URL(url).origin,
    tokens: credentials.buyers,
    path: async () => deployment.path(`/api/vouchers/${(await deployment.createVoucher({ kind: 'seckill', stock, paymentTimeoutSeconds: 900 })).id}/orders`),
    close: () => deployment.close(),
  };
}

async function main(): Promise<void> {
  const values = readFlags({ requests: 300_000, rounds: 3, connections: 64, url: null, secret: null, stock: 2_000 });
  const { requests, connections } = values;
  const buyers = 100_000;
  const { origin, tokens, path, close } = await target(values.url, values.secret, values.stock, buyers);
  const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

  const clients: Record<string, (round: number, path: string) => Promise<void>> = {
    async undici(round, path) {
      const plan = new RequestPlan({ buyers, repeatShare: 1, sameKeyShare: 0.5, seed: round, keyTag: `u${round}` });
      await driveLoad({ origin, path, connections, requests, timeoutMs: 30_000 }, plan, { admin: '', buyers: tokens }, new SaleRecorder(performance.now()));
    },
    async autocannon(round, path) {
      let next = 0;
      let admitted = 0;
      await new Promise<void>((resolve, reject) =>
        autocannon(
          {
            url: origin,
            connections,
            amount: requests,
            method: 'POST',
            body: '{}',
            headers: { 'content-type': 'application/json' },
            requests: [
              {
                setupRequest(req: { path: string; headers: Record<string, string> }) {
                  const i = next++;
                  req.path = path;
                  req.headers.authorization = tokens[i % buyers]!;
                  req.headers['idempotency-key'] = `a${round}-${i}`;
                  return req;
                },
                onResponse(status: number, body: string) {
                  if (status === 202 && body.includes('"orderId":"')) admitted++;
                },
              },
            ],
          },
          (err) => (err ? reject(err) : resolve()),
        ),
      );
      if (!admitted) throw new Error('autocannon saw no admission');
    },
  };

  console.log(`${requests} requests per run, ${connections} connections, ${values.url ? `claim route of ${values.url}` : 'stub server in a child process'}`);
  try {
    for (let round = 1; round <= values.rounds; round++) {
      for (const [name, drive] of Object.entries(clients)) {
        const claimPath = await path();
        const cpu = process.cpuUsage();
        const at = performance.now();
        await drive(round, claimPath);
        const used = process.cpuUsage(cpu);
        const seconds = (performance.now() - at) / 1000;
        console.log(`round ${round} ${name.padEnd(10)} ${((used.user + used.system) / requests).toFixed(1).padStart(6)} µs CPU/request  ${Math.round(requests / seconds).toLocaleString('en-US').padStart(7)} req/s`);
      }
    }
  } finally {
    close();
  }
}

if (process.argv[2] === 'serve') serve();
else await main();
