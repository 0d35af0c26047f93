// One idempotency rule for the mutating JSON routes other than uploads (which have their
// own workflow-backed path): with an Idempotency-Key, the first request claims the key,
// its answer is stored (sealed: such answers may carry a new secret), later ones get that
// answer replayed byte for byte; another request under the key gets 422, a copy while the
// first still runs gets 409. 5xx, bad-input (400, 413) and momentary (409, 429) answers
// are not stored (the key stays usable). Without the header the route works as usual.
import { createHash } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { Pool } from '../db/pool';
import { claimRouteKey, completeRouteKey, releaseRouteKey } from '../db/queries/route-keys';
import { dependency, problem, Problem } from '../errors';
import type { SecretBox } from '../secret-box';
import { OPERATOR_TENANT_ID } from '../tenants';
import { parseIdempotencyKey } from './parse/idempotency-key';
import type { AppEnv } from './env';
import { headerValues } from './headers';
import { bodyText } from './json-body';
import { REPLAY_HEADERS } from './replay-headers';

/**
 * Answers not stored under the key: bad input (400, 413), which changed nothing, and answers
 * about the moment (409 quota reached, 429), which a retry with the same key may outgrow.
 * (Hono turns a handler's thrown problem into c.res, so these arrive here as responses.)
 */
const NOT_KEPT = new Set([400, 409, 413, 429]);

export interface IdempotentRouteOptions {
  pool: Pool;
  box: SecretBox;
  ttlSeconds: number;
  staleSeconds?: number;
  /**
   * Whether an upload of (tenant, key) is running (its workflow has not committed yet): such
   * a key belongs to the upload, so this route must not claim it. Absent: no uploads here.
   */
  uploadRunning?: (tenantId: string, key: string) => Promise<boolean>;
}

/** The associated data a stored answer is sealed under: it opens only for its own key row. */
export function answerContext(tenantId: string, key: string): string {
  return `${tenantId}\n${key}`;
}

export function idempotentRoute(opts: IdempotentRouteOptions): MiddlewareHandler<AppEnv> {
  return async function idempotentRoute(c, next) {
    const values = headerValues(c, 'idempotency-key');
    if (!values || values.length === 0) return next();
    const key = parseIdempotencyKey(values);
    c.set('idempotencyKey', key);
    const body = await bodyText(c);
    // Operator routes run without a tenant; their keys live under the reserved operator tenant.
    const tenantId = c.get('tenantId') ?? OPERATOR_TENANT_ID;
    const route = c.req.routePath;
    // A route with parameters (DELETE /v1/uploads/{id}) is a different request per resource.
    const resource = Object.keys(c.req.param()).length > 0 ? [c.req.path] : [];
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([c.req.method, route, tenantId, body, ...resource]))
      .digest('hex');
    const existing = await dependency('database_unavailable', () =>
      claimRouteKey(opts.pool, { tenantId, key, fingerprint, route, ttlSeconds: opts.ttlSeconds, staleSeconds: opts.staleSeconds ?? 60 }),
    );
    if (existing) {
      if (existing.expired) throw problem('idempotency_key_expired', 'This Idempotency-Key has expired; use a new key.');
      if (existing.fingerprint !== fingerprint)
        throw problem('idempotency_key_reuse', 'This Idempotency-Key was already used with a different request.');
      if (existing.response_status === null)
        throw problem('idempotency_in_progress', 'A request with this Idempotency-Key is still running.', { retryAfter: 1 });
      c.set('outcome', 'replayed');
      c.set('corsApplied', true);
      return c.body(opts.box.open(existing.response_body ?? '', answerContext(tenantId, key)), existing.response_status as 200, {
        ...c.get('corsHeaders'),
        'content-type': existing.response_status >= 400 ? 'application/problem+json' : 'application/json',
        ...REPLAY_HEADERS,
      });
    }
    // Upload key rows are written at commit, so a running upload holds its key only in
    // Temporal: look there after claiming. An upload that starts after this check finds
    // the claim at its commit and is refused instead (src/db/queries/records.ts).
    // A claim that cannot be released goes stale after `staleSeconds` and is claimed again.
    const release = () => releaseRouteKey(opts.pool, tenantId, key).catch(() => {});
    const tenantScoped = c.get('tenantId') !== undefined;
    if (tenantScoped && opts.uploadRunning) {
      const running = await opts.uploadRunning(tenantId, key).catch(async (err: unknown) => {
        await release();
        throw err instanceof Problem ? err : problem('temporal_unavailable', undefined, { cause: err });
      });
      if (running) {
        await release();
        throw problem('idempotency_key_reuse', 'This Idempotency-Key is held by an upload that is still running.');
      }
    }
    try {
      await next();
    } catch (err) {
      await release();
      throw err;
    }
    // Failures (5xx) and the statuses above are not kept: the key stays usable.
    if (c.res.status >= 500 || NOT_KEPT.has(c.res.status)) return void (await release());
    const stored = opts.box.seal(await c.res.clone().text(), answerContext(tenantId, key));
    await dependency('database_unavailable', () => completeRouteKey(opts.pool, tenantId, key, c.res.status, stored));
  };
}
