// Free TCP ports for private servers (Redis, topologies, seckill processes) of tests and benches.
import { createServer } from 'node:net';

const isFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/**
 * The first of `count` consecutive free ports, below Linux's ephemeral range (32768 and up, so
 * that no outgoing connection takes one while its server is down); with `clusterBus`, the ports
 * 10000 above them (a cluster node's bus port) are free too.
 */
export async function freePorts(count: number, { clusterBus = false } = {}): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * (clusterBus ? 2_000 : 12_000));
    const ports = Array.from({ length: count }, (_, i) => base + i);
    if ((await Promise.all([...ports, ...(clusterBus ? ports.map((p) => p + 10_000) : [])].map(isFree))).every(Boolean)) return base;
  }
  throw new Error(`no ${count} consecutive free ports`);
}
