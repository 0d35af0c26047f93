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
