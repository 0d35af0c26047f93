// Re-processing: POST /v1/pipelines/{name}/reprocess runs a version (the latest unless
// named) over the pipeline's uploads matching a filter; GET /v1/reprocess-jobs/{id} shows
// its progress, POST …/cancel stops it. Each upload is re-run once per version.
import { createRoute, z } from '@hono/zod-openapi';
import type { Pool } from '../db/pool';
import { findPipelineVersion, latestPipelineVersion } from '../db/queries/pipelines';
import { findReprocessJob, pageReprocessJobs, reprocessProgress, type ReprocessJobRow } from './queries';
import { dependency, problem } from '../errors';
import type { Reprocessing } from './reprocessing';
import { PipelineName } from '../pipelines/catalogue';
import { jsonBody } from '../http/json-body';
import { idempotentRoute, type IdempotentRouteOptions } from '../http/idempotent-route';
import {
  COMMON_V1_PROBLEMS,
  IDEMPOTENT_PROBLEMS,
  createdResponse,
  idempotentJsonRequest,
  problems,
  route,
  router,
  pagedListRoute,
} from '../http/openapi';
import { instant, MediaRange, PipelineVersionNumber, Uuid } from '../http/schemas';
import { creationOrderPage } from '../http/list-query';
import { requires } from '../http/scopes';

const ReprocessRequest = z
  .object({
    version: PipelineVersionNumber.optional().openapi({ description: 'The version to run; the latest unless given.' }),
    filter: z
      .object({
        createdAfter: instant('createdAfter').optional(),
        createdBefore: instant('createdBefore').optional(),
        contentType: MediaRange.optional().openapi({ example: 'image/*' }),
        uploadIds: z.array(Uuid).min(1).max(100).optional().openapi({ description: 'Only these uploads (at most 100).' }),
      })
      .strict()
      .optional(),
    concurrency: z.number().int().min(1).max(32).default(4).openapi({ description: 'Uploads re-processed at once.' }),
  })
  .strict()
  .openapi('ReprocessRequest');

const ReprocessJob = z
  .object({
    id: Uuid,
    pipeline: z.string(),
    version: z.number().int(),
    filter: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
    state: z.enum(['running', 'completed', 'cancelled']),
    total: z.number().int().openapi({ description: "The pipeline's uploads matching the filter, committed before the job." }),
    done: z.number().int(),
    skipped: z.number().int().openapi({ description: 'Deleted, rejected, already at the version, or no step applies.' }),
    failed: z.number().int(),
    superseded: z.number().int().openapi({
      description: 'Uploads left on a newer version of the pipeline: the newest version is served, whichever job ends last.',
    }),
    failures: z.array(z.object({ uploadId: Uuid, reason: z.string().nullable() })).openapi({ description: 'The first 100.' }),
    supersededUploads: z
      .array(z.object({ uploadId: Uuid, reason: z.string().nullable() }))
      .openapi({ description: 'The first 100 superseded uploads.' }),
    createdAt: z.string(),
    finishedAt: z.string().nullable(),
  })
  .openapi('ReprocessJob');

async function jobView(pool: Pool, j: ReprocessJobRow) {
  const progress = await dependency('database_unavailable', () => reprocessProgress(pool, j.id));
  return {
    id: j.id,
    pipeline: j.pipeline,
    version: j.pipeline_version,
    filter: j.filter as Record<string, string | string[]>,
    state: j.state,
    total: j.total,
    ...progress,
    createdAt: j.created_at.toISOString(),
    finishedAt: j.finished_at?.toISOString() ?? null,
  };
}

const startRoute = createRoute({
  method: 'post',
  path: '/pipelines/{name}/reprocess',
  tags: ['pipelines'],
  summary:
    'Re-run a version of a pipeline over its uploads: new renditions beside the served ones, switched in one transaction, the old deleted',
  security: requires('pipelines:manage'),
  request: {
    params: z.object({ name: PipelineName }),
    ...idempotentJsonRequest(ReprocessRequest, {
      version: 2,
      filter: { createdAfter: '2026-12-01T00:00:00Z', contentType: 'image/*' },
      concurrency: 4,
    }),
  },
  responses: {
    202: createdResponse('Started: poll Location.', ReprocessJob, { location: true }),
    ...problems(...COMMON_V1_PROBLEMS, ...IDEMPOTENT_PROBLEMS, 'not_found', 'body_invalid', 'temporal_unavailable'),
  },
});

const jobRoute = createRoute({
  method: 'get',
  path: '/reprocess-jobs/{id}',
  tags: ['pipelines'],
  summary: "A re-processing job's progress",
  security: requires('pipelines:manage'),
  request: { params: z.object({ id: Uuid }) },
  responses: {
    200: { description: 'The job', content: { 'application/json': { schema: ReprocessJob } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found'),
  },
});

const listRoute = pagedListRoute({
  path: '/reprocess-jobs',
  tags: ['pipelines'],
  summary: "The tenant's re-processing jobs in creation order, with their progress, a page at a time",
  security: requires('pipelines:manage'),
  item: ReprocessJob,
  field: 'items',
  name: 'ReprocessJobList',
  problems: COMMON_V1_PROBLEMS,
});

const cancelRoute = createRoute({
  method: 'post',
  path: '/reprocess-jobs/{id}/cancel',
  tags: ['pipelines'],
  summary: 'Stop a re-processing job (uploads under way keep the renditions they serve)',
  security: requires('pipelines:manage'),
  request: { params: z.object({ id: Uuid }) },
  responses: {
    202: { description: 'Cancelling', content: { 'application/json': { schema: ReprocessJob } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'temporal_unavailable'),
  },
});

export function reprocessRoutes(deps: { idempotency: IdempotentRouteOptions; reprocessing: Reprocessing }) {
  const app = router();
  const pool: Pool = deps.idempotency.pool;
  const job = async (tenantId: string, id: string | undefined) => {
    const row =
      id && Uuid.safeParse(id).success ? await dependency('database_unavailable', () => findReprocessJob(pool, tenantId, id)) : undefined;
    if (!row) throw problem('not_found', 'No such re-processing job.');
    return row;
  };

  route(app, startRoute, idempotentRoute(deps.idempotency), async function startReprocessing(c) {
    const name = c.req.param('name')!;
    if (!PipelineName.safeParse(name).success) throw problem('not_found', 'No such pipeline.');
    const body = await jsonBody(c, ReprocessRequest);
    const tenantId = c.get('tenantId');
    const version = body.version
      ? await dependency('database_unavailable', () => findPipelineVersion(pool, tenantId, name, body.version!))
      : await dependency('database_unavailable', () => latestPipelineVersion(pool, tenantId, name));
    if (!version)
      throw problem('not_found', body.version ? `Pipeline ${name} has no version ${body.version}.` : `No declared pipeline named ${name}.`);
    const row = await deps.reprocessing.start({
      tenantId,
      pipeline: name,
      version: version.version,
      filter: body.filter ?? {},
      concurrency: body.concurrency,
    });
    return c.json(await jobView(pool, row), 202, { location: `/v1/reprocess-jobs/${row.id}` });
  });

  route(app, listRoute, async function listReprocessJobs(c) {
    const page = await creationOrderPage(c.req.query(), (at) => pageReprocessJobs(pool, c.get('tenantId'), at));
    return c.json({ items: await Promise.all(page.items.map((j) => jobView(pool, j))), nextCursor: page.nextCursor });
  });

  route(app, jobRoute, async function getReprocessJob(c) {
    return c.json(await jobView(pool, await job(c.get('tenantId'), c.req.param('id'))), 200);
  });

  route(app, cancelRoute, async function cancelReprocessJob(c) {
    const row = await job(c.get('tenantId'), c.req.param('id'));
    if (row.state === 'running') await deps.reprocessing.cancel(row.id);
    return c.json(await jobView(pool, row), 202);
  });

  return app;
}
