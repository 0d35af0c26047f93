// PATCH /v1/uploads/{id} (the record's metadata and tags, under If-Match) and
// GET /v1/uploads/{id}/versions (every version, newest first).
import { createRoute, z } from '@hono/zod-openapi';
import type { VersionRow } from '../db/queries/upload-record';
import { header } from '../http/headers';
import { idempotentRoute, type IdempotentRouteOptions } from '../http/idempotent-route';
import { jsonBody } from '../http/json-body';
import { parseQuery } from '../http/list-query';
import { COMMON_V1_PROBLEMS, IDEMPOTENT_PROBLEMS, jsonRequestBody, problems, replayedHeader, route, router } from '../http/openapi';
import { replayHeaders } from '../http/replay-headers';
import { IdempotencyKey, INT4_MAX, PageQuery, Uuid } from '../http/schemas';
import { RecordChangeBody, RecordVersion } from './schemas';
import { requires } from '../http/scopes';
import type { RecordEditor } from './editor';
import { parseIfMatch, recordEtag } from '../http/record-etag';

const VersionsQuery = z
  .object({
    limit: PageQuery.shape.limit,
    cursor: z
      .string()
      .regex(/^[1-9][0-9]{0,9}$/, 'cursor is the nextCursor of the page before.')
      .optional()
      .openapi({ description: 'The nextCursor of the page before.' }),
  })
  .strict();

export function recordRoutes(deps: { editor: RecordEditor; idempotency: IdempotentRouteOptions }) {
  const { editor } = deps;
  const app = router();

  route(app, patchRoute, idempotentRoute(deps.idempotency), async function changeRecord(c) {
    const base = parseIfMatch(header(c, 'if-match'));
    const body = await jsonBody(c, RecordChangeBody);
    const principal = c.get('principal');
    const { version, replayed } = await editor.change(
      c.get('tenantId'),
      c.req.param('id')!,
      base,
      body,
      `${principal.kind}:${principal.id}`,
    );
    return c.json(versionView(version), 200, { etag: recordEtag(version.version), ...replayHeaders(replayed) });
  });

  route(app, versionsRoute, async function listRecordVersions(c) {
    const q = parseQuery(VersionsQuery, c.req.query());
    const limit = q.limit ?? 50;
    const before = q.cursor === undefined ? undefined : Math.min(Number(q.cursor), INT4_MAX);
    const rows = await editor.versions(c.get('tenantId'), c.req.param('id')!, before, limit + 1);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return c.json({ items: page.map(versionView), nextCursor: rows.length > limit && last ? String(last.version) : null });
  });

  return app;
}

function versionView(v: VersionRow) {
  return {
    uploadId: v.upload_id,
    version: v.version,
    metadata: v.metadata,
    tags: v.tags,
    changedBy: v.changed_by,
    changedAt: v.changed_at.toISOString(),
  };
}

const etagHeader = {
  description: "The record's version after the change: the next PATCH's If-Match.",
  schema: { type: 'string' as const },
};

const patchRoute = createRoute({
  method: 'patch',
  path: '/{id}',
  tags: ['uploads'],
  summary: "Change an upload's metadata and tags (a new version of its record)",
  description:
    'Each field sent replaces the current one whole (`metadata: null` clears it). `If-Match` names the version the change was made from ' +
    "(GET's `ETag`): 412 `record_version_stale` when the record has moved on, 428 without it. The change is the next version, with who made " +
    'it and when, and one `upload.updated` event. The same change sent again from the same version (a retry after a lost answer) answers ' +
    'the version it made (`Idempotent-Replayed: true`): one version, one event.',
  security: requires('records:write'),
  request: {
    params: z.object({ id: Uuid }),
    headers: z.object({
      'if-match': z.string().openapi({ description: 'The version the change is made from, as ETag answered it (`"3"`).', example: '"1"' }),
      'idempotency-key': IdempotencyKey.optional(),
    }),
    body: jsonRequestBody(RecordChangeBody, { metadata: { album: 'holiday', rating: 5 }, tags: ['favourite'] }),
  },
  responses: {
    200: {
      description: 'The version the change made',
      headers: { ETag: etagHeader, 'Idempotent-Replayed': replayedHeader },
      content: { 'application/json': { schema: RecordVersion } },
    },
    ...problems(
      ...COMMON_V1_PROBLEMS,
      ...IDEMPOTENT_PROBLEMS,
      'not_found',
      'upload_deleted',
      'record_version_required',
      'record_version_stale',
      'quota_exceeded',
      'header_invalid',
      'temporal_unavailable',
    ),
  },
});

const versionsRoute = createRoute({
  method: 'get',
  path: '/{id}/versions',
  tags: ['uploads'],
  summary: "Every version of an upload's record, newest first",
  description: 'Version 1 is the record as uploaded (`changedBy: upload`); each PATCH added one. Erasure removes them all.',
  security: requires('uploads:read'),
  request: { params: z.object({ id: Uuid }), query: VersionsQuery },
  responses: {
    200: {
      description: 'One page',
      content: {
        'application/json': {
          schema: z.object({ items: z.array(RecordVersion), nextCursor: z.string().nullable() }).openapi('RecordVersionList'),
        },
      },
    },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'upload_deleted', 'query_invalid'),
  },
});
