// One structured log line and one metrics update per request: route, tenant, key hash,
// workflow id, outcome, duration. The key is hashed; the Authorization header never
// touches the log.
import type { MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import { sha256Hex } from '../../temporal/ids';
import { metrics, outcomeOf } from '../../metrics';
import type { AppEnv } from '../../http/env';

export function accessLog(log: Logger): MiddlewareHandler<AppEnv> {
  return async function accessLog(c, next) {
    const started = performance.now();
    c.set('log', log.child({ requestId: c.get('requestId') }));
    await next();
    const seconds = (performance.now() - started) / 1000;
    const route = c.req.routePath;
    const outcome = outcomeOf(c.res.status, c.get('outcome'), c.get('errorCode'));
    metrics.requests.inc({ method: c.req.method, route, outcome, status: String(c.res.status) });
    if (route === '/v1/uploads' && c.req.method === 'POST') {
      // Answered from the stored key row without touching a workflow: the replay path.
      const fromKeyRow = (outcome === 'replayed' || outcome === 'reuse' || outcome === 'expired') && !c.get('workflowId');
      metrics.uploadSeconds.observe({ path: fromKeyRow ? 'replay' : 'upload' }, seconds);
    }
    if (!log.isLevelEnabled('info')) return;
    const key = c.get('idempotencyKey');
    c.get('log').info(
      {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        tenant: c.get('tenantId'),
        keyHash: key ? sha256Hex(key).slice(0, 16) : undefined,
        workflowId: c.get('workflowId'),
        outcome,
        ms: Math.round(seconds * 10_000) / 10,
      },
      'request',
    );
  };
}
