// DELETE /v1/uploads/{id} and POST /v1/uploads/delete (up to 100): each upload's deletion
// is its own workflow, `delete/{uploadId}`, so a repeat — with or without an
// Idempotency-Key — attaches to it and answers its state. From the tombstone on, the
// upload's bytes answer 410; the answer is 200 once erased within the wait, else 202.
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Config } from '../../config';
import type { Pool } from '../../db/pool';
import { findUpload, type UploadRow } from '../../db/queries/uploads';
import { findUploadOrImport, type UploadOrImport } from '../../db/queries/imports';
import type { UncommittedUploads } from '../../upload/uncommitted';
import type { DeletionResult } from '../../temporal/definitions';
import { dependency, problem } from '../../errors';
import type { Deletions } from '../../lifecycle/deletions';
import type { AppEnv } from '../../http/env';
import { header } from '../../http/headers';
import { jsonBody } from '../../http/json-body';
import { idempotentRoute, type IdempotentRouteOptions } from '../../http/idempotent-route';
import { COMMON_V1_PROBLEMS, IDEMPOTENT_PROBLEMS, problems, route, router, jsonRequestBody } from '../../http/openapi';
import { parsePrefer } from '../../http/parse/request-headers';
import { BatchDelete, BatchDeletion, Deletion } from '../schemas';
import { IdempotencyKey, PreferHeader, Uuid } from '../../http/schemas';
import { accessOf, assertAccess, requires } from '../../http/scopes';
import { findTenant } from '../../db/queries/tenants';

export function deletionRoutes(deps: {
  pool: Pool;
  deletions: Deletions;
  uncommitted: UncommittedUploads;
  config: Config;
  idempotency: IdempotentRouteOptions;
}) {
  const { pool, deletions, uncommitted, config } = deps;
  const app = router();

  /** The row once its run has opened the restore window (a few seconds at most), for the answer's `restorableUntil`. */
  async function windowOpened(tenantId: string, id: string, before: UploadRow): Promise<UploadRow> {
    for (let waited = 0; waited < 5_000; waited += 100) {
      const row = await dependency('database_unavailable', () => findUpload(pool, tenantId, id));
      if (!row || row.restorable_until || row.erased_at) return row ?? before;
      await new Promise((r) => setTimeout(r, 100));
    }
    return (await dependency('database_unavailable', () => findUpload(pool, tenantId, id))) ?? before;
  }

  /** The upload, or (none yet) the import still reading the file that will make it; one lookup reads both. */
  async function uploadOrImport(tenantId: string, id: string): Promise<UploadOrImport | undefined> {
    const found = await dependency('database_unavailable', () => findUploadOrImport(pool, tenantId, id));
    return found?.kind === 'import' && found.row.state !== 'importing' ? undefined : found;
  }

  route(app, batchDeleteRoute, idempotentRoute(deps.idempotency), async function deleteUploads(c) {
    const { ids } = await jsonBody(c, BatchDelete);
    const tenantId = c.get('tenantId');
    const items = await Promise.all(
      ids.map(async (uploadId) => {
        const found = await uploadOrImport(tenantId, uploadId);
        if (found?.kind === 'import')
          return {
            uploadId,
            status: (await uncommitted.cancel(found.row)) === 'canceling' ? ('deleting' as const) : ('importing' as const),
          };
        if (!found) return { uploadId, status: 'not_found' as const };
        const upload = found.row;
        if (upload.erased_at) return { uploadId, status: 'deleted' as const };
        if (upload.hold_reason !== null && !upload.deleted_at) return { uploadId, status: 'held' as const };
        await deletions.start(tenantId, uploadId, upload.idempotency_key, 'request');
        return { uploadId, status: 'deleting' as const };
      }),
    );
    return c.json({ items }, 202);
  });

  route(app, deleteRoute, idempotentRoute(deps.idempotency), async function deleteUpload(c) {
    const tenantId = c.get('tenantId');
    const id = c.req.param('id')!;
    const { waitMs } = parsePrefer(header(c, 'prefer'), config.DEFAULT_WAIT_SECONDS, config.MAX_WAIT_SECONDS);
    const found = Uuid.safeParse(id).success ? await uploadOrImport(tenantId, id) : undefined;
    if (found?.kind === 'import') {
      // Still being read: the read stops and nothing is kept (GET shows it failed with import_canceled).
      if ((await uncommitted.cancel(found.row)) === 'canceling')
        return c.json({ uploadId: id, status: 'deleting' as const, deletedAt: null, erasedAt: null, restorableUntil: null }, 202, {
          location: `/v1/uploads/${id}`,
          'retry-after': '1',
        });
      // Read already, committing: not stored under the key (409), so the same DELETE works once it has.
      throw problem('import_in_progress', 'The upload is being committed: delete it again in a moment.');
    }
    if (!found) throw problem('not_found', 'No such upload.');
    const upload = found.row;
    const purge = parsePurge(c.req.query('purge'));
    if (purge) assertAccess(c, PURGE);
    if (upload.erased_at) return c.json(deletionView(upload), 200);
    if (upload.hold_reason !== null && (!upload.deleted_at || purge))
      throw problem('legal_hold', `The upload is under a legal hold (${upload.hold_reason}): release it first.`, {
        extra: { uploadId: id },
      });
    // Within its restore window: a repeat answers the window; a purge ends it now.
    if (upload.restorable_until && !purge) return answerDeleting(c, upload);
    if (upload.restorable_until) await deletions.purge(id);
    const tenant = purge ? undefined : await dependency('database_unavailable', () => findTenant(pool, tenantId));
    const graceSeconds = (tenant?.delete_grace_hours ?? 0) * 3600;
    const run = await deletions.start(tenantId, id, upload.idempotency_key, 'request', graceSeconds);
    if (graceSeconds > 0) return answerDeleting(c, await windowOpened(tenantId, id, upload));
    const result = await deletions.result(run, waitMs);
    if (result && 'erasedAt' in result) return c.json(resultView(result), 200);
    // The row as it is now: the erasure may be done (its run's result not yet read), and the
    // answer never shows timestamps older than the truth.
    const now = (await dependency('database_unavailable', () => findUpload(pool, tenantId, id))) ?? upload;
    return now.erased_at ? c.json(deletionView(now), 200) : answerDeleting(c, now);
  });

  return app;
}

function deletionView(u: UploadRow) {
  return {
    uploadId: u.id,
    status: u.erased_at ? ('deleted' as const) : u.restorable_until ? ('deleted_pending' as const) : ('deleting' as const),
    deletedAt: u.deleted_at?.toISOString() ?? null,
    erasedAt: u.erased_at?.toISOString() ?? null,
    restorableUntil: u.restorable_until?.toISOString() ?? null,
  };
}

function resultView(r: DeletionResult) {
  return { uploadId: r.uploadId, status: 'deleted' as const, deletedAt: r.deletedAt, erasedAt: r.erasedAt, restorableUntil: null };
}

function answerDeleting(c: Context<AppEnv>, u: UploadRow) {
  const view = deletionView(u);
  return c.json({ ...view, status: view.status === 'deleted_pending' ? view.status : ('deleting' as const) }, 202, {
    location: `/v1/uploads/${u.id}`,
    'retry-after': '1',
  });
}

const PURGE = accessOf(requires('uploads:purge'))!;

/** `?purge=true`: erase now, past the tenant's restore window (its own scope). */
function parsePurge(value: string | undefined): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw problem('query_invalid', 'purge must be true or false.');
}

const deleteRoute = createRoute({
  method: 'delete',
  path: '/{id}',
  tags: ['uploads'],
  summary: 'Delete an upload with erasure: its bytes, renditions and personal metadata',
  description:
    'Starts (or attaches to) the deletion workflow `delete/{id}`. From its first step the bytes answer 410 and the list shows the upload as ' +
    '`deleted`; a running transcode is cancelled and can write nothing; renditions and the original are deleted (bytes another upload ' +
    'shares under dedupe stay until the last one goes); the file name and media metadata are scrubbed; `upload.deleted` is sent once. ' +
    'A replay of the original upload request under its key then answers 410 `upload_deleted`. 200 when erased within the wait ' +
    '(`Prefer: wait=N`), else 202: poll the Location. An import still reading its file is canceled instead (202): the read stops, ' +
    'nothing is kept, and its key answers 410 `import_canceled`; one already read and being committed is 409 `import_in_progress`.',
  security: requires('uploads:delete'),
  request: {
    params: z.object({ id: Uuid }),
    headers: z.object({ 'idempotency-key': IdempotencyKey.optional(), prefer: PreferHeader.optional() }),
    query: z.object({
      purge: z
        .enum(['true', 'false'])
        .optional()
        .openapi({ description: '`true`: erase now, past the tenant restore window (scope `uploads:purge`).' }),
    }),
  },
  responses: {
    200: { description: 'Erased (or already erased).', content: { 'application/json': { schema: Deletion } } },
    202: {
      description:
        'Deleting: tombstoned, erasure under way; or `deleted_pending`: within the tenant restore window (`restorableUntil`), POST …/restore takes it back. ' +
        'Poll the Location (the upload) or repeat the DELETE.',
      content: { 'application/json': { schema: Deletion } },
    },
    ...problems(
      ...COMMON_V1_PROBLEMS,
      ...IDEMPOTENT_PROBLEMS,
      'not_found',
      'import_in_progress',
      'legal_hold',
      'header_invalid',
      'temporal_unavailable',
    ),
  },
});

const batchDeleteRoute = createRoute({
  method: 'post',
  path: '/delete',
  tags: ['uploads'],
  summary: 'Delete up to 100 uploads (one deletion workflow each)',
  security: requires('uploads:delete'),
  request: {
    headers: z.object({ 'idempotency-key': IdempotencyKey.optional() }),
    body: jsonRequestBody(BatchDelete, { ids: ['…'] }),
  },
  responses: {
    202: {
      description:
        "Each upload's state: deleting (started; an import still reading is canceled), deleted, importing (read, being committed: delete it again in a moment), or not_found.",
      content: { 'application/json': { schema: BatchDeletion } },
    },
    ...problems(...COMMON_V1_PROBLEMS, ...IDEMPOTENT_PROBLEMS, 'temporal_unavailable'),
  },
});
