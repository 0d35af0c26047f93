// How the HTTP listener stops. A keep-alive client never sees the listener close: it goes
// on sending on the connection it has. So from the stop signal on, every answer carries
// `Connection: close` and idle connections close once idle for IDLE_LINGER_MS (the client
// reconnects, reaching another instance once /readyz has taken this one out). When the drain
// period ends the listener closes, a request still arriving on an old connection is refused
// with 503 and Retry-After, and the stop completes as soon as the last in-flight request is
// answered; the grace period is only the bound for a request that never ends.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { problem } from '../errors';
import { problemResponse } from './raw-problem';

export type DrainPhase = 'serving' | 'draining' | 'closed';

type Fetch<A extends unknown[]> = (request: Request, ...rest: A) => Response | Promise<Response>;

/**
 * How long a connection with no request in progress may stay once the stop has begun. Not
 * closed at once: a request a client has just written may not have been read yet, and closing
 * the connection under it resets it before a byte is answered. Within the linger it is read,
 * and answered with `Connection: close` (or 503 after the drain).
 */
export const IDLE_LINGER_MS = 1000;

export class ConnectionDrain {
  #phase: DrainPhase = 'serving';
  #server: Server | undefined;
  /** Requests not yet answered in full, with the socket each arrived on. */
  readonly #open = new Map<ServerResponse, Socket>();
  /** Every connection the listener has open. */
  readonly #sockets = new Set<Socket>();

  get phase(): DrainPhase {
    return this.#phase;
  }

  /** The app's fetch, answering 503 `shutting_down` once the drain has ended. */
  gate<A extends unknown[]>(fetch: Fetch<A>): Fetch<A> {
    return (request, ...rest) =>
      this.#phase === 'closed'
        ? problemResponse(problem('shutting_down', 'This instance is stopping; send the request again.'), { connection: 'close' })
        : fetch(request, ...rest);
  }

  /** Watches the listener's requests; call once the server exists. */
  watch(server: Server): void {
    this.#server = server;
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
    // Before the app's listener: the answer's keep-alive is decided before it is written.
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      const socket = req.socket;
      // (A request that arrives in the linger clears its connection's idle timer: node's server does.)
      if (this.#phase !== 'serving') res.shouldKeepAlive = false;
      this.#open.set(res, socket);
      res.once('close', () => this.#open.delete(res));
      // An answer whose head went out before the signal still promised keep-alive: end the connection after it.
      res.once('finish', () => {
        if (this.#phase !== 'serving' && res.shouldKeepAlive) setImmediate(() => socket.end());
      });
    });
  }

  /** The stop signal: answers from now on close their connection; idle connections close after the linger. */
  begin(): void {
    if (this.#phase !== 'serving') return;
    this.#phase = 'draining';
    for (const res of this.#open.keys()) if (!res.headersSent) res.shouldKeepAlive = false;
    this.#lingerIdle();
  }

  /** Connections with no request in progress close once idle for IDLE_LINGER_MS (the server's own timeout destroys them). */
  #lingerIdle(): void {
    const busy = new Set(this.#open.values());
    for (const socket of this.#sockets) if (!busy.has(socket)) socket.setTimeout(IDLE_LINGER_MS);
  }

  /**
   * The drain is over: the listener closes and new requests are refused. Resolves when the
   * last connection has gone, or after `graceMs`, when the connections still open are cut.
   */
  close(graceMs: number): Promise<void> {
    this.begin();
    this.#phase = 'closed';
    const server = this.#server;
    if (!server) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const cut = setTimeout(() => server.closeAllConnections(), graceMs);
      cut.unref();
      // net's close, not http's: the listener stops, but idle connections are not closed at
      // once (http's would), so a request already on its way is read and refused with 503.
      NetServer.prototype.close.call(server, () => {
        clearTimeout(cut);
        resolve();
      });
      this.#lingerIdle();
    });
  }
}
