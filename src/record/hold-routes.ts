// PUT and DELETE /v1/uploads/{id}/legal-hold: place and release an upload's legal hold.
import { createRoute, z } from '@hono/zod-openapi';
import { jsonBody } from '../http/json-body';
import { COMMON_V1_PROBLEMS, jsonRequestBody, problems, route, router } from '../http/openapi';
import { Uuid } from '../http/schemas';
import { requires } from '../http/scopes';
import { holdView } from '../http/legal-hold-view';
import type { LegalHolds } from './holds';
import { LegalHold, LegalHoldBody } from './schemas';

export function holdRoutes(deps: { holds: LegalHolds }) {
  const app = router();

  route(app, placeRoute, async function placeLegalHold(c) {
    const { reason } = await jsonBody(c, LegalHoldBody);
    const p = c.get('principal');
    const { row, storeHold } = await deps.holds.set(c.get('tenantId'), c.req.param('id')!, reason, `${p.kind}:${p.id}`);
    return c.json({ uploadId: row.id, legalHold: holdView(row), storeHold }, 200);
  });

  route(app, releaseRoute, async function releaseLegalHold(c) {
    const p = c.get('principal');
    const { row, storeHold } = await deps.holds.set(c.get('tenantId'), c.req.param('id')!, null, `${p.kind}:${p.id}`);
    return c.json({ uploadId: row.id, legalHold: holdView(row), storeHold }, 200);
  });

  return app;
}

const answer = { description: 'The hold as it now is', content: { 'application/json': { schema: LegalHold } } };
const holdProblems = problems(
  ...COMMON_V1_PROBLEMS,
  'not_found',
  'upload_deleted',
  'body_invalid',
  'temporal_unavailable',
  'storage_unavailable',
);

const placeRoute = createRoute({
  method: 'put',
  path: '/{id}/legal-hold',
  tags: ['uploads'],
  summary: 'Place a legal hold: nothing deletes the upload until it is released',
  description:
    'While held, DELETE answers 409 `legal_hold`, retention and its own expiry skip it, and its tenant cannot be deleted. ' +
    'The same reason again changes nothing; another reason replaces it. Each change sends one `upload.hold_placed` event. ' +
    "Where the bucket has S3 Object Lock, the store's own legal hold is placed on the original and every rendition and variant (`storeHold: placed`), " +
    'so the store itself refuses a delete that bypasses Oncely, and on those made while it is held as they are recorded; the same request again sets them again.',
  security: requires('uploads:hold'),
  request: { params: z.object({ id: Uuid }), body: jsonRequestBody(LegalHoldBody, { reason: 'Matter 2026-114' }) },
  responses: { 200: answer, ...holdProblems },
});

const releaseRoute = createRoute({
  method: 'delete',
  path: '/{id}/legal-hold',
  tags: ['uploads'],
  summary: 'Release the legal hold',
  description:
    "Releasing an upload that is not held changes nothing. A release sends one `upload.hold_released` event and releases the store's own hold (`storeHold: released`).",
  security: requires('uploads:hold'),
  request: { params: z.object({ id: Uuid }) },
  responses: { 200: answer, ...holdProblems },
});
