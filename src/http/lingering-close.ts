// Lingering close (as nginx's `lingering_close` and Apache do). When the API answers before
// it has read the whole request body (a 413, a refusal with `Connection: close`), Node
// closes the socket once the answer is written. The client is usually still sending; the
// kernel answers its next segments with a reset, and a reset discards what the client had
// not read yet: the answer. Instead the socket here sends the answer and its FIN, then
// reads and discards what still arrives, until the client closes, goes quiet for
// `idleMs`, or `totalMs` pass; only then is it closed. Requests read in full close as before.
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';

export interface LingerOptions {
  /** Close after this long without a byte from the client. */
  idleMs: number;
  /** Close after this long in all, however fast the client still sends. */
  totalMs: number;
}

export const DEFAULT_LINGER: LingerOptions = { idleMs: 5_000, totalMs: 30_000 };

const lastRequest = new WeakMap<Socket, IncomingMessage>();

export function lingerOnEarlyClose(server: Server, opts: LingerOptions = DEFAULT_LINGER): void {
  server.on('connection', (socket: Socket) => {
    const close = socket.destroySoon.bind(socket);
    // Node's HTTP server calls destroySoon() when a response marked as the last one is written.
    socket.destroySoon = () => {
      const req = lastRequest.get(socket);
      if (!req || req.complete || socket.destroyed || !socket.readable) return close();
      linger(socket, req, opts);
    };
  });
  server.on('request', (req: IncomingMessage) => lastRequest.set(req.socket, req));
}

function linger(socket: Socket, req: IncomingMessage, opts: LingerOptions): void {
  // The parser goes on reading the body into the request; whatever listened to it (a web
  // stream adapter would queue it all) lets go, and the bytes are dropped as they come.
  req.removeAllListeners('data');
  req.resume();
  const done = () => socket.destroy();
  const total = setTimeout(done, opts.totalMs);
  total.unref();
  socket.setTimeout(opts.idleMs, done);
  socket.once('end', done);
  socket.once('close', () => clearTimeout(total));
  socket.end();
  socket.resume();
}
