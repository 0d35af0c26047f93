// An HTTP server on 127.0.0.1 at a free port, for the origins and receivers tests, benches and
// chaos runs start: closing it drops the connections still open (a read left unconsumed, a
// response held on purpose) rather than waiting for them.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoopbackServer {
  server: http.Server;
  /** `http://127.0.0.1:port` */
  base: string;
  close(): Promise<void>;
}

export async function serveOnLoopback(handler: http.RequestListener): Promise<LoopbackServer> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    server,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
