// POST /admin/tenants: an operator creates a tenant with its first API key; PATCH
// /admin/tenants/{id} changes its settings (retention, image specs). Idempotent like
// every mutating route (keys under the reserved operator tenant); the answer, which holds
// the new key, is stored sealed.
import { createRoute, z } from '@hono/zod-openapi';
import { setTenantSettings } from '../../db/queries/tenants';
import { dependency, problem } from '../../errors';
import { createTenantWithKey } from '../../tenants';
import { jsonBody } from '../../http/json-body';
import { idempotentRoute, type IdempotentRouteOptions } from '../middleware/idempotent-route';
import { createdResponse, IDEMPOTENT_PROBLEMS, idempotentJsonRequest, problems, route, router, jsonRequestBody } from '../../http/openapi';
import { CreateTenant, Tenant, TenantCreated, TenantSettings } from '../schemas';
import { Uuid } from '../../http/schemas';
import { apiKeyView } from './api-keys';

const createTenantRoute = createRoute({
  method: 'post',
  path: '/tenants',
  tags: ['operators'],
  summary: 'Create a tenant and its first API key',
  security: [{ adminToken: [] }],
  request: idempotentJsonRequest(CreateTenant, { name: 'Acme' }),
  responses: {
    201: createdResponse("Created; `apiKey.key` is the tenant's first bearer token.", TenantCreated, { location: false }),
    ...problems('unauthorized', 'not_found', 'database_unavailable', 'internal_error', ...IDEMPOTENT_PROBLEMS),
  },
});

const updateTenantRoute = createRoute({
  method: 'patch',
  path: '/tenants/{id}',
  tags: ['operators'],
  summary: "Change a tenant's settings: retentionDays, imageSpecs (those given; the others are kept)",
  description:
    'Uploads older than `retentionDays` are erased by the deletion workflow (the expire-uploads Schedule starts one per due upload, ' +
    'every RETENTION_SWEEP_SECONDS), as DELETE would. Applies to the uploads already stored too; null keeps uploads until deleted. ' +
    '`imageSpecs`: `presets` (the default) serves image option strings only through signed URLs, `any` serves them to the API key too.',
  security: [{ adminToken: [] }],
  request: {
    params: z.object({ id: Uuid }),
    body: jsonRequestBody(TenantSettings, { retentionDays: 30 }),
  },
  responses: {
    200: { description: 'The tenant with its settings', content: { 'application/json': { schema: Tenant } } },
    ...problems('unauthorized', 'not_found', 'body_invalid', 'payload_too_large', 'database_unavailable', 'internal_error'),
  },
});

export function adminTenantRoutes(deps: { idempotency: IdempotentRouteOptions }) {
  const app = router();
  route(app, updateTenantRoute, async function updateTenant(c) {
    const id = c.req.param('id')!;
    const body = await jsonBody(c, TenantSettings);
    const row = Uuid.safeParse(id).success
      ? await dependency('database_unavailable', () => setTenantSettings(deps.idempotency.pool, id, body))
      : undefined;
    if (!row) throw problem('not_found', 'No such tenant.');
    return c.json({ tenantId: row.id, name: row.name, dedupe: row.dedupe, retentionDays: row.retention_days, imageSpecs: row.image_specs });
  });
  route(app, createTenantRoute, idempotentRoute(deps.idempotency), async function createTenant(c) {
    const body = await jsonBody(c, CreateTenant);
    const { tenant, apiKey } = await dependency('database_unavailable', () =>
      createTenantWithKey(deps.idempotency.pool, body.name, undefined, body.dedupe),
    );
    return c.json(
      {
        tenantId: tenant.id,
        name: tenant.name,
        dedupe: tenant.dedupe,
        createdAt: tenant.created_at.toISOString(),
        apiKey: { ...apiKeyView(apiKey), key: apiKey.key },
      },
      201,
    );
  });
  return app;
}
