// A loopback TCP proxy whose link can be cut: `forward` relays bytes, `refuse` closes
// new and existing connections at once. Tests use it to take Postgres, the object store
// or Temporal away from the API and give them back, without touching the real servers.
import net from 'node:net';

export type ProxyMode = 'forward' | 'refuse';

export class TcpProxy {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  mode: ProxyMode = 'forward';
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(port = 0): Promise<this> {
    this.server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server!.address() as net.AddressInfo).port;
    return this;
  }

  setMode(mode: ProxyMode): void {
    this.mode = mode;
    if (mode === 'refuse') for (const s of this.sockets) s.destroy();
  }

  private accept(client: net.Socket): void {
    if (this.mode === 'refuse') return void client.destroy();
    const upstream = net.connect(this.target.port, this.target.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
