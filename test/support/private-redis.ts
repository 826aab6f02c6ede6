// A redis-server of a test's own, on a free port, for tests that do what would disturb other test
// files on the shared server (flush the script cache, restart, kill). scripts/services.sh installs
// redis-server, so the binary is there wherever the suite runs.
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { start } from './processes.js';
import { waitFor } from './wait.js';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface PrivateRedis {
  url: string;
  stop(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const server = start('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  let lastError = '';
  try {
    await waitFor(() => `redis-server on port ${port} to start (${lastError})`, async () => {
      try {
        await probe.connect();
        await probe.ping();
        return true;
      } catch (err) {
        probe.disconnect();
        lastError = (err as Error).message;
        if (server.exited) throw new Error(`redis-server on port ${port} did not start: ${lastError}`);
        return false;
      }
    }, 10_000, 50);
  } catch (err) {
    await server.stop('SIGKILL');
    throw err;
  } finally {
    probe.disconnect();
  }
  return {
    url,
    async stop() {
      await server.stop('SIGTERM');
    },
  };
}
