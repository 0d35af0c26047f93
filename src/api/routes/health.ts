// Liveness (/healthz: the process answers, with its build), readiness (/readyz: every
// dependency answers and the process is not stopping) and Prometheus metrics (/metrics).
// Served by the API on its port and by a worker on its own (src/ops-server.ts).
import { createRoute } from '@hono/zod-openapi';
import { pingDatabase, type Pool } from '../../db/pool';
import type { ObjectStore } from '../../storage/store';
import { registry } from '../../metrics';
import { commit, version } from '../../version';
import { retryAfterHeader, route, router } from '../../http/openapi';
import { Health, Readiness } from '../schemas';

const CHECK_TIMEOUT_MS = 2_000;

/** Named readiness checks: each resolves once its dependency answers within the deadline it is given. */
export type ReadinessChecks = Record<string, (deadlineMs: number) => Promise<unknown>>;

export interface HealthDeps {
  role: 'all' | 'api' | 'worker';
  checks: ReadinessChecks;
  /** True once the process was told to stop: /readyz answers 503 so balancers stop sending. */
  draining: () => boolean;
}

/** A Temporal connection (the client's or a worker's native one), asked for its system info. */
interface TemporalConnection {
  withDeadline<T>(deadline: number, fn: () => Promise<T>): Promise<T>;
  workflowService: { getSystemInfo(request: object): Promise<unknown> };
}

/** The checks every role makes: Postgres, Temporal and the object store answer. */
export function dependencyChecks(deps: { pool: Pool; temporal: TemporalConnection; store: ObjectStore }): ReadinessChecks {
  return {
    postgres: () => pingDatabase(deps.pool),
    // With a deadline, so a check that timed out does not keep retrying in the background.
    temporal: (deadline) => deps.temporal.withDeadline(deadline, () => deps.temporal.workflowService.getSystemInfo({})),
    objectStore: () => deps.store.probe(),
  };
}

async function check(fn: (deadlineMs: number) => Promise<unknown>): Promise<'ok' | string> {
  try {
    await Promise.race([
      fn(Date.now() + CHECK_TIMEOUT_MS),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS).unref()),
    ]);
    return 'ok';
  } catch (err) {
    return err instanceof Error ? err.message || err.name : String(err);
  }
}

const healthz = createRoute({
  method: 'get',
  path: '/healthz',
  tags: ['operations'],
  summary: 'Liveness: the process answers, with its role, version and commit',
  responses: { 200: { description: 'Alive', content: { 'application/json': { schema: Health } } } },
});
const readyz = createRoute({
  method: 'get',
  path: '/readyz',
  tags: ['operations'],
  summary: 'Readiness: Postgres, Temporal and the object store answer, and the process is not draining',
  responses: {
    200: { description: 'Ready', content: { 'application/json': { schema: Readiness } } },
    503: {
      description: 'A dependency does not answer (see the checks member), or the process is stopping (status `draining`)',
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

export function healthRoutes(deps: HealthDeps) {
  const app = router();
  route(app, healthz, (c) => c.json({ status: 'ok' as const, role: deps.role, version, commit }));
  route(app, metricsRoute, async function prometheusMetrics(c) {
    return c.body(await registry.metrics(), 200, { 'content-type': registry.contentType });
  });
  route(app, readyz, async function readiness(c) {
    if (deps.draining()) return c.json({ status: 'draining' as const, checks: {} }, 503, { 'retry-after': '5' });
    const names = Object.keys(deps.checks);
    const results = await Promise.all(names.map((name) => check(deps.checks[name]!)));
    const checks = Object.fromEntries(names.map((name, i) => [name, results[i]!]));
    const ready = results.every((v) => v === 'ok');
    return c.json(
      { status: ready ? ('ready' as const) : ('unavailable' as const), checks },
      ready ? 200 : 503,
      ready ? {} : { 'retry-after': '5' },
    );
  });
  return app;
}
