// A TCP proxy the tests can cut and restore, or make silent, to make the database unreachable for
// one test file without stopping the MariaDB server other files are using.
import net from 'node:net';

function forward([client, upstream]: [net.Socket, net.Socket]): void {
  client.pipe(upstream).pipe(client);
}

export class TcpProxy {
  private targetHost: string;
  private targetPort: number;
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  /** Each connection's two sockets, for stall() and resume(). */
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  private silent = false;
  port = 0;

  constructor(targetHost: string, targetPort: number) {
    this.targetHost = targetHost;
    this.targetPort = targetPort;
  }

  async start(port = 0): Promise<number> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.targetHost);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      const pair: [net.Socket, net.Socket] = [client, upstream];
      this.pairs.add(pair);
      if (!this.silent) forward(pair);
      client.on('close', () => {
        this.pairs.delete(pair);
        upstream.destroy();
      });
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
    return this.port;
  }

  /** Drops every connection and refuses new ones (as if the server went away). */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * Stops forwarding bytes, both ways, on every connection (new ones too) while keeping them all
   * open: a server that hangs rather than one that goes away (no RST, no FIN, nothing).
   */
  stall(): void {
    this.silent = true;
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  /** Forwards again what was held back, and what comes next. */
  resume(): void {
    this.silent = false;
    for (const pair of this.pairs) forward(pair);
  }

  /**
   * Sends new connections to another server and drops the open ones, so that clients reconnect
   * there (a failover behind a stable address).
   */
  retarget(host: string, port: number): void {
    this.targetHost = host;
    this.targetPort = port;
    for (const s of this.sockets) s.destroy();
  }

  /** Accepts connections again, on the same port. */
  async restore(): Promise<void> {
    if (!this.server) await this.start(this.port);
  }

  async stop(): Promise<void> {
    await this.cut();
  }
}
