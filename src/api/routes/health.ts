// Liveness (/healthz: the process answers) and readiness (/readyz: every dependency answers).
import { Hono } from 'hono';
import type { Client } from '@temporalio/client';
import type { Pool } from '../../db/pool';
import type { ObjectStore } from '../../storage/store';
import type { AppEnv } from '../env';
import { registry } from '../../metrics';

const CHECK_TIMEOUT_MS = 2_000;

async function check(fn: () => Promise<unknown>): Promise<'ok' | string> {
  try {
    await Promise.race([fn(), new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS).unref())]);
    return 'ok';
  } catch (err) {
    return err instanceof Error ? err.message || err.name : String(err);
  }
}

export function healthRoutes(deps: { pool: Pool; temporal: Client; store: ObjectStore }) {
  const app = new Hono<AppEnv>();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/metrics', async function prometheusMetrics(c) {
    return c.body(await registry.metrics(), 200, { 'content-type': registry.contentType });
  });
  app.get('/readyz', async function readiness(c) {
    const [postgres, temporal, objectStore] = await Promise.all([
      check(() => deps.pool.query('SELECT 1')),
      check(() => deps.temporal.workflowService.getSystemInfo({})),
      check(() => deps.store.probe()),
    ]);
    const checks = { postgres, temporal, objectStore };
    const ready = Object.values(checks).every((v) => v === 'ok');
    return c.json({ status: ready ? 'ready' : 'unavailable', checks }, ready ? 200 : 503, ready ? {} : { 'retry-after': '5' });
  });
  return app;
}
