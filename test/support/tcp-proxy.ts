// A loopback TCP proxy with faults: `forward` relays bytes; `refuse` closes new and
// existing connections; `drop-response` lets the request through and cuts the connection
// when the answer starts (the server did the work, the client never hears); `reset-mid-body`
// cuts the connection after `resetAfterBytes` from the client; `throttle` relays the
// client's bytes at `bytesPerSecond`. Tests take dependencies away from the API, or the
// API away from a client, without touching the real servers. With several targets, new
// connections go to them in turn (a round-robin load balancer in front of API replicas).
import net from 'node:net';

export type ProxyMode = 'forward' | 'refuse' | 'drop-response' | 'reset-mid-body' | 'throttle';

export class TcpProxy {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  mode: ProxyMode = 'forward';
  port = 0;
  resetAfterBytes = 64 * 1024;
  bytesPerSecond = 256 * 1024;
  /** Connections accepted so far (tests use it to fault only the first N). */
  accepted = 0;
  /** When set, the fault applies to this many connections, then the proxy forwards. */
  faultBudget = Infinity;

  private readonly targets: { host: string; port: number }[];
  /** Connections sent to each target, in the order given. */
  readonly perTarget: number[];

  constructor(target: { host: string; port: number } | { host: string; port: number }[]) {
    this.targets = Array.isArray(target) ? target : [target];
    this.perTarget = this.targets.map(() => 0);
  }

  async start(port = 0): Promise<this> {
    this.server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server!.address() as net.AddressInfo).port;
    return this;
  }

  /**
   * Switches the mode. Any fault mode also closes open connections: a connection's mode is
   * fixed when it is accepted, so a kept-alive connection would otherwise dodge the fault.
   */
  setMode(mode: ProxyMode): void {
    this.mode = mode;
    if (mode !== 'forward') for (const s of this.sockets) s.destroy();
  }

  private accept(client: net.Socket): void {
    this.accepted++;
    let mode = this.mode;
    if (mode !== 'forward' && mode !== 'refuse') {
      if (this.faultBudget <= 0) mode = 'forward';
      else this.faultBudget--;
    }
    if (mode === 'refuse') return void client.destroy();
    const turn = (this.accepted - 1) % this.targets.length;
    this.perTarget[turn]!++;
    const upstream = net.connect(this.targets[turn]!.port, this.targets[turn]!.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    if (mode === 'reset-mid-body') {
      let seen = 0;
      client.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen >= this.resetAfterBytes) {
          client.resetAndDestroy();
          upstream.destroy();
        } else upstream.write(chunk);
      });
    } else if (mode === 'throttle') {
      client.on('data', (chunk: Buffer) => {
        client.pause();
        upstream.write(chunk);
        setTimeout(() => client.resume(), (chunk.length / this.bytesPerSecond) * 1000);
      });
    } else client.pipe(upstream);
    if (mode === 'drop-response') {
      upstream.once('data', () => {
        client.resetAndDestroy();
        upstream.destroy();
      });
    } else upstream.pipe(client);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
