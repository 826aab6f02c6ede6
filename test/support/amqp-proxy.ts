// A TCP proxy in front of the shared RabbitMQ that reads the AMQP frames going each way, to play
// brokers the shared server must not be turned into: one that finishes the handshake but never
// answers channel setup, and one under a resource alarm, which (like RabbitMQ) sends
// Connection.Blocked to each connection that publishes and stops reading from it until the alarm
// clears. Frames are forwarded whole, so one can be injected between two.
import net from 'node:net';

const PROTOCOL_HEADER_BYTES = 8; // "AMQP" 0 0 9 1, sent by the client before its first frame
const FRAME_METHOD = 1;
const FRAME_END = 0xce;
const CONNECTION_BLOCKED = [10, 60] as const;
const CONNECTION_UNBLOCKED = [10, 61] as const;
const BASIC_PUBLISH = [60, 40] as const;

interface Frame {
  bytes: Buffer;
  channel: number;
  /** [class, method] of a method frame, else null. */
  method: readonly [number, number] | null;
}

/** Cuts a byte stream into whole frames (after `skip` bytes passed on as they are). */
function frameReader(skip: number, onFrame: (f: Frame | Buffer) => void): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    if (skip > 0) {
      const head = pending.subarray(0, skip);
      skip -= head.length;
      pending = pending.subarray(head.length);
      onFrame(head);
    }
    while (pending.length >= 7) {
      const size = 7 + pending.readUInt32BE(3) + 1;
      if (pending.length < size) return;
      const bytes = pending.subarray(0, size);
      pending = pending.subarray(size);
      const method = bytes[0] === FRAME_METHOD ? ([bytes.readUInt16BE(7), bytes.readUInt16BE(9)] as const) : null;
      onFrame({ bytes, channel: bytes.readUInt16BE(1), method });
    }
  };
}

function connectionFrame([classId, methodId]: readonly [number, number], args: Buffer): Buffer {
  const payload = Buffer.alloc(4 + args.length);
  payload.writeUInt16BE(classId, 0);
  payload.writeUInt16BE(methodId, 2);
  args.copy(payload, 4);
  const header = Buffer.alloc(7);
  header.writeUInt8(FRAME_METHOD, 0);
  header.writeUInt16BE(0, 1);
  header.writeUInt32BE(payload.length, 3);
  return Buffer.concat([header, payload, Buffer.from([FRAME_END])]);
}

const isMethod = (f: Frame, [c, m]: readonly [number, number]) => f.method?.[0] === c && f.method[1] === m;

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  /** Blocked by the alarm: what the client sends is held here, unread, until it clears. */
  held: Buffer[] | null;
}

export class AmqpProxy {
  private readonly targetHost: string;
  private readonly targetPort: number;
  /** Frames on a channel other than 0 are swallowed: channel setup is never answered. */
  stallChannels = false;
  private alarm = false;
  private server: net.Server | null = null;
  private readonly pairs = new Set<Pair>();

  constructor(targetHost: string, targetPort: number) {
    this.targetHost = targetHost;
    this.targetPort = targetPort;
  }

  /** Client connections open now. */
  get connections(): number {
    return this.pairs.size;
  }

  async start(): Promise<number> {
    const server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    this.server = server;
    return (server.address() as net.AddressInfo).port;
  }

  /** Raises or clears the resource alarm. Clearing unblocks every blocked connection. */
  setAlarm(on: boolean): void {
    this.alarm = on;
    if (on) return;
    for (const pair of this.pairs) {
      if (!pair.held) continue;
      const held = pair.held;
      pair.held = null;
      pair.client.write(connectionFrame(CONNECTION_UNBLOCKED, Buffer.alloc(0)));
      for (const bytes of held) pair.upstream.write(bytes);
    }
  }

  async stop(): Promise<void> {
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    const upstream = net.connect(this.targetPort, this.targetHost);
    const pair: Pair = { client, upstream, held: null };
    this.pairs.add(pair);
    for (const s of [client, upstream]) {
      s.on('error', () => {});
      s.on('close', () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.on('data', frameReader(0, (f) => client.write(Buffer.isBuffer(f) ? f : f.bytes)));
    client.on(
      'data',
      frameReader(PROTOCOL_HEADER_BYTES, (f) => {
        if (Buffer.isBuffer(f)) return void upstream.write(f);
        if (pair.held) return void pair.held.push(f.bytes);
        if (this.stallChannels && f.channel !== 0) return;
        if (this.alarm && isMethod(f, BASIC_PUBLISH)) {
          pair.held = [f.bytes];
          const reason = Buffer.from('low on memory (test alarm)');
          client.write(connectionFrame(CONNECTION_BLOCKED, Buffer.concat([Buffer.from([reason.length]), reason])));
          return;
        }
        upstream.write(f.bytes);
      }),
    );
  }
}
