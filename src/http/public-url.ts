// Absolute URLs for what the API hands out to be fetched later (signed PUTs of the embedded
// store, companion endpoints): from PUBLIC_URL when the API sits behind a proxy, else from
// the request's own origin. A client then never special-cases one store or one mode.
import type { Context } from 'hono';
import type { AppEnv } from './env';

export function absoluteUrl(c: Context<AppEnv>, publicUrl: string | undefined, path: string): string {
  if (!path.startsWith('/')) return path;
  const base = publicUrl ?? new URL(c.req.url).origin;
  return `${base.replace(/\/+$/, '')}${path}`;
}
