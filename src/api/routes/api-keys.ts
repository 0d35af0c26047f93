// /v1/api-keys: a tenant manages its own API keys. A new key is shown in the creation answer
// (and in idempotent replays of it, which are stored sealed); only its hash is kept.
import { createRoute, z } from '@hono/zod-openapi';
import { pageApiKeys, revokeApiKey, type ApiKeyRow } from '../../db/queries/tenants';
import { dependency, problem } from '../../errors';
import { insertWithinQuota } from '../../db/queries/quotas';
import { createApiKey } from '../../tenants';
import { heldScopes, SCOPES } from '../../credentials';
import { withinQuota } from '../../http/quota';
import { jsonBody } from '../../http/json-body';
import type { CredentialCache } from '../middleware/auth';
import { idempotentRoute, type IdempotentRouteOptions } from '../../http/idempotent-route';
import { COMMON_V1_PROBLEMS, IDEMPOTENT_PROBLEMS, problems } from '../../http/openapi';
import { createdResponse, idempotentJsonRequest, route, router } from '../../http/openapi';
import { ApiKeyCreated, ApiKeyList, CreateApiKey } from '../schemas';
import { PageQuery, Uuid } from '../../http/schemas';
import { creationOrderPage } from '../../http/list-query';
import { requires } from '../../http/scopes';

export function apiKeyView(k: ApiKeyRow) {
  return {
    id: k.id,
    label: k.label,
    scopes: [...heldScopes(k.scopes)],
    createdAt: k.created_at.toISOString(),
    revokedAt: k.revoked_at?.toISOString() ?? null,
    lastUsedAt: k.last_used_at?.toISOString() ?? null,
  };
}

const createKeyRoute = createRoute({
  method: 'post',
  path: '/',
  tags: ['api keys'],
  summary: 'Create another API key for the calling tenant, with all or some of the scopes the calling key holds',
  security: requires('keys:manage'),
  request: idempotentJsonRequest(CreateApiKey, { label: 'ci uploader', scopes: ['uploads:write'] }),
  responses: {
    201: createdResponse('Created; `key` is the new bearer token.', ApiKeyCreated, { location: true }),
    ...problems(...COMMON_V1_PROBLEMS, ...IDEMPOTENT_PROBLEMS, 'temporal_unavailable', 'quota_exceeded'),
  },
});

const listKeysRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['api keys'],
  summary: "The tenant's API keys in creation order (never the tokens)",
  security: requires('keys:manage'),
  request: { query: PageQuery },
  responses: {
    200: { description: 'Keys, revoked ones included', content: { 'application/json': { schema: ApiKeyList } } },
    ...problems(...COMMON_V1_PROBLEMS, 'query_invalid'),
  },
});

const revokeKeyRoute = createRoute({
  method: 'delete',
  path: '/{id}',
  tags: ['api keys'],
  summary: 'Revoke an API key (at once on this replica; other replicas within their 30 s auth cache)',
  security: requires('keys:manage'),
  request: { params: z.object({ id: Uuid }) },
  responses: { 204: { description: 'Revoked' }, ...problems(...COMMON_V1_PROBLEMS, 'not_found') },
});

export function apiKeyRoutes(deps: { idempotency: IdempotentRouteOptions; keyCache: CredentialCache; maxApiKeys: number }) {
  const app = router();
  const { pool } = deps.idempotency;

  route(app, createKeyRoute, idempotentRoute(deps.idempotency), async function createTenantApiKey(c) {
    const body = await jsonBody(c, CreateApiKey);
    const tenantId = c.get('tenantId');
    // A key makes keys with at most its own scopes: keys:manage alone cannot mint more power.
    const held = c.get('principal').scopes;
    const missing = (body.scopes ?? []).filter((s) => !held.includes(s));
    if (missing.length > 0)
      throw problem('insufficient_scope', `A key can give a new key only scopes it holds itself; it lacks ${missing.join(', ')}.`, {
        extra: { scope: missing[0] },
      });
    const scopes = body.scopes ?? (held.length === SCOPES.length ? null : held);
    const key = await withinQuota(() =>
      insertWithinQuota(pool, tenantId, 'api_keys', deps.maxApiKeys, (tx) => createApiKey(tx, tenantId, body.label ?? '', scopes)),
    );
    return c.json({ ...apiKeyView(key), key: key.key }, 201, { location: `/v1/api-keys/${key.id}` });
  });

  route(app, listKeysRoute, async function listTenantApiKeys(c) {
    const page = await creationOrderPage(c.req.query(), (at) => pageApiKeys(pool, c.get('tenantId'), at));
    return c.json({ data: page.items.map(apiKeyView), nextCursor: page.nextCursor });
  });

  route(app, revokeKeyRoute, async function revokeTenantApiKey(c) {
    const id = c.req.param('id')!;
    const revoked =
      Uuid.safeParse(id).success && (await dependency('database_unavailable', () => revokeApiKey(pool, c.get('tenantId'), id)));
    if (!revoked) throw problem('not_found', 'No such active API key.');
    deps.keyCache.forget(id);
    return c.body(null, 204);
  });

  return app;
}
