// POST /v1/uploads/{id}/restore: takes a deletion back within the tenant's restore window
// (deleteGraceHours). The window is the deletion run's: the restore is an update to it, so a
// restore and the window's end cannot both happen.
import { createRoute, z } from '@hono/zod-openapi';
import type { Pool } from '../db/pool';
import { findUpload } from '../db/queries/uploads';
import { dependency, problem } from '../errors';
import type { Deletions } from '../lifecycle/deletions';
import { COMMON_V1_PROBLEMS, problems, route, router } from '../http/openapi';
import { Uuid } from '../http/schemas';
import { requires } from '../http/scopes';

const Restored = z
  .object({
    uploadId: Uuid,
    status: z.enum(['committed', 'processed']),
    restoredAt: z.string().nullable().openapi({ description: 'When it was restored (null: it was not deleted).' }),
  })
  .openapi('Restored');

export function restoreRoutes(deps: { pool: Pool; deletions: Deletions }) {
  const app = router();

  route(app, restoreRoute, async function restoreUpload(c) {
    const tenantId = c.get('tenantId');
    const id = c.req.param('id')!;
    const row = await dependency('database_unavailable', () => findUpload(deps.pool, tenantId, id));
    if (!row) throw problem('not_found', 'No such upload.');
    if (row.erased_at) throw problem('upload_deleted', 'This upload was erased.', { extra: { uploadId: id } });
    // Live: never deleted, or restored already (a retry of the restore).
    if (!row.deleted_at) return c.json({ uploadId: id, status: row.status as 'committed' | 'processed', restoredAt: null }, 200);
    if (!row.restorable_until)
      throw problem('upload_deleted', 'This upload is being erased: its tenant keeps no restore window, or it has closed.', {
        extra: { uploadId: id },
      });
    const restored = await deps.deletions.restore(id);
    const now = await dependency('database_unavailable', () => findUpload(deps.pool, tenantId, id));
    return c.json(
      { uploadId: id, status: (now?.status ?? 'committed') as 'committed' | 'processed', restoredAt: restored.restoredAt },
      200,
    );
  });

  return app;
}

const restoreRoute = createRoute({
  method: 'post',
  path: '/{id}/restore',
  tags: ['uploads'],
  summary: 'Take a deletion back within the restore window',
  description:
    "Within the tenant's `deleteGraceHours` after DELETE (the upload is `deleted_pending`): the upload is back whole, as it was — its bytes, " +
    'renditions, record and key — and `upload.restored` is sent once. After the window (or once purged) it is 410 `upload_deleted`. ' +
    'Restoring an upload that is not deleted (a retry of a restore) changes nothing.',
  security: requires('uploads:delete'),
  request: { params: z.object({ id: Uuid }) },
  responses: {
    200: { description: 'Restored, or not deleted', content: { 'application/json': { schema: Restored } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'upload_deleted', 'temporal_unavailable'),
  },
});
