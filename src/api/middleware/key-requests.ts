// Notes every tenant request that came with an Idempotency-Key in its key's request log (the
// first answer, replays, attaches, refusals), once it has been answered.
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../../http/env';
import type { KeyRequestLog } from '../../http/key-request-log';
import { outcomeOf } from '../../metrics';

export function keyRequests(requests: KeyRequestLog): MiddlewareHandler<AppEnv> {
  return async function keyRequests(c, next) {
    await next();
    const idempotencyKey = c.get('idempotencyKey');
    const tenantId = c.get('tenantId');
    if (!idempotencyKey || !tenantId) return;
    requests.note({
      tenantId,
      idempotencyKey,
      at: new Date(),
      requestId: c.get('requestId'),
      method: c.req.method,
      route: c.req.routePath,
      status: c.res.status,
      outcome: outcomeOf(c.res.status, c.get('outcome'), c.get('errorCode')),
    });
  };
}
