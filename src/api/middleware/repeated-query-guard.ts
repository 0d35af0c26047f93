// Routes read one value per query parameter (`?limit=1&limit=500` would be read as 1, and a
// signed URL's `expires` or `signature` as whichever came first), so a parameter given twice
// is refused up front rather than half-read.
import type { MiddlewareHandler } from 'hono';
import { problem } from '../../errors';
import type { AppEnv } from '../../http/env';

export function repeatedQueryGuard(): MiddlewareHandler<AppEnv> {
  return async function repeatedQueryGuard(c, next) {
    const query = c.req.url.indexOf('?');
    if (query !== -1) {
      const seen = new Set<string>();
      for (const name of new URLSearchParams(c.req.url.slice(query + 1)).keys()) {
        if (seen.has(name))
          throw problem('query_invalid', `The query parameter ${JSON.stringify(name)} is given more than once; give it once.`);
        seen.add(name);
      }
    }
    await next();
  };
}
