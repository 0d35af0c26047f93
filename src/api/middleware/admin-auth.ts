// Operator routes (/admin/*, the codec server /codec/*) take the ADMIN_TOKEN as a bearer
// token, compared in constant time. Without a configured token they do not exist (404).
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

/**
 * The codec server's guard: the operator token, or — in the embedded default only, where this
 * process started the Temporal dev server and its UI on 127.0.0.1 — a browser showing that UI
 * on this machine (its Origin, from a loopback address, with no proxy's forwarding header).
 * Nothing more is open there: anyone on this machine can already read the data directory,
 * SECRETS_KEY file included.
 */
/** Headers proxies and CDNs add (Forwarded, Via, X-Forwarded-*, X-Real-IP and the client-IP family). */
const PROXY_HEADER =
  /^(forwarded|forwarded-for|via|x-forwarded(-.+)?|x-original-forwarded-for|x-real-ip|x-client-ip|true-client-ip|cf-connecting-ip|x-cluster-client-ip|fastly-client-ip|x-proxyuser-ip)$/i;

export function codecAuth(adminToken: string | undefined, devUiOrigin: string | undefined): MiddlewareHandler<AppEnv> {
  const operator = adminAuth(adminToken);
  return async function codecAuth(c, next) {
    const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
    const peer = env?.incoming?.socket?.remoteAddress ?? '';
    const loopback = peer === '127.0.0.1' || peer === '::1' || peer === '::ffff:127.0.0.1';
    // A proxy on this machine makes every peer loopback; any header a proxy adds says so.
    const proxied = [...c.req.raw.headers.keys()].some((name) => PROXY_HEADER.test(name));
    if (devUiOrigin && loopback && !proxied && header(c, 'origin') === devUiOrigin && !header(c, 'authorization')) return next();
    return operator(c, next);
  };
}
