// Liveness (/healthz: the process answers), readiness (/readyz: every dependency answers)
// and Prometheus metrics (/metrics).
import { createRoute } from '@hono/zod-openapi';
import type { Client } from '@temporalio/client';
import type { Pool } from '../../db/pool';
import type { ObjectStore } from '../../storage/store';
import { registry } from '../../metrics';
import { retryAfterHeader, route, router } from '../openapi';
import { Health, Readiness } from '../schemas';

const CHECK_TIMEOUT_MS = 2_000;

async function check(fn: () => Promise<unknown>): Promise<'ok' | string> {
  try {
    await Promise.race([fn(), new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS).unref())]);
    return 'ok';
  } catch (err) {
    return err instanceof Error ? err.message || err.name : String(err);
  }
}

const healthz = createRoute({
  method: 'get',
  path: '/healthz',
  tags: ['operations'],
  summary: 'Liveness: the process answers',
  responses: { 200: { description: 'Alive', content: { 'application/json': { schema: Health } } } },
});
const readyz = createRoute({
  method: 'get',
  path: '/readyz',
  tags: ['operations'],
  summary: 'Readiness: Postgres, Temporal and the object store answer',
  responses: {
    200: { description: 'Ready', content: { 'application/json': { schema: Readiness } } },
    503: {
      description: 'A dependency does not answer (see the checks member)',
      headers: { 'Retry-After': retryAfterHeader },
      content: { 'application/json': { schema: Readiness } },
    },
  },
});
const metricsRoute = createRoute({
  method: 'get',
  path: '/metrics',
  tags: ['operations'],
  summary: 'Prometheus metrics (requests by outcome, latencies, bytes, workflows, webhooks, housekeeping)',
  responses: { 200: { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } } },
});

export function healthRoutes(deps: { pool: Pool; temporal: Client; store: ObjectStore }) {
  const app = router();
  route(app, healthz, (c) => c.json({ status: 'ok' }));
  route(app, metricsRoute, async function prometheusMetrics(c) {
    return c.body(await registry.metrics(), 200, { 'content-type': registry.contentType });
  });
  route(app, readyz, async function readiness(c) {
    const [postgres, temporal, objectStore] = await Promise.all([
      check(() => deps.pool.query('SELECT 1')),
      // With a deadline, so a check that timed out does not keep retrying in the background.
      check(() =>
        deps.temporal.connection.withDeadline(Date.now() + CHECK_TIMEOUT_MS, () => deps.temporal.workflowService.getSystemInfo({})),
      ),
      check(() => deps.store.probe()),
    ]);
    const checks = { postgres, temporal, objectStore };
    const ready = Object.values(checks).every((v) => v === 'ok');
    return c.json({ status: ready ? 'ready' : 'unavailable', checks }, ready ? 200 : 503, ready ? {} : { 'retry-after': '5' });
  });
  return app;
}
