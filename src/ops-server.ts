// A process's operator port (OPS_PORT; a worker's WORKER_HTTP_PORT by default): /healthz,
// /readyz and /metrics, so a split worker's counters are scraped and its health checked like
// the API's, and an API's stay off the port its clients reach. Nothing else is served there.
import { serve, type ServerType } from '@hono/node-server';
import { healthRoutes, type HealthDeps } from './api/routes/health';
import { onError, onNotFound } from './api/problem-handler';

export interface OpsServer {
  url: string;
  close(): Promise<void>;
}

export async function serveOps(host: string, port: number, health: HealthDeps): Promise<OpsServer> {
  const app = healthRoutes(health);
  app.notFound(onNotFound);
  app.onError(onError);
  let server: ServerType | undefined;
  const bound = await new Promise<number>((resolve, reject) => {
    server = serve({ fetch: app.fetch, hostname: host, port }, (info) => resolve(info.port));
    server.once('error', reject);
  });
  const http = server as import('node:http').Server;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
