// /v1/storage-migrations: move a tenant's uploads from one store to another (each upload once,
// whole), watch it, pause, resume or cancel it.
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Pool } from '../db/pool';
import { migrationProgress, pageMigrations } from './migration-queries';
import { dependency, problem } from '../errors';
import type { AppEnv } from '../http/env';
import { idempotentRoute, type IdempotentRouteOptions } from '../http/idempotent-route';
import { jsonBody } from '../http/json-body';
import { creationOrderPage } from '../http/list-query';
import { COMMON_V1_PROBLEMS, createdResponse, IDEMPOTENT_PROBLEMS, idempotentJsonRequest, problems, route, router } from '../http/openapi';
import { PageQuery, Uuid } from '../http/schemas';
import { requires } from '../http/scopes';
import type { BatchControl } from '../temporal/definitions';
import type { StorageMigrations } from './storage-migrations';
import { migrationView } from './migration-view';
import { CreateStorageMigration, StorageMigration, StorageMigrationList } from './schemas';

const answer = { description: 'The migration and its progress', content: { 'application/json': { schema: StorageMigration } } };

const startRoute = createRoute({
  method: 'post',
  path: '/',
  tags: ['storage'],
  summary: 'Move uploads from one store to another, each exactly once',
  description:
    'Every upload on `from` (matching `filter`) is moved in a run of its own: its original (checked against its SHA-256) and its ' +
    'renditions and variants are copied to `to`, then its row is switched in one transaction, so reads follow the row and never miss a ' +
    'byte. The source objects are deleted after STORAGE_MIGRATION_SOURCE_GRACE_SECONDS (URLs signed before the move keep working). ' +
    'An upload whose bytes other uploads share (content dedupe) is skipped. One migration from a source runs at a time: ' +
    '409 `storage_migration_running`.',
  security: requires('storage:manage'),
  request: idempotentJsonRequest(CreateStorageMigration, { from: 'default', to: 'eu-archive' }),
  responses: {
    201: createdResponse('Started (or the replayed answer for the same Idempotency-Key).', StorageMigration, { location: true }),
    ...problems(
      ...COMMON_V1_PROBLEMS,
      ...IDEMPOTENT_PROBLEMS,
      'temporal_unavailable',
      'storage_target_unknown',
      'residency_mismatch',
      'storage_migration_running',
    ),
  },
});

const listRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['storage'],
  summary: "The tenant's storage migrations in creation order, with their counts",
  security: requires('storage:manage'),
  request: { query: PageQuery },
  responses: {
    200: { description: 'Migrations', content: { 'application/json': { schema: StorageMigrationList } } },
    ...problems(...COMMON_V1_PROBLEMS, 'query_invalid'),
  },
});

const getRoute = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['storage'],
  summary: 'A migration: its state, counts and first failures',
  security: requires('storage:manage'),
  request: { params: z.object({ id: Uuid }) },
  responses: { 200: answer, ...problems(...COMMON_V1_PROBLEMS, 'not_found') },
});

const controlRoute = (action: BatchControl, summary: string) =>
  createRoute({
    method: 'post',
    path: `/{id}/${action}`,
    tags: ['storage'],
    summary,
    description: 'The moves under way finish (an upload is moved whole or not at all). Repeating it changes nothing.',
    security: requires('storage:manage'),
    request: { params: z.object({ id: Uuid }) },
    responses: { 200: answer, ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'storage_migration_ended', 'temporal_unavailable') },
  });

export function storageMigrationRoutes(deps: { migrations: StorageMigrations; idempotency: IdempotentRouteOptions }) {
  const app = router();
  const pool: Pool = deps.idempotency.pool;
  const id = (c: Context<AppEnv>) => {
    const raw = c.req.param('id')!;
    if (!Uuid.safeParse(raw).success) throw problem('not_found', 'No such storage migration.');
    return raw;
  };

  route(app, startRoute, idempotentRoute(deps.idempotency), async function startStorageMigration(c) {
    const body = await jsonBody(c, CreateStorageMigration);
    const row = await deps.migrations.start({ tenantId: c.get('tenantId'), ...body });
    return c.json(migrationView(row, { moved: 0, skipped: 0, failed: 0, bytesMoved: 0, failures: [] }), 201, {
      location: `/v1/storage-migrations/${row.id}`,
    });
  });

  route(app, listRoute, async function listStorageMigrations(c) {
    const page = await creationOrderPage(c.req.query(), (at) => pageMigrations(pool, c.get('tenantId'), at));
    const progress = await dependency('database_unavailable', () => Promise.all(page.items.map((r) => migrationProgress(pool, r.id))));
    return c.json({ data: page.items.map((r, i) => migrationView(r, progress[i]!)), nextCursor: page.nextCursor }, 200);
  });

  route(app, getRoute, async function getStorageMigration(c) {
    const { row, progress } = await deps.migrations.view(c.get('tenantId'), id(c));
    return c.json(migrationView(row, progress), 200);
  });

  for (const [action, summary] of [
    ['pause', 'Pause a migration'],
    ['resume', 'Resume a paused migration'],
    ['cancel', 'Cancel a migration (what has moved stays moved)'],
  ] as const) {
    route(app, controlRoute(action, summary), async function controlStorageMigration(c) {
      const { row, progress } = await deps.migrations.control(c.get('tenantId'), id(c), action);
      return c.json(migrationView(row, progress), 200);
    });
  }
  return app;
}
