// CORS for browser clients on other origins (DESIGN.md §2). Hand-written rather than
// hono/cors: that middleware sets headers on `c.res` before the handler runs, which makes
// every response copy its headers into a second Response; measured on the replay path it
// cost a third of the throughput. Here preflights are answered directly; other responses
// get the headers afterwards, unless the handler already spread `c.get('corsHeaders')` into
// its own plain header object and set `corsApplied` (the hot upload/replay path does).
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../../http/env';
import { header } from '../../http/headers';

export interface CorsOptions {
  allowHeaders: string[];
  /** Response headers a browser script may read. */
  exposeHeaders: string[];
  allowMethods: string[];
  maxAgeSeconds: number;
}

export function cors(opts: CorsOptions): MiddlewareHandler<AppEnv> {
  const allowHeaders = opts.allowHeaders.join(', ');
  const allowMethods = opts.allowMethods.join(', ');
  // Every simple CORS response carries these; handlers may spread them in themselves.
  const corsHeaders: Readonly<Record<string, string>> = {
    'access-control-allow-origin': '*',
    'access-control-expose-headers': opts.exposeHeaders.join(', '),
  };
  return async function cors(c, next) {
    c.set('corsHeaders', corsHeaders);
    if (c.req.method === 'OPTIONS' && header(c, 'access-control-request-method')) {
      return c.body(null, 204, {
        'access-control-allow-origin': '*',
        'access-control-allow-methods': allowMethods,
        'access-control-allow-headers': allowHeaders,
        'access-control-max-age': String(opts.maxAgeSeconds),
      });
    }
    await next();
    // (Reading c.res.headers would build a Headers object; the flag avoids it.)
    if (c.get('corsApplied')) return;
    for (const [k, v] of Object.entries(corsHeaders)) c.res.headers.set(k, v);
  };
}
