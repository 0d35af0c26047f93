// /v1/webhook-endpoints: a tenant's webhook targets. The `whsec_` signing secret is shown
// once, on creation; targets must be http(s) and (by default) public addresses.
import { randomBytes, randomUUID } from 'node:crypto';
import { Hono } from 'hono';
import { z } from 'zod';
import type { Pool } from '../../db/pool';
import { deleteEndpoint, insertEndpoint, listEndpoints, type EndpointRow } from '../../db/queries/webhooks';
import { assertDeliverableUrl, DisallowedUrlError } from '../../downstream/url-guard';
import { dependency, problem } from '../../errors';
import type { AppEnv } from '../env';
import { idempotentRoute } from '../middleware/idempotent-route';

const createBody = z.object({
  url: z.string().min(1).max(2048),
  description: z.string().max(500).optional(),
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function view(e: EndpointRow) {
  return { id: e.id, url: e.url, description: e.description, enabled: e.enabled, disabledReason: e.disabled_reason, createdAt: e.created_at.toISOString() };
}

export function webhookEndpointRoutes(deps: { pool: Pool; allowPrivateNetworks: boolean; keyTtlSeconds: number }) {
  const app = new Hono<AppEnv>();

  app.post('/', idempotentRoute({ pool: deps.pool, ttlSeconds: deps.keyTtlSeconds }), async function createWebhookEndpoint(c) {
    let json: unknown;
    try {
      json = await c.req.json();
    } catch {
      throw problem('body_invalid', 'Send a JSON object: {"url": "https://..."}.');
    }
    const parsed = createBody.safeParse(json);
    if (!parsed.success) throw problem('body_invalid', parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
    try {
      await assertDeliverableUrl(parsed.data.url, { allowPrivateNetworks: deps.allowPrivateNetworks });
    } catch (err) {
      if (err instanceof DisallowedUrlError) throw problem('webhook_url_invalid', `Webhook URL refused: ${err.message}.`);
      throw err;
    }
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const row = await dependency('database_unavailable', () =>
      insertEndpoint(deps.pool, { id: randomUUID(), tenantId: c.get('tenantId'), url: parsed.data.url, description: parsed.data.description ?? '', secret }),
    );
    return c.json({ ...view(row), secret }, 201, { location: `/v1/webhook-endpoints/${row.id}` });
  });

  app.get('/', async function listWebhookEndpoints(c) {
    const rows = await dependency('database_unavailable', () => listEndpoints(deps.pool, c.get('tenantId')));
    return c.json({ data: rows.map(view) });
  });

  app.delete('/:id', async function deleteWebhookEndpoint(c) {
    const id = c.req.param('id');
    const gone = UUID.test(id) && (await dependency('database_unavailable', () => deleteEndpoint(deps.pool, c.get('tenantId'), id)));
    if (!gone) throw problem('not_found', 'No such webhook endpoint.');
    return c.body(null, 204);
  });

  return app;
}
