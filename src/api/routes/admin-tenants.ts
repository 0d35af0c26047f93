// POST /admin/tenants: an operator creates a tenant with its first API key; GET lists every
// tenant with its usage; GET and PATCH
// /admin/tenants/{id} read and change its settings (retention, image specs); DELETE starts
// (or attaches to) its deletion, `tenant-delete/{id}`. Creating is idempotent like every
// mutating route (keys under the reserved operator tenant; the answer, which holds the new
// key, is stored sealed); a repeated DELETE attaches to the one deletion.
import type { Placement } from '../../placement/placement';
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Config } from '../../config';
import { findTenant, pageTenants, setTenantSettings, tenantUsage, type TenantSettingsRow } from '../../db/queries/tenants';
import type { Pool } from '../../db/pool';
import { countHeld } from '../../db/queries/legal-holds';
import type { CredentialCache } from '../middleware/auth';
import type { TenantDeletions } from '../../lifecycle/tenant-deletions';
import type { AppEnv } from '../../http/env';
import { header } from '../../http/headers';
import { parsePrefer } from '../../http/parse/request-headers';
import { dependency, problem } from '../../errors';
import { createTenantWithKey } from '../../tenants';
import { jsonBody } from '../../http/json-body';
import { idempotentRoute, type IdempotentRouteOptions } from '../../http/idempotent-route';
import {
  createdResponse,
  IDEMPOTENT_PROBLEMS,
  idempotentJsonRequest,
  problems,
  route,
  router,
  jsonRequestBody,
  pagedListRoute,
} from '../../http/openapi';
import { CreateTenant, Tenant, TenantCreated, TenantDeletion, TenantSettings } from '../tenant-schemas';
import { PreferHeader, Uuid } from '../../http/schemas';
import { creationOrderPage } from '../../http/list-query';
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
  summary: "Change a tenant's settings: retentionDays, imageSpecs, deleteGraceHours, residency (those given; the others are kept)",
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
    ...problems(
      'unauthorized',
      'not_found',
      'tenant_deleted',
      'body_invalid',
      'residency_mismatch',
      'payload_too_large',
      'database_unavailable',
      'internal_error',
    ),
  },
});

const getTenantRoute = createRoute({
  method: 'get',
  path: '/tenants/{id}',
  tags: ['operators'],
  summary: 'A tenant: its settings, and whether it is being or has been deleted',
  security: [{ adminToken: [] }],
  request: { params: z.object({ id: Uuid }) },
  responses: {
    200: { description: 'The tenant', content: { 'application/json': { schema: Tenant } } },
    ...problems('unauthorized', 'not_found', 'database_unavailable', 'internal_error'),
  },
});

const TenantWithUsage = Tenant.extend({
  usage: z.object({
    uploads: z.number().int().openapi({ description: 'Live uploads.' }),
    bytes: z.number().int().openapi({ description: 'Their bytes (originals).' }),
    pendingDeletions: z.number().int().openapi({ description: 'Uploads deleted and not yet erased.' }),
    heldUploads: z.number().int().openapi({ description: 'Uploads under a legal hold (the tenant cannot be deleted while any is).' }),
  }),
}).openapi('TenantWithUsage');

const listTenantsRoute = pagedListRoute({
  path: '/tenants',
  tags: ['operators'],
  summary: 'Every tenant with its settings, status and usage, in creation order, a page at a time',
  description: "Usage is counted over each listed tenant's uploads when asked (a page of 1–100 tenants).",
  security: [{ adminToken: [] }],
  item: TenantWithUsage,
  field: 'items',
  name: 'TenantList',
  problems: ['unauthorized', 'database_unavailable', 'internal_error'],
});

const deleteTenantRoute = createRoute({
  method: 'delete',
  path: '/tenants/{id}',
  tags: ['operators'],
  summary: 'Delete a tenant with erasure: every upload, its credentials, and the data keys of its workflow histories',
  description:
    'Starts (or attaches to) the workflow `tenant-delete/{id}`. Its first step closes the tenant: its API keys and upload tokens are ' +
    'refused from then on (other replicas within their 30 s credential cache), its webhook endpoints removed, and the database refuses ' +
    'any new row of it (an upload committing late fails; its copy is erased). Then its open sessions end, its other runs (import ' +
    'batches, re-processing jobs, renders) are terminated and each upload is erased by its own deletion run (no `upload.deleted` ' +
    'webhooks); last its data keys are destroyed, so every history of its runs holds only ciphertext, and what it kept besides its ' +
    "uploads (tokens' subjects, endpoints, batch sources, events) is scrubbed. 200 when done within the wait (`Prefer: wait=N`), else " +
    '202: poll the Location.',
  security: [{ adminToken: [] }],
  request: { params: z.object({ id: Uuid }), headers: z.object({ prefer: PreferHeader.optional() }) },
  responses: {
    200: { description: 'Deleted (or already deleted).', content: { 'application/json': { schema: TenantDeletion } } },
    202: { description: 'Deleting: closed, erasure under way.', content: { 'application/json': { schema: TenantDeletion } } },
    ...problems(
      'unauthorized',
      'not_found',
      'header_invalid',
      'legal_hold',
      'database_unavailable',
      'temporal_unavailable',
      'internal_error',
    ),
  },
});

const statusOf = (t: TenantSettingsRow) => (t.erased_at ? 'deleted' : t.closed_at ? 'deleting' : 'active');

/** A deletion's answer from the tenant's row, done or under way (a finished run's answer adds its counts). */
const deletionView = (t: TenantSettingsRow, status: 'deleted' | 'deleting') => ({
  tenantId: t.id,
  status,
  closedAt: t.closed_at?.toISOString() ?? null,
  erasedAt: status === 'deleted' ? (t.erased_at?.toISOString() ?? null) : null,
});

function tenantView(t: TenantSettingsRow) {
  return {
    tenantId: t.id,
    name: t.name,
    dedupe: t.dedupe,
    retentionDays: t.retention_days,
    imageSpecs: t.image_specs,
    deleteGraceHours: t.delete_grace_hours,
    defaultStorageTarget: t.default_storage_target,
    residency: t.residency,
    status: statusOf(t),
    closedAt: t.closed_at?.toISOString() ?? null,
    erasedAt: t.erased_at?.toISOString() ?? null,
  };
}

export function adminTenantRoutes(deps: {
  idempotency: IdempotentRouteOptions;
  pool: Pool;
  config: Config;
  tenantDeletions: TenantDeletions;
  placement: Pick<Placement, 'assertDefaultIn'>;
  /** This process's credential cache: a deleted tenant's keys are refused here at once. */
  credentials: CredentialCache;
}) {
  const { pool, config, tenantDeletions, credentials } = deps;
  const app = router();
  const tenantOf = async (c: Context<AppEnv>) => {
    const id = c.req.param('id')!;
    const row = Uuid.safeParse(id).success ? await dependency('database_unavailable', () => findTenant(pool, id)) : undefined;
    if (!row) throw problem('not_found', 'No such tenant.');
    return row;
  };
  route(app, listTenantsRoute, async function listTenants(c) {
    const page = await creationOrderPage(c.req.query(), (at) => pageTenants(pool, at));
    const usage = new Map(
      (
        await dependency('database_unavailable', () =>
          tenantUsage(
            pool,
            page.items.map((t) => t.id),
          ),
        )
      ).map((u) => [u.tenant_id, u]),
    );
    return c.json({
      items: page.items.map((t) => {
        const u = usage.get(t.id);
        return {
          ...tenantView(t),
          usage: {
            uploads: Number(u?.uploads ?? 0),
            bytes: Number(u?.bytes ?? 0),
            pendingDeletions: Number(u?.pending_deletions ?? 0),
            heldUploads: Number(u?.held ?? 0),
          },
        };
      }),
      nextCursor: page.nextCursor,
    });
  });
  route(app, getTenantRoute, async function getTenant(c) {
    return c.json(tenantView(await tenantOf(c)), 200);
  });
  route(app, updateTenantRoute, async function updateTenant(c) {
    const tenant = await tenantOf(c);
    const body = await jsonBody(c, TenantSettings);
    if (body.residency) await deps.placement.assertDefaultIn(tenant.id, body.residency);
    const row = tenant.closed_at ? undefined : await dependency('database_unavailable', () => setTenantSettings(pool, tenant.id, body));
    if (!row) throw problem('tenant_deleted', 'This tenant is deleted; its settings no longer change.');
    return c.json(tenantView(row), 200);
  });
  route(app, deleteTenantRoute, async function deleteTenant(c) {
    const tenant = await tenantOf(c);
    const { waitMs } = parsePrefer(header(c, 'prefer'), config.DEFAULT_WAIT_SECONDS, config.MAX_WAIT_SECONDS);
    if (tenant.erased_at) return c.json(deletionView(tenant, 'deleted'), 200);
    // A held upload keeps its tenant: refused before the close (a deletion under way waits for its holds).
    if (!tenant.closed_at) {
      const held = await dependency('database_unavailable', () => countHeld(pool, tenant.id));
      if (held > 0)
        throw problem('legal_hold', `${held} of the tenant's uploads are under a legal hold: release them first.`, {
          extra: { heldUploads: held },
        });
    }
    credentials.forgetTenant(tenant.id);
    const result = await tenantDeletions.run(tenant.id, waitMs);
    // Again: a lookup begun before the close committed may have cached a key meanwhile.
    credentials.forgetTenant(tenant.id);
    if (result) {
      const { tenantId, closedAt, erasedAt, uploadsErased, sessionsEnded, dataKeysDestroyed, objectsDeleted } = result;
      return c.json(
        { tenantId, status: 'deleted' as const, closedAt, erasedAt, uploadsErased, sessionsEnded, dataKeysDestroyed, objectsDeleted },
        200,
      );
    }
    // Still under way: the row read again, for the close's time once the run has recorded it.
    const now = (await dependency('database_unavailable', () => findTenant(pool, tenant.id))) ?? tenant;
    return c.json(deletionView(now, 'deleting'), 202, {
      location: `/admin/tenants/${now.id}`,
      'retry-after': '1',
    });
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
