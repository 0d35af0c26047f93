// /v1/webhook-endpoints: a tenant's webhook targets. The `whsec_` signing secret is shown
// once, on creation; targets must be http(s) and (by default) public addresses.
import { randomBytes, randomUUID } from 'node:crypto';
import { createRoute, z } from '@hono/zod-openapi';
import type { Pool } from '../../db/pool';
import { deleteEndpoint, insertEndpoint, pageEndpoints, type EndpointRow } from '../../db/queries/webhooks';
import { assertDeliverableUrl, DisallowedUrlError } from '../../downstream/url-guard';
import { dependency, problem } from '../../errors';
import { webhookSecretContext } from '../../secret-box';
import { insertWithinQuota } from '../../db/queries/quotas';
import { jsonBody } from '../../http/json-body';
import { withinQuota } from '../../http/quota';
import { idempotentRoute, type IdempotentRouteOptions } from '../../http/idempotent-route';
import { COMMON_V1_PROBLEMS, IDEMPOTENT_PROBLEMS, problems } from '../../http/openapi';
import { createdResponse, idempotentJsonRequest, route, router } from '../../http/openapi';
import { CreateWebhookEndpoint, WebhookEndpointCreated, WebhookEndpointList } from '../webhook-schemas';
import { PageQuery, Uuid } from '../../http/schemas';
import { creationOrderPage } from '../../http/list-query';
import { requires } from '../../http/scopes';

function view(e: EndpointRow) {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    enabled: e.enabled,
    disabledReason: e.disabled_reason,
    createdAt: e.created_at.toISOString(),
  };
}

const createEndpoint = createRoute({
  method: 'post',
  path: '/',
  tags: ['webhooks'],
  summary: 'Register a webhook endpoint (returns its signing secret once)',
  security: requires('webhooks:manage'),
  request: idempotentJsonRequest(CreateWebhookEndpoint, { url: 'https://...' }),
  responses: {
    201: createdResponse('Created (or the replayed answer for the same Idempotency-Key).', WebhookEndpointCreated, { location: true }),
    ...problems(...COMMON_V1_PROBLEMS, ...IDEMPOTENT_PROBLEMS, 'temporal_unavailable', 'quota_exceeded', 'webhook_url_invalid'),
  },
});

const listEndpointsRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['webhooks'],
  summary: "The tenant's webhook endpoints in creation order (without secrets)",
  security: requires('webhooks:manage'),
  request: { query: PageQuery },
  responses: {
    200: { description: 'Endpoints', content: { 'application/json': { schema: WebhookEndpointList } } },
    ...problems(...COMMON_V1_PROBLEMS, 'query_invalid'),
  },
});

const deleteEndpointRoute = createRoute({
  method: 'delete',
  path: '/{id}',
  tags: ['webhooks'],
  summary: 'Remove a webhook endpoint',
  security: requires('webhooks:manage'),
  request: { params: z.object({ id: Uuid }) },
  responses: { 204: { description: 'Removed' }, ...problems(...COMMON_V1_PROBLEMS, 'not_found') },
});

export function webhookEndpointRoutes(deps: { allowPrivateNetworks: boolean; idempotency: IdempotentRouteOptions; maxEndpoints: number }) {
  const app = router();
  const pool: Pool = deps.idempotency.pool;

  route(app, createEndpoint, idempotentRoute(deps.idempotency), async function createWebhookEndpoint(c) {
    const body = await jsonBody(c, CreateWebhookEndpoint);
    try {
      await assertDeliverableUrl(body.url, { allowPrivateNetworks: deps.allowPrivateNetworks });
    } catch (err) {
      if (err instanceof DisallowedUrlError) throw problem('webhook_url_invalid', `Webhook URL refused: ${err.message}.`);
      throw err;
    }
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const id = randomUUID();
    // Kept sealed; the worker opens it to sign. Shown once, in this answer.
    const sealed = deps.idempotency.box.seal(secret, webhookSecretContext(id));
    const tenantId = c.get('tenantId');
    const row = await withinQuota(() =>
      insertWithinQuota(pool, tenantId, 'webhook_endpoints', deps.maxEndpoints, (tx) =>
        insertEndpoint(tx, { id, tenantId, url: body.url, description: body.description ?? '', secret: sealed }),
      ),
    );
    return c.json({ ...view(row), secret }, 201, { location: `/v1/webhook-endpoints/${row.id}` });
  });

  route(app, listEndpointsRoute, async function listWebhookEndpoints(c) {
    const page = await creationOrderPage(c.req.query(), (at) => pageEndpoints(pool, c.get('tenantId'), at));
    return c.json({ data: page.items.map(view), nextCursor: page.nextCursor });
  });

  route(app, deleteEndpointRoute, async function deleteWebhookEndpoint(c) {
    const id = c.req.param('id')!;
    const gone =
      Uuid.safeParse(id).success && (await dependency('database_unavailable', () => deleteEndpoint(pool, c.get('tenantId'), id)));
    if (!gone) throw problem('not_found', 'No such webhook endpoint.');
    return c.body(null, 204);
  });

  return app;
}
