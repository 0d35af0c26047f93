// The console wing as the app mounts it: its sessions, its in-process API client and its pages
// under /console.
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Pool } from '../db/pool';
import type { Wing } from '../http/wing';
import { InProcessApi, type ApiFetch } from './api';
import { consoleRoutes } from './routes';
import { ConsoleSessions } from './sessions';

export function consoleWing(deps: { config: Config; pool: Pool; temporal: Client; devUiOrigin?: string; fetch: () => ApiFetch }): Wing {
  const { config, pool } = deps;
  const ttlSeconds = Math.round(config.CONSOLE_SESSION_HOURS * 3600);
  const ui = config.TEMPORAL_UI_URL ?? deps.devUiOrigin;
  const routes = consoleRoutes({
    pool,
    api: new InProcessApi(deps.fetch, config.ADMIN_TOKEN),
    sessions: new ConsoleSessions({ pool, ttlSeconds, adminToken: config.ADMIN_TOKEN }),
    ttlSeconds,
    publicUrl: config.PUBLIC_URL,
    temporal: {
      client: deps.temporal,
      namespace: config.TEMPORAL_NAMESPACE,
      queues: [config.TASK_QUEUE_UPLOADS, config.TASK_QUEUE_TRANSCODE],
    },
    temporalUi: ui ? { url: ui.replace(/\/$/, ''), namespace: config.TEMPORAL_NAMESPACE } : undefined,
  });
  // Its pages carry their own credential (the session cookie).
  return { mountPublic: (app) => app.route('/console', routes) };
}
