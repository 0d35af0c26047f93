// /v1/upload-tokens: an app's backend mints a token for one end user and one purpose, hands
// it to the browser, and revokes it when it likes. The token is shown in the creation answer
// (and its idempotent replays, stored sealed); only its hash is kept.
import type { Placement } from '../../placement/placement';
import { createRoute, z } from '@hono/zod-openapi';
import type { Config } from '../../config';
import { findUploadToken, pageUploadTokens, revokeUploadToken, type UploadTokenRow } from '../../db/queries/upload-tokens';
import { dependency, problem } from '../../errors';
import { mintUploadToken } from '../../tokens/upload-tokens';
import { jsonBody } from '../../http/json-body';
import type { CredentialCache } from '../middleware/auth';
import { idempotentRoute, type IdempotentRouteOptions } from '../../http/idempotent-route';
import {
  COMMON_V1_PROBLEMS,
  IDEMPOTENT_PROBLEMS,
  createdResponse,
  idempotentJsonRequest,
  problems,
  route,
  router,
  pagedListRoute,
} from '../../http/openapi';
import { CreateUploadToken, UploadToken, UploadTokenCreated } from '../schemas';
import { Uuid } from '../../http/schemas';
import { creationOrderPage } from '../../http/list-query';
import { requires } from '../../http/scopes';
import { parsePipelineName, type DeclaredPipelines } from '../../pipelines/declared';

export function uploadTokenView(t: UploadTokenRow) {
  return {
    id: t.id,
    expiresAt: t.expires_at.toISOString(),
    maxBytes: t.max_bytes === null ? null : Number(t.max_bytes),
    allowedTypes: t.allowed_types,
    maxUploads: t.max_uploads,
    uploadsUsed: t.uploads_used,
    subject: t.subject,
    metadata: t.metadata,
    pipeline: t.pipeline,
    importHosts: t.import_hosts,
    storageTarget: t.storage_target,
    createdAt: t.created_at.toISOString(),
    revokedAt: t.revoked_at?.toISOString() ?? null,
  };
}

const createTokenRoute = createRoute({
  method: 'post',
  path: '/',
  tags: ['upload tokens'],
  summary: 'Mint an upload token: a bearer a browser may hold, that only uploads within its limits',
  security: requires('tokens:mint'),
  request: idempotentJsonRequest(CreateUploadToken, { expiresInSeconds: 900, maxBytes: 10000000, allowedTypes: ['image/*'] }),
  responses: {
    201: createdResponse('Created; `token` is the bearer.', UploadTokenCreated, { location: true }),
    ...problems(
      ...COMMON_V1_PROBLEMS,
      ...IDEMPOTENT_PROBLEMS,
      'temporal_unavailable',
      'pipeline_unknown',
      'storage_target_unknown',
      'residency_mismatch',
    ),
  },
});

const listTokensRoute = pagedListRoute({
  path: '/',
  tags: ['upload tokens'],
  summary: "The tenant's upload tokens (revoked and expired ones too) with their limits and usage, in creation order, a page at a time",
  security: requires('tokens:mint'),
  item: UploadToken,
  field: 'data',
  name: 'UploadTokenList',
  problems: COMMON_V1_PROBLEMS,
});

const getTokenRoute = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['upload tokens'],
  summary: 'An upload token: its limits and how many uploads it has made (never the token)',
  security: requires('tokens:mint'),
  request: { params: z.object({ id: Uuid }) },
  responses: {
    200: { description: 'The token', content: { 'application/json': { schema: UploadToken } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found'),
  },
});

const revokeTokenRoute = createRoute({
  method: 'delete',
  path: '/{id}',
  tags: ['upload tokens'],
  summary: 'Revoke an upload token (at once on this replica; other replicas within their 30 s credential cache)',
  security: requires('tokens:mint'),
  request: { params: z.object({ id: Uuid }) },
  responses: { 204: { description: 'Revoked' }, ...problems(...COMMON_V1_PROBLEMS, 'not_found') },
});

export function uploadTokenRoutes(deps: {
  idempotency: IdempotentRouteOptions;
  cache: CredentialCache;
  config: Config;
  pipelines: DeclaredPipelines;
  placement: Pick<Placement, 'targetFor'>;
}) {
  const app = router();
  const { pool } = deps.idempotency;
  const max = deps.config.UPLOAD_TOKEN_MAX_SECONDS;

  route(app, createTokenRoute, idempotentRoute(deps.idempotency), async function createUploadToken(c) {
    const body = await jsonBody(c, CreateUploadToken);
    const expiresInSeconds = body.expiresInSeconds ?? Math.min(3600, max);
    if (expiresInSeconds > max) throw problem('body_invalid', `expiresInSeconds must be at most ${max} (UPLOAD_TOKEN_MAX_SECONDS).`);
    // A token for a pipeline the tenant has not declared would refuse every upload.
    await deps.pipelines.assertDeclared(c.get('tenantId'), parsePipelineName(body.pipeline, 'body_invalid'));
    // A token pins a target by id: the one its name names now, checked as its uploads will be.
    const storageTarget = body.storageTarget
      ? ((await deps.placement.targetFor({ tenantId: c.get('tenantId'), storageTarget: body.storageTarget })) ?? undefined)
      : undefined;
    const { token, row } = await dependency('database_unavailable', () =>
      mintUploadToken(pool, c.get('tenantId'), { ...body, expiresInSeconds, storageTarget }),
    );
    return c.json({ ...uploadTokenView(row), token }, 201, { location: `/v1/upload-tokens/${row.id}` });
  });

  route(app, listTokensRoute, async function listUploadTokens(c) {
    const page = await creationOrderPage(c.req.query(), (at) => pageUploadTokens(pool, c.get('tenantId'), at));
    return c.json({ data: page.items.map(uploadTokenView), nextCursor: page.nextCursor }, 200);
  });

  route(app, getTokenRoute, async function getUploadToken(c) {
    const id = c.req.param('id')!;
    const row = Uuid.safeParse(id).success
      ? await dependency('database_unavailable', () => findUploadToken(pool, c.get('tenantId'), id))
      : undefined;
    if (!row) throw problem('not_found', 'No such upload token.');
    return c.json(uploadTokenView(row), 200);
  });

  route(app, revokeTokenRoute, async function revokeTenantUploadToken(c) {
    const id = c.req.param('id')!;
    const revoked =
      Uuid.safeParse(id).success && (await dependency('database_unavailable', () => revokeUploadToken(pool, c.get('tenantId'), id)));
    if (!revoked) throw problem('not_found', 'No such active upload token.');
    deps.cache.forget(id);
    return c.body(null, 204);
  });

  return app;
}
