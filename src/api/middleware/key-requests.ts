// Notes in its key's request log every tenant request with an Idempotency-Key that the key
// answered (the first answer, replays, attaches) or that the key's rule refused (another
// request's key, an expired key, one still in flight), once answered. Other refusals (a bad
// header, a missing scope, a quota) never reached the key and change nothing.
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../../http/env';
import type { KeyRequestLog } from '../../http/key-request-log';
import type { ErrorCode } from '../../errors';
import { outcomeOf } from '../../metrics';

const KEY_RULE_REFUSALS: ReadonlySet<string> = new Set<ErrorCode>([
  'idempotency_key_reuse',
  'idempotency_key_expired',
  'idempotency_in_progress',
]);

export function keyRequests(requests: KeyRequestLog): MiddlewareHandler<AppEnv> {
  return async function keyRequests(c, next) {
    await next();
    const idempotencyKey = c.get('idempotencyKey');
    const tenantId = c.get('tenantId');
    if (!idempotencyKey || !tenantId) return;
    if (c.res.status >= 400 && !KEY_RULE_REFUSALS.has(c.get('errorCode') ?? '')) return;
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
