// The console's sessions (migration 032). The cookie is looked up by its hash only.
import type { Queryable } from '../db/pool';

export interface ConsoleSessionRow {
  id: string;
  tenant_id: string;
  /** null: an operator session. */
  api_key_id: string | null;
  csrf_token: string;
  user_agent: string | null;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
}

const COLUMNS = 'id, tenant_id, api_key_id, csrf_token, user_agent, created_at, last_seen_at, expires_at, revoked_at';

export async function insertConsoleSession(
  db: Queryable,
  s: {
    id: string;
    tokenHash: Buffer;
    tenantId: string;
    apiKeyId: string | null;
    csrfToken: string;
    userAgent: string | null;
    ttlSeconds: number;
  },
): Promise<ConsoleSessionRow> {
  const res = await db.query<ConsoleSessionRow>(
    `INSERT INTO console_sessions (id, token_hash, tenant_id, api_key_id, csrf_token, user_agent, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7)) RETURNING ${COLUMNS}`,
    [s.id, s.tokenHash, s.tenantId, s.apiKeyId, s.csrfToken, s.userAgent, s.ttlSeconds],
  );
  return res.rows[0]!;
}

/**
 * The live session with this cookie hash, its last use moved to now (at most once a minute,
 * so a page of requests writes one row once). Undefined when unknown, revoked or expired.
 */
export async function touchConsoleSession(db: Queryable, tokenHash: Buffer): Promise<ConsoleSessionRow | undefined> {
  const res = await db.query<ConsoleSessionRow>(
    `WITH live AS (
       SELECT id FROM console_sessions WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > now()
     ), touched AS (
       UPDATE console_sessions s SET last_seen_at = now() FROM live
        WHERE s.id = live.id AND s.last_seen_at < now() - interval '1 minute'
       RETURNING s.id
     )
     SELECT ${COLUMNS} FROM console_sessions WHERE id = (SELECT id FROM live)`,
    [tokenHash],
  );
  return res.rows[0];
}

/** The tenant's sessions, newest first (an operator's: the operator's). */
export async function listConsoleSessions(db: Queryable, tenantId: string, limit = 100): Promise<ConsoleSessionRow[]> {
  const res = await db.query<ConsoleSessionRow>(
    `SELECT ${COLUMNS} FROM console_sessions WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
    [tenantId, limit],
  );
  return res.rows;
}

/** Revokes one of the tenant's sessions; false when it has none with this id still live. */
export async function revokeConsoleSession(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const res = await db.query(`UPDATE console_sessions SET revoked_at = now() WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL`, [
    tenantId,
    id,
  ]);
  return (res.rowCount ?? 0) > 0;
}

/** Revokes every live session signed in with this key (the key was revoked). */
export async function revokeKeySessions(db: Queryable, tenantId: string, apiKeyId: string): Promise<number> {
  const res = await db.query(
    `UPDATE console_sessions SET revoked_at = now() WHERE tenant_id = $1 AND api_key_id = $2 AND revoked_at IS NULL`,
    [tenantId, apiKeyId],
  );
  return res.rowCount ?? 0;
}

/** Operators' view: every tenant's live sessions, counted. */
export async function countOpenConsoleSessions(db: Queryable): Promise<number> {
  const res = await db.query<{ n: string }>(`SELECT count(*) AS n FROM console_sessions WHERE revoked_at IS NULL AND expires_at > now()`);
  return Number(res.rows[0]!.n);
}
