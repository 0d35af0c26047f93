// POST /admin/tenants: an operator creates a tenant with its first API key. Idempotent like
// every mutating route (keys under the reserved operator tenant); the answer, which holds
// the new key, is stored sealed.
import { createRoute } from '@hono/zod-openapi';
import { dependency } from '../../errors';
import { createTenantWithKey } from '../../tenants';
import { jsonBody } from '../json-body';
import { idempotentRoute, type IdempotentRouteOptions } from '../middleware/idempotent-route';
import { createdResponse, IDEMPOTENT_PROBLEMS, idempotentJsonRequest, problems, route, router } from '../openapi';
import { CreateTenant, TenantCreated } from '../schemas';
import { apiKeyView } from './api-keys';

const createTenantRoute = createRoute({
  method: 'post',
  path: '/tenants',
  tags: ['operators'],
  summary: 'Create a tenant and its first API key',
  security: [{ adminToken: [] }],
  request: idempotentJsonRequest(CreateTenant),
  responses: {
    201: createdResponse("Created; `apiKey.key` is the tenant's first bearer token.", TenantCreated, { location: false }),
    ...problems('unauthorized', 'not_found', 'database_unavailable', 'internal_error', ...IDEMPOTENT_PROBLEMS),
  },
});

export function adminTenantRoutes(deps: { idempotency: IdempotentRouteOptions }) {
  const app = router();
  route(app, createTenantRoute, idempotentRoute(deps.idempotency), async function createTenant(c) {
    const body = await jsonBody(c, CreateTenant, '{"name": "Acme"}');
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
