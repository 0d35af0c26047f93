// One structured log line per request: route, tenant, key hash, outcome, duration.
// The key is hashed and the Authorization header never touches the log.
import type { MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import { sha256Hex } from '../../temporal/ids';
import type { AppEnv } from '../env';

export function accessLog(log: Logger): MiddlewareHandler<AppEnv> {
  return async function accessLog(c, next) {
    const started = performance.now();
    c.set('log', log);
    await next();
    if (!log.isLevelEnabled('info')) return;
    const key = c.get('idempotencyKey');
    log.info({
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      tenant: c.get('tenantId'),
      keyHash: key ? sha256Hex(key).slice(0, 16) : undefined,
      outcome: c.get('outcome'),
      ms: Math.round((performance.now() - started) * 10) / 10,
    }, 'request');
  };
}
