// Operator routes (/admin/*) take the ADMIN_TOKEN as a bearer token, compared in constant
// time. Without a configured token the operator routes do not exist (404).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { problem } from '../../errors';
import type { AppEnv } from '../../http/env';
import { header } from '../../http/headers';

const digest = (s: string) => createHash('sha256').update(s).digest();

export function adminAuth(adminToken: string | undefined): MiddlewareHandler<AppEnv> {
  const expected = adminToken ? digest(adminToken) : undefined;
  return async function adminAuth(c, next) {
    if (!expected) throw problem('not_found', 'Operator routes are disabled (set ADMIN_TOKEN).');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header(c, 'authorization') ?? '');
    if (!m || !timingSafeEqual(digest(m[1]!), expected)) throw problem('unauthorized', 'Send Authorization: Bearer <operator token>.');
    await next();
  };
}
