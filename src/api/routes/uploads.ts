// GET /v1/uploads (the tenant's uploads, a page at a time) and GET /v1/uploads/:id (POST is the
// one-request door: src/arrivals/one-request/).
import { createRoute, z } from '@hono/zod-openapi';
import type { Config } from '../../config';
import type { Pool } from '../../db/pool';
import type { ProcessedSignal } from '../../db/upload-processed';
import { listUploads, type UploadRow } from '../../db/queries/uploads';
import { listRenditions, renditionSummary } from '../../db/queries/renditions';
import { listDeliveries, type DeliveryRow } from '../../db/queries/webhooks';
import { dependency, problem } from '../../errors';
import { awaitProcessed } from '../../upload/await-processed';
import type { UncommittedUploads } from '../../upload/uncommitted';
import { parseWaitQuery } from '../../http/parse/request-headers';
import { encodeCursor } from '../../http/list-query';
import { parseListQuery } from '../parse/list-query';
import { DEFAULT_PIPELINE } from '../../pipelines/steps';
import { listStepOutcomes, type StepOutcomeRow } from '../../db/queries/pipelines';
import { COMMON_V1_PROBLEMS, problems, route, router } from '../../http/openapi';
import { Uuid, WaitQuery } from '../../http/schemas';
import { UploadDetail, UploadList, ListUploadsQuery } from '../schemas';
import { callingToken, requires } from '../../http/scopes';
import { recordEtag } from '../../http/record-etag';
import { holdView } from '../../http/legal-hold-view';

export function uploadRoutes(deps: { pool: Pool; config: Config; processed: ProcessedSignal; uncommitted: UncommittedUploads }) {
  const { pool, config, processed: signal } = deps;
  const app = router();

  route(app, listUploadsRoute, async function listTenantUploads(c) {
    const { filter, after, limit } = parseListQuery(c.req.query());
    if (filter.residency) filter.residencyIsDefault = filter.residency === config.STORAGE_RESIDENCY;
    // One row more than the page tells whether another page follows.
    const rows = await dependency('database_unavailable', () => listUploads(pool, c.get('tenantId'), filter, after, limit + 1));
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return c.json({ items: page.map(uploadView), nextCursor: rows.length > limit && last ? encodeCursor(last.position) : null });
  });

  route(app, getUploadRoute(deps.uncommitted.schema), async function getUpload(c) {
    const id = c.req.param('id')!;
    const waitMs = parseWaitQuery(c.req.query('wait'), config.MAX_WAIT_SECONDS);
    if (!Uuid.safeParse(id).success) throw problem('not_found', 'No such upload.');
    const found = await awaitProcessed({ pool, signal }, c.get('tenantId'), id, waitMs);
    // An upload token sees only the uploads (and imports) it made.
    if (!found || (callingToken(c) && found.row.token_id !== callingToken(c)!.id)) throw problem('not_found', 'No such upload.');
    // An import not yet committed shows its progress (or its failure) until its upload row exists.
    if (found.kind === 'import') return c.json(await deps.uncommitted.view(found.row), 200, { 'cache-control': 'no-store' });
    const row = found.row;
    const view = uploadView(row);
    const [renditions, deliveries, steps] = await dependency('database_unavailable', () =>
      Promise.all([
        listRenditions(pool, row.id),
        listDeliveries(pool, row.id),
        listStepOutcomes(pool, row.id, view.pipeline.name, view.pipeline.version),
      ]),
    );
    return c.json(
      {
        ...view,
        pipeline: { ...view.pipeline, steps: steps.map(stepView) },
        renditions: renditions.map(renditionSummary),
        deliveries: deliveries.map(deliveryView),
      },
      200,
      { etag: recordEtag(row.record_version) },
    );
  });

  return app;
}

const listUploadsRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['uploads'],
  summary: "The tenant's uploads, newest first, a page at a time",
  description:
    'Keyset pagination: pass `nextCursor` as `cursor` for the next page. Pages stay exact while uploads are added (a new upload lands ' +
    'before the first page, never between pages), and each page costs the same however many uploads the tenant has.',
  security: requires('uploads:read'),
  request: { query: ListUploadsQuery },
  responses: {
    200: { description: 'One page', content: { 'application/json': { schema: UploadList } } },
    ...problems(...COMMON_V1_PROBLEMS, 'query_invalid'),
  },
});

const getUploadRoute = (uncommitted: UncommittedUploads['schema']) =>
  createRoute({
    method: 'get',
    path: '/{id}',
    tags: ['uploads'],
    summary: 'An upload with its renditions and webhook deliveries',
    security: requires('uploads:read', { uploadToken: true }),
    request: { params: z.object({ id: Uuid }), query: z.object({ wait: WaitQuery.optional() }) },
    responses: {
      200: {
        description:
          'The upload (after at most `wait` seconds, or as soon as it is processed). An import not yet committed shows its progress instead ' +
          '(`status` `importing`, or `failed` with the problem its key answers); `wait` then lasts until it commits and is processed.',
        content: { 'application/json': { schema: z.union([UploadDetail, uncommitted]) } },
      },
      ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'query_invalid'),
    },
  });

export function uploadView(row: UploadRow) {
  return {
    uploadId: row.id,
    status: row.restorable_until ? 'deleted_pending' : row.status,
    restorableUntil: row.restorable_until?.toISOString() ?? null,
    idempotencyKey: row.idempotency_key,
    deletedAt: row.deleted_at?.toISOString() ?? null,
    erasedAt: row.erased_at?.toISOString() ?? null,
    expiresAt: row.expires_at?.toISOString() ?? null,
    tokenId: row.token_id,
    subject: row.subject,
    metadata: row.metadata,
    tags: row.tags,
    version: row.record_version,
    legalHold: holdView(row),
    storageKey: row.storage_key,
    storageTarget: row.storage_target ?? null,
    bytes: Number(row.bytes),
    sha256: row.sha256,
    contentType: row.content_type,
    fileName: row.file_name,
    createdAt: row.created_at.toISOString(),
    processing: {
      status: row.processing_status,
      reason: row.processing_reason,
      media: row.media,
      processedAt: row.processed_at?.toISOString() ?? null,
    },
    // Uploads committed before pipelines ran the built-in default.
    pipeline: { name: row.pipeline ?? DEFAULT_PIPELINE, version: row.pipeline_version ?? 0 },
    availability: row.availability,
    rejectionReason: row.rejection_reason,
    arrival: row.arrival,
  };
}

function stepView(s: StepOutcomeRow) {
  const scan = s.output?.scan as Record<string, unknown> | undefined;
  return {
    index: s.step_index,
    type: s.type,
    status: s.status,
    reason: s.reason,
    ...(scan ? { scan } : {}),
    finishedAt: s.finished_at.toISOString(),
  };
}

function deliveryView(d: DeliveryRow) {
  return {
    eventId: d.event_id,
    eventType: d.event_type,
    endpointId: d.endpoint_id,
    attempts: d.attempts,
    lastStatus: d.last_status,
    lastError: d.last_error,
    deliveredAt: d.delivered_at?.toISOString() ?? null,
  };
}
