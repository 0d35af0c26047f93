// Raw header access where the parsed Headers object would hide detail (duplicates).
import type { Context } from 'hono';
import type { AppEnv } from './env';

/** Every field line received for `name` (Node keeps duplicates apart in headersDistinct). */
export function headerValues(c: Context<AppEnv>, name: string): string[] | undefined {
  const incoming = c.env?.incoming;
  if (incoming) return incoming.headersDistinct[name.toLowerCase()];
  const v = c.req.header(name);
  return v === undefined ? undefined : [v];
}

/**
 * One request header (`name` lower-case), read from Node's already-parsed header object.
 * `c.req.header()` would first build a WHATWG Headers object from every raw header, which
 * measured as a large share of the replay path's CPU. Repeated lines join with ", " like
 * Headers.get() (Node keeps only the first of single-valued ones such as Content-Type,
 * Content-Length, Authorization; parsers that must see every line use headerValues()).
 */
export function header(c: Context<AppEnv>, name: string): string | undefined {
  const incoming = c.env?.incoming;
  if (!incoming) return c.req.header(name);
  const v = incoming.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}
