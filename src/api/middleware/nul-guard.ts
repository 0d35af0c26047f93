// NUL characters cannot be stored in Postgres text: a path parameter or query value holding
// one would fail at the database and look like an outage (503). Refuse it up front.
import type { MiddlewareHandler } from 'hono';
import { problem } from '../../errors';
import type { AppEnv } from '../../http/env';

export function nulGuard(): MiddlewareHandler<AppEnv> {
  return async function nulGuard(c, next) {
    const url = c.req.url;
    if (url.includes('\0') || /%00/i.test(url)) throw problem('malformed_request', 'The URL must not contain NUL (%00) characters.');
    await next();
  };
}
