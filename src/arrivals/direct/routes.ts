// Direct uploads at /v1/direct-uploads: the client asks for a plan (signed requests to the
// store), sends the bytes there, then completes; completion is the same commit as
// POST /v1/uploads and answers the same upload JSON, replayed under the key ever after.
// The Idempotency-Key owns the session: the same request again gets the same session with
// fresh URLs; another size, hash, type or name is 422.
import { parseStorageTarget } from '../../http/parse/storage-target';
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Config } from '../../config';
import type { DirectPlan, DirectUploads } from './direct-uploads';
import { problem } from '../../errors';
import { parseIdempotencyKey } from '../../http/parse/idempotency-key';
import { parseExpiresAt, parsePrefer } from '../../http/parse/request-headers';
import { parsePipelineName } from '../../pipelines/declared';
import { labelsOf } from '../../http/parse/labels';
import type { AppEnv } from '../../http/env';
import { header, headerValues } from '../../http/headers';
import { jsonBody } from '../../http/json-body';
import { absoluteUrl } from '../../http/public-url';
import { replayHeaders } from '../../http/replay-headers';
import {
  COMMON_V1_PROBLEMS,
  problems,
  replayedHeader,
  route,
  router,
  uploadAnswers,
  KEY_PROBLEMS,
  jsonRequestBody,
} from '../../http/openapi';
import { requestBody } from '../../http/request-body';
import { pathId } from '../../http/path-id';
import { CreateDirectUpload, DirectPartRequest, DirectPartUrl, DirectUploadPlan } from './schemas';
import { IdempotencyKey, PreferHeader, Uuid } from '../../http/schemas';
import { renderOutcome } from '../../http/upload-answer';
import { callingToken, requires } from '../../http/scopes';
import { parentOf } from '../../tokens/parent';
import { ADMISSION_PROBLEMS, type Intake } from '../intake';

const TAG = 'direct uploads (presigned)';

const createPlanRoute = createRoute({
  method: 'post',
  path: '/',
  tags: [TAG],
  summary: 'Plan a direct upload (or, with the same key and request, get the same plan again with fresh URLs)',
  description:
    'Answers signed requests the client sends to the object store itself: one PUT (up to S3_SINGLE_PUT_MAX_MIB; always into the embedded store, where the URL points at this API; into a tenant’s S3 storage target they are the target’s on either store), ' +
    'or a multipart plan whose part URLs come from `POST /v1/direct-uploads/{id}/parts/{n}`. The signatures cover the object key, the length and the SHA-256, ' +
    'so the store refuses any other bytes and no other key can be written. Then `POST /v1/direct-uploads/{id}/complete` commits. ' +
    'For a tenant with dedupe `sha256` that already stores these bytes, the plan is an instant upload: committed at once (`committedUpload`), nothing to send.',
  security: requires('uploads:write', { uploadToken: true }),
  request: {
    headers: z.object({ 'idempotency-key': IdempotencyKey, prefer: PreferHeader.optional() }),
    body: jsonRequestBody(CreateDirectUpload, { bytes: 1048576, sha256: '<hex>', contentType: 'video/mp4', fileName: 'talk.mp4' }),
  },
  responses: {
    201: {
      description: "The plan (Idempotent-Replayed when it is the key's existing session).",
      headers: { 'Idempotent-Replayed': replayedHeader },
      content: { 'application/json': { schema: DirectUploadPlan } },
    },
    ...problems(
      ...COMMON_V1_PROBLEMS,
      ...KEY_PROBLEMS,
      'body_invalid',
      'payload_too_large',
      ...ADMISSION_PROBLEMS,
      'storage_unavailable',
      'temporal_unavailable',
      'too_many_sessions',
    ),
  },
});

const getPlanRoute = createRoute({
  method: 'get',
  path: '/{id}',
  tags: [TAG],
  summary: "A direct upload's state, with fresh URLs while it is open",
  security: requires('uploads:write', { uploadToken: 'own-sessions' }),
  request: { params: z.object({ id: Uuid }) },
  responses: {
    200: { description: 'The plan', content: { 'application/json': { schema: DirectUploadPlan } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'storage_unavailable'),
  },
});

const partRoute = createRoute({
  method: 'post',
  path: '/{id}/parts/{n}',
  tags: [TAG],
  summary: 'A signed URL for part n of a multipart plan (the store checks the part against its SHA-256)',
  security: requires('uploads:write', { uploadToken: 'own-sessions' }),
  request: {
    params: z.object({ id: Uuid, n: z.string().regex(/^\d{1,5}$/) }),
    body: jsonRequestBody(DirectPartRequest, { sha256: '<hex or base64 of the part>' }),
  },
  responses: {
    200: {
      description: 'PUT the part there, with these headers; a part sent twice replaces itself.',
      content: { 'application/json': { schema: DirectPartUrl } },
    },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'body_invalid', 'payload_too_large', 'upload_committed', 'storage_unavailable'),
  },
});

const completeRoute = createRoute({
  method: 'post',
  path: '/{id}/complete',
  tags: [TAG],
  summary: 'Verify the object in the store and commit it: the upload JSON, replayed under the key',
  description:
    "Idempotent by the session's key: sent again (its answer lost), it answers the same upload. An `Idempotency-Key`, when sent, must be the session's. " +
    '409 `direct_upload_incomplete` while the object (or a part) is not in the store yet; the session stays open.',
  security: requires('uploads:write', { uploadToken: 'own-sessions' }),
  request: {
    params: z.object({ id: Uuid }),
    headers: z.object({ 'idempotency-key': IdempotencyKey.optional(), prefer: PreferHeader.optional() }),
  },
  responses: {
    ...uploadAnswers('Committed (or the stored answer again, marked Idempotent-Replayed).', 'Committing: poll Location (the key).'),
    ...problems(
      ...COMMON_V1_PROBLEMS,
      'not_found',
      'idempotency_key_invalid',
      'idempotency_key_reuse',
      'direct_upload_incomplete',
      'checksum_mismatch',
      'content_type_mismatch',
      'upload_failed',
      'idempotency_in_progress',
      'storage_unavailable',
      'temporal_unavailable',
    ),
  },
});

const putObjectRoute = createRoute({
  method: 'put',
  path: '/{id}/object',
  tags: [TAG],
  summary: "The embedded store's signed PUT (the URL of a plan on the local-directory store; no API key: the signature is the credential)",
  request: {
    params: z.object({ id: Uuid }),
    query: z.object({
      by: z.string().openapi({ description: 'The credential that planned the upload: the URL takes the object while it may upload.' }),
      expires: z.string(),
      signature: z.string(),
    }),
    body: { required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
  },
  responses: {
    200: { description: 'Stored (length and SHA-256 checked while streaming); now complete the upload.' },
    ...problems(
      'signature_invalid',
      'unauthorized',
      'insufficient_scope',
      'not_found',
      'upload_committed',
      'body_incomplete',
      'checksum_mismatch',
      'content_length_required',
      'malformed_request',
      'database_unavailable',
      'storage_unavailable',
      'internal_error',
    ),
  },
});

/** The embedded store's PUT: mounted before authentication (the URL's signature is the credential). */
export function directObjectRoutes(deps: { direct: DirectUploads }) {
  const app = router();
  route(app, putObjectRoute, async function putDirectObject(c) {
    if (header(c, 'content-length') === undefined) throw problem('content_length_required', "Send Content-Length (the plan's headers).");
    const signed = { by: c.req.query('by'), expires: c.req.query('expires'), signature: c.req.query('signature') };
    await deps.direct.receiveObject(pathId(c, 'direct upload'), signed, requestBody(c));
    return c.body(null, 200);
  });
  return app;
}

export function directUploadRoutes(deps: { direct: DirectUploads; config: Config; intake: Intake }) {
  const { direct, config, intake } = deps;
  const app = router();

  route(app, createPlanRoute, async function createDirectUpload(c) {
    const key = parseIdempotencyKey(headerValues(c, 'idempotency-key'));
    c.set('idempotencyKey', key);
    const body = await jsonBody(c, CreateDirectUpload);
    const upload = intake.declare(c, 'direct', {
      key,
      bytes: body.bytes,
      sha256: body.sha256,
      contentType: body.contentType ?? 'application/octet-stream',
      fileName: body.fileName ?? null,
      expiresAt: parseExpiresAt(body.expiresAt, 'body_invalid'),
      pipeline: parsePipelineName(body.pipeline, 'body_invalid'),
      labels: labelsOf(body.metadata, body.tags),
      storageTarget: parseStorageTarget(body.storageTarget, 'body_invalid'),
    });
    const { waitMs } = parsePrefer(header(c, 'prefer'), config.DEFAULT_WAIT_SECONDS, config.MAX_WAIT_SECONDS);
    const { plan, replayed } = await direct.plan(upload, waitMs, parentOf(c.get('principal')));
    c.set('outcome', replayed ? 'replayed' : 'created');
    return c.json(withAbsoluteUrl(c, plan), 201, replayHeaders(replayed));
  });

  route(app, getPlanRoute, async function getDirectUpload(c) {
    const plan = await direct.find(c.get('tenantId'), pathId(c, 'direct upload'), parentOf(c.get('principal')));
    return c.json(withAbsoluteUrl(c, plan), 200, { 'cache-control': 'no-store' });
  });

  route(app, partRoute, async function presignDirectPart(c) {
    const body = await jsonBody(c, DirectPartRequest);
    const sha = /^[0-9a-f]{64}$/.test(body.sha256) ? Buffer.from(body.sha256, 'hex').toString('base64') : body.sha256;
    if (callingToken(c)) await direct.find(c.get('tenantId'), pathId(c, 'direct upload'), parentOf(c.get('principal')));
    const signed = await direct.partRequest(c.get('tenantId'), pathId(c, 'direct upload'), Number(c.req.param('n')), sha);
    return c.json({ ...signed, expiresAt: signed.expiresAt.toISOString() }, 200);
  });

  route(app, completeRoute, async function completeDirectUpload(c) {
    const tenantId = c.get('tenantId');
    const id = pathId(c, 'direct upload');
    const { waitMs } = parsePrefer(header(c, 'prefer'), config.DEFAULT_WAIT_SECONDS, config.MAX_WAIT_SECONDS);
    const plan = await direct.find(tenantId, id, parentOf(c.get('principal')));
    const sent = headerValues(c, 'idempotency-key');
    if (sent && sent.length > 0 && parseIdempotencyKey(sent) !== plan.idempotencyKey)
      throw problem('idempotency_key_reuse', 'This direct upload belongs to another Idempotency-Key.');
    c.set('idempotencyKey', plan.idempotencyKey);
    return renderOutcome(c, await direct.complete(tenantId, id, waitMs), plan.idempotencyKey, false);
  });

  /** The embedded store's signed PUT is the API's own route: absolute, like an S3 URL. */
  function withAbsoluteUrl(c: Context<AppEnv>, plan: DirectPlan): DirectPlan {
    return plan.upload ? { ...plan, upload: { ...plan.upload, url: absoluteUrl(c, config.PUBLIC_URL, plan.upload.url) } } : plan;
  }

  return app;
}
