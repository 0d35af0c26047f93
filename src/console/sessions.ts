// Console sign-in: an API key (or ADMIN_TOKEN) is exchanged once for a random session
// cookie; only its hash is stored. A tenant session is a derived credential of its key
// (src/tokens/parent.ts): every request re-reads the key, so the session holds exactly the
// key's current scopes and ends when the key is revoked. An operator session holds /admin.
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Credential } from '../credentials';
import type { Pool } from '../db/pool';
import { insertConsoleSession, revokeKeySessions, touchConsoleSession, type ConsoleSessionRow } from './queries';
import { lookupApiKey, OPERATOR_TENANT_ID } from '../tenants';
import { currentPrincipal } from '../tokens/parent';

/** Who a console request is for: a tenant, as its key would be now, or the operator. */
export type ConsoleCaller =
  { kind: 'tenant'; session: ConsoleSessionRow; credential: Credential } | { kind: 'operator'; session: ConsoleSessionRow };

function hashCookie(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

function sameSecret(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y);
}

export class ConsoleSessions {
  constructor(private readonly deps: { pool: Pool; ttlSeconds: number; adminToken: string | undefined }) {}

  /** A new session for this key or operator token (and its cookie value); undefined when the secret is not valid. */
  async signIn(secret: string, userAgent: string | undefined): Promise<{ cookie: string; caller: ConsoleCaller } | undefined> {
    const { pool, adminToken, ttlSeconds } = this.deps;
    const operator = adminToken !== undefined && sameSecret(secret, adminToken);
    const credential = operator ? undefined : await lookupApiKey(pool, secret);
    if (!operator && !credential) return undefined;
    const cookie = randomBytes(32).toString('base64url');
    const session = await insertConsoleSession(pool, {
      id: randomUUID(),
      tokenHash: hashCookie(cookie),
      tenantId: credential?.tenantId ?? OPERATOR_TENANT_ID,
      apiKeyId: credential?.principal.id ?? null,
      csrfToken: randomBytes(24).toString('base64url'),
      userAgent: userAgent?.slice(0, 200) ?? null,
      ttlSeconds,
    });
    return { cookie, caller: credential ? { kind: 'tenant', session, credential } : { kind: 'operator', session } };
  }

  /** The caller of a live session cookie; undefined when it is unknown, expired or revoked, or its key is. */
  async resolve(cookie: string): Promise<ConsoleCaller | undefined> {
    const { pool } = this.deps;
    const session = await touchConsoleSession(pool, hashCookie(cookie));
    if (!session) return undefined;
    if (session.api_key_id === null) return this.deps.adminToken === undefined ? undefined : { kind: 'operator', session };
    const principal = await currentPrincipal(pool, session.tenant_id, { kind: 'key', id: session.api_key_id });
    if (!principal) {
      // The key was revoked: its sessions end with it (listed as revoked from now on).
      await revokeKeySessions(pool, session.tenant_id, session.api_key_id);
      return undefined;
    }
    return { kind: 'tenant', session, credential: { tenantId: session.tenant_id, principal } };
  }

  /** Whether a form's CSRF token is the session's. */
  static csrfMatches(caller: ConsoleCaller, token: string | undefined): boolean {
    return token !== undefined && sameSecret(token, caller.session.csrf_token);
  }
}
