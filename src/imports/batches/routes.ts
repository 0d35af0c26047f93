// Import batches: many files from URLs in one keyed request, each imported once under
// (batch, item) by the batch's workflow, a few at a time; its progress, its items, and pause,
// resume and cancel.
import { createRoute, z } from '@hono/zod-openapi';
import type { Pool } from '../../db/pool';
import { findImportBatch, listBatchItems, pageImportBatches, type ImportBatchItemRow, type ImportBatchRow } from './queries';
import { dependency, problem } from '../../errors';
import { bodyLimit, jsonBody } from '../../http/json-body';
import {
  COMMON_V1_PROBLEMS,
  IDEMPOTENT_PROBLEMS,
  idempotentJsonRequest,
  problems,
  route,
  router,
  pagedListRoute,
} from '../../http/openapi';
import { Uuid } from '../../http/schemas';
import { labelsOf } from '../../http/parse/labels';
import { callerOf, requires } from '../../http/scopes';
import type { ImportBatches } from './service';
import type { DeclaredPipelines } from '../../pipelines/declared';
import type { BatchControl } from '../../temporal/definitions';
import { idempotentRoute, type IdempotentRouteOptions } from '../../http/idempotent-route';
import { creationOrderPage, decodeNumberCursor, encodeNumberCursor, pageOf, parseQuery } from '../../http/list-query';
import { pathId } from '../../http/path-id';
import { BatchItemsQuery, CreateImportBatch, ImportBatch, ImportBatchItems, MAX_BATCH_BODY_BYTES } from './schemas';

const TAG = 'imports';

export function importBatchRoutes(deps: { idempotency: IdempotentRouteOptions; batches: ImportBatches; pipelines: DeclaredPipelines }) {
  const app = router();
  const pool: Pool = deps.idempotency.pool;
  const batchOf = async (tenantId: string, id: string) => {
    const row = await dependency('database_unavailable', () => findImportBatch(pool, tenantId, id));
    if (!row) throw problem('not_found', 'No such import batch.');
    return row;
  };

  app.use('/', bodyLimit(MAX_BATCH_BODY_BYTES));
  route(app, createRoute_, idempotentRoute(deps.idempotency), async function createImportBatch(c) {
    const body = await jsonBody(c, CreateImportBatch);
    const tenantId = c.get('tenantId');
    await deps.pipelines.assertDeclared(tenantId, body.pipeline);
    const row = await deps.batches.start(
      {
        tenantId,
        caller: callerOf(c),
        ...(body.pipeline ? { pipeline: body.pipeline } : {}),
        concurrency: body.concurrency ?? 4,
        labels: labelsOf(body.metadata, body.tags),
        ...(body.s3
          ? { s3: body.s3 }
          : { items: body.items!.map(({ metadata, tags, ...item }) => ({ ...item, labels: labelsOf(metadata, tags) })) }),
      },
      c.req.raw.signal,
    );
    return c.json(batchView(row), 202, { location: `/v1/import-batches/${row.id}` });
  });

  route(app, listRoute, async function listImportBatches(c) {
    const page = await creationOrderPage(c.req.query(), (at) => pageImportBatches(pool, c.get('tenantId'), at));
    return c.json({ items: page.items.map(batchView), nextCursor: page.nextCursor }, 200, { 'cache-control': 'no-store' });
  });

  route(app, getRoute, async function getImportBatch(c) {
    return c.json(batchView(await batchOf(c.get('tenantId'), pathId(c, 'import batch'))), 200, { 'cache-control': 'no-store' });
  });

  route(app, itemsRoute, async function listImportBatchItems(c) {
    const batch = await batchOf(c.get('tenantId'), pathId(c, 'import batch'));
    const { state, cursor, limit = 50 } = parseQuery(BatchItemsQuery, c.req.query());
    const q = { ...(state ? { state } : {}), after: decodeNumberCursor(cursor), limit };
    const rows = await dependency('database_unavailable', () => listBatchItems(pool, batch.id, { ...q, limit: q.limit + 1 }));
    const page = pageOf(rows, q.limit, (last) => encodeNumberCursor(last.n));
    return c.json({ items: page.items.map(itemView), nextCursor: page.nextCursor }, 200);
  });

  for (const action of ['pause', 'resume', 'cancel'] as const) {
    route(app, controlRoute(action), async function controlImportBatch(c) {
      const batch = await batchOf(c.get('tenantId'), pathId(c, 'import batch'));
      if (batch.state === 'completed' || batch.state === 'cancelled' || batch.state === 'failed')
        throw problem('import_batch_closed', `This import batch is ${batch.state}.`, { extra: { state: batch.state } });
      await deps.batches.control(batch.id, action);
      return c.json(batchView(await batchOf(batch.tenant_id, batch.id)), action === 'cancel' ? 202 : 200);
    });
  }

  return app;
}

function batchView(b: ImportBatchRow) {
  return {
    id: b.id,
    state: b.state,
    total: b.total,
    done: b.done,
    failed: b.failed,
    skipped: b.skipped,
    pending: b.total - b.done - b.failed - b.skipped,
    concurrency: b.concurrency,
    pipeline: b.pipeline,
    metadata: b.labels?.metadata ?? null,
    tags: b.labels?.tags ?? [],
    source: b.source && { endpoint: b.source.endpoint, region: b.source.region, bucket: b.source.bucket, prefix: b.source.prefix },
    createdAt: b.created_at.toISOString(),
    finishedAt: b.finished_at?.toISOString() ?? null,
    error: b.error,
  };
}

function itemView(i: ImportBatchItemRow) {
  return {
    n: i.n,
    url: i.url,
    fileName: i.file_name,
    sha256: i.sha256,
    metadata: i.labels?.metadata ?? null,
    tags: i.labels?.tags ?? [],
    state: i.state,
    uploadId: i.upload_id,
    error: i.error,
  };
}

const createRoute_ = createRoute({
  method: 'post',
  path: '/',
  tags: [TAG],
  summary: 'Import up to 10,000 files from URLs or another S3 store, each exactly once',
  description:
    'Each item is one import under the key `import-batch/{id}/{n}` (its number, from 1), run by the batch a few at a time (`concurrency`, at most 16), ' +
    "as the batch's caller: the same checks, pipeline, dedupe and events as `POST /v1/imports`. A crash or a restart never imports an item twice, " +
    'and the same request again (its key) answers the same batch. Poll Location; `GET …/items` lists the outcomes. ' +
    'With `s3` instead of `items`, the objects under the prefix are listed once (an item per object, its URL path-style) and each read is signed ' +
    'with the given credentials, which are stored sealed and never shown. ' +
    `The body may be up to ${MAX_BATCH_BODY_BYTES / 1024 / 1024} MiB.`,
  security: requires('imports:create'),
  request: idempotentJsonRequest(CreateImportBatch, {
    items: [{ url: 'https://files.example.com/a.jpg' }, { url: 'https://files.example.com/b.pdf', fileName: 'report.pdf' }],
    concurrency: 4,
  }),
  responses: {
    202: {
      description: 'Started: poll Location.',
      headers: { Location: { description: '/v1/import-batches/{id}', schema: { type: 'string' } } },
      content: { 'application/json': { schema: ImportBatch } },
    },
    ...problems(
      ...COMMON_V1_PROBLEMS,
      ...IDEMPOTENT_PROBLEMS,
      'body_invalid',
      'payload_too_large',
      'pipeline_unknown',
      'import_url_invalid',
      'import_source_invalid',
      'too_many_import_batches',
      'temporal_unavailable',
    ),
  },
});

const listRoute = pagedListRoute({
  path: '/',
  tags: [TAG],
  summary: "The tenant's import batches in creation order, a page at a time",
  security: requires('imports:create'),
  item: ImportBatch,
  field: 'items',
  name: 'ImportBatchList',
  problems: COMMON_V1_PROBLEMS,
});

const getRoute = createRoute({
  method: 'get',
  path: '/{id}',
  tags: [TAG],
  summary: 'An import batch: its state and counts',
  security: requires('imports:create'),
  request: { params: z.object({ id: Uuid }) },
  responses: {
    200: { description: 'The batch', content: { 'application/json': { schema: ImportBatch } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found'),
  },
});

const itemsRoute = createRoute({
  method: 'get',
  path: '/{id}/items',
  tags: [TAG],
  summary: "An import batch's items and their outcomes, in order, a page at a time",
  security: requires('imports:create'),
  request: { params: z.object({ id: Uuid }), query: BatchItemsQuery },
  responses: {
    200: { description: 'One page', content: { 'application/json': { schema: ImportBatchItems } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'query_invalid'),
  },
});

function controlRoute(action: BatchControl) {
  const what = {
    pause: 'Pause: no new item starts (those under way finish)',
    resume: 'Resume a paused batch',
    cancel: 'Cancel: no new item starts, those under way cancel their imports; the batch ends once they have (both kinds skipped)',
  }[action];
  return createRoute({
    method: 'post',
    path: `/{id}/${action}`,
    tags: [TAG],
    summary: what,
    security: requires('imports:create'),
    request: { params: z.object({ id: Uuid }) },
    responses: {
      [action === 'cancel' ? 202 : 200]: {
        description: 'The batch, as the request left it',
        content: { 'application/json': { schema: ImportBatch } },
      },
      ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'import_batch_closed', 'temporal_unavailable'),
    },
  });
}
