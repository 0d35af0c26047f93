// /v1/storage-targets (a tenant's API key with storage:manage) and
// /admin/tenants/{tenantId}/storage-targets (the operator, for any tenant): register, list,
// read, change and remove storage targets. Both mounts are the same handlers over the tenant
// they name.
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { AppEnv } from '../http/env';
import { jsonBody } from '../http/json-body';
import { idempotentRoute, type IdempotentRouteOptions } from '../http/idempotent-route';
import {
  COMMON_V1_PROBLEMS,
  createdResponse,
  IDEMPOTENT_PROBLEMS,
  idempotentJsonRequest,
  jsonRequestBody,
  problems,
  route,
  router,
} from '../http/openapi';
import { PageQuery, Uuid } from '../http/schemas';
import { requires } from '../http/scopes';
import { problem } from '../errors';
import { findTenant } from '../db/queries/tenants';
import { ChangeStorageTarget, CreateStorageTarget, StorageTarget, StorageTargetList } from './schemas';
import type { StorageTargets, TargetView } from './targets';

export function targetView(t: TargetView): z.infer<typeof StorageTarget> {
  const r = t.row;
  return {
    id: r.id,
    name: r.name,
    endpoint: r.endpoint,
    bucket: r.bucket,
    region: r.region,
    prefix: r.prefix,
    forcePathStyle: r.force_path_style,
    accessKeyIdHint: `…${r.access_key_id.slice(-4)}`,
    residency: r.residency,
    encryption: r.encryption,
    default: t.isDefault,
    credentialsVersion: r.version,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

interface Mount {
  /** The path before the target routes' own ('' under /v1/storage-targets). */
  base: string;
  tag: string;
  security: ReturnType<typeof requires> | { adminToken: string[] }[];
  params: z.ZodObject;
}

const TENANT: Mount = { base: '', tag: 'storage', security: requires('storage:manage'), params: z.object({}) };
const OPERATOR: Mount = {
  base: '/tenants/{tenantId}/storage-targets',
  tag: 'operators',
  security: [{ adminToken: [] }],
  params: z.object({ tenantId: Uuid }),
};

function definitions(m: Mount) {
  const one = m.params.extend({ id: Uuid });
  const answer = { description: 'The target', content: { 'application/json': { schema: StorageTarget } } };
  return {
    create: createRoute({
      method: 'post',
      path: m.base || '/',
      tags: [m.tag],
      summary: 'Register a storage target: an S3-compatible bucket, proved before it is kept',
      description:
        'The bucket must answer, and an object is written, read back and deleted, and a multipart upload completed, under `prefix`: a target ' +
        "that fails any is refused with `storage_target_refused` and the store's own words. The secret is sealed with SECRETS_KEY and never " +
        'answered. `default: true` makes it where uploads that name no target go. Uploads name one with `storageTarget` (every door).',
      security: m.security,
      request: {
        ...idempotentJsonRequest(CreateStorageTarget, {
          name: 'eu-archive',
          endpoint: 'https://s3.example',
          bucket: 'acme',
          accessKeyId: 'AKIA…',
          secretAccessKey: '…',
        }),
        params: m.params,
      },
      responses: {
        201: createdResponse('Registered (or the replayed answer for the same Idempotency-Key).', StorageTarget, { location: true }),
        ...problems(
          ...COMMON_V1_PROBLEMS,
          ...IDEMPOTENT_PROBLEMS,
          'not_found',
          'storage_target_refused',
          'storage_target_name_taken',
          'residency_mismatch',
          'quota_exceeded',
        ),
      },
    }),
    list: createRoute({
      method: 'get',
      path: m.base || '/',
      tags: [m.tag],
      summary: "The tenant's storage targets in creation order, its default and required residency",
      security: m.security,
      request: { params: m.params, query: PageQuery },
      responses: {
        200: { description: 'Targets', content: { 'application/json': { schema: StorageTargetList } } },
        ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'query_invalid'),
      },
    }),
    get: createRoute({
      method: 'get',
      path: `${m.base}/{id}`,
      tags: [m.tag],
      summary: 'One storage target (without its secret)',
      security: m.security,
      request: { params: one },
      responses: { 200: answer, ...problems(...COMMON_V1_PROBLEMS, 'not_found') },
    }),
    change: createRoute({
      method: 'patch',
      path: `${m.base}/{id}`,
      tags: [m.tag],
      summary: "Rotate a target's credentials (proved first) or make it the default",
      description:
        'New credentials are proved as at registration and replace the old ones for every process within seconds (`credentialsVersion` ' +
        "goes up); the objects stay where they are. `default: false` on the default makes the instance's store the default again.",
      security: m.security,
      request: { params: one, body: jsonRequestBody(ChangeStorageTarget, { default: true }) },
      responses: {
        200: answer,
        ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'body_invalid', 'storage_target_refused', 'residency_mismatch'),
      },
    }),
    remove: createRoute({
      method: 'delete',
      path: `${m.base}/{id}`,
      tags: [m.tag],
      summary: 'Remove a storage target nothing lives on',
      description: "409 `storage_target_in_use` while uploads or open sessions are stored in it, or while it is the tenant's default.",
      security: m.security,
      request: { params: one },
      responses: { 204: { description: 'Removed' }, ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'storage_target_in_use') },
    }),
  };
}

function mountTargets(
  m: Mount,
  deps: { targets: StorageTargets; idempotency: IdempotentRouteOptions },
  tenantOf: (c: Context<AppEnv>) => Promise<string>,
) {
  const app = router();
  const d = definitions(m);
  const id = (c: Context<AppEnv>) => {
    const raw = c.req.param('id')!;
    if (!Uuid.safeParse(raw).success) throw problem('not_found', 'No such storage target.');
    return raw;
  };
  route(app, d.create, idempotentRoute(deps.idempotency), async function createStorageTarget(c) {
    const tenantId = await tenantOf(c);
    const created = await deps.targets.create(tenantId, await jsonBody(c, CreateStorageTarget));
    return c.json(targetView(created), 201, { location: `/v1/storage-targets/${created.row.id}` });
  });
  route(app, d.list, async function listStorageTargets(c) {
    const list = await deps.targets.list(await tenantOf(c), c.req.query());
    return c.json(
      { data: list.targets.map(targetView), nextCursor: list.nextCursor, defaultTarget: list.defaultTarget, residency: list.residency },
      200,
    );
  });
  route(app, d.get, async function getStorageTarget(c) {
    return c.json(targetView(await deps.targets.get(await tenantOf(c), id(c))), 200);
  });
  route(app, d.change, async function changeStorageTarget(c) {
    const tenantId = await tenantOf(c);
    return c.json(targetView(await deps.targets.change(tenantId, id(c), await jsonBody(c, ChangeStorageTarget))), 200);
  });
  route(app, d.remove, async function removeStorageTarget(c) {
    await deps.targets.remove(await tenantOf(c), id(c));
    return c.body(null, 204);
  });
  return app;
}

/** Mounted at /v1/storage-targets: the calling tenant's targets. */
export function storageTargetRoutes(deps: { targets: StorageTargets; idempotency: IdempotentRouteOptions }) {
  return mountTargets(TENANT, deps, async (c) => c.get('tenantId'));
}

/** Mounted at /admin: any tenant's targets, for its operator. */
export function operatorStorageTargetRoutes(deps: { targets: StorageTargets; idempotency: IdempotentRouteOptions }) {
  return mountTargets(OPERATOR, deps, async (c) => {
    const tenantId = c.req.param('tenantId')!;
    if (!Uuid.safeParse(tenantId).success || !(await findTenant(deps.idempotency.pool, tenantId)))
      throw problem('not_found', 'No such tenant.');
    return tenantId;
  });
}
