// @uppy/aws-s3's companion routes (src/arrivals/uppy/uppy-companion.ts), at
// /uppy/{token}/s3/…, where {token} is the tenant-scoped credential the page got from
// POST /v1/uppy-endpoints (Uppy sends no Authorization header to a companion).
import { parseStorageTarget } from '../../http/parse/storage-target';
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Config } from '../../config';
import type { UppyCompanion } from './uppy-companion';
import { COMPANION_UPLOADS, companionAuth, endpointOwner } from './endpoint';
import type { Declared, Intake } from '../intake';
import { parseIdempotencyKey } from '../../http/parse/idempotency-key';
import { parseContentType, parseExpiresAt, parseFileName } from '../../http/parse/request-headers';
import { parsePipelineName } from '../../pipelines/declared';
import { labelsOf, parseLabelValues, parseMetadataText, parseTagsText } from '../../http/parse/labels';
import { problem } from '../../errors';
import type { UploadReceiver } from '../../upload/receive';
import type { AppEnv } from '../../http/env';
import { answerFormPost } from '../form/form-answer';
import { jsonBody } from '../../http/json-body';
import { absoluteUrl } from '../../http/public-url';
import { COMMON_V1_PROBLEMS, problems, route, router, KEY_PROBLEMS, jsonRequestBody } from '../../http/openapi';
import { renderOutcome } from '../../http/upload-answer';
import { requires } from '../../http/scopes';
import type { Pool } from '../../db/pool';
import { parentOf } from '../../tokens/parent';

const TAG = 'Uppy (@uppy/aws-s3 companion routes)';
const token = z.string().openapi({ description: 'The companion token from POST /v1/uppy-endpoints.' });
const objectKey = z.object({ key: z.string().openapi({ description: 'The object key Oncely answered at creation.' }) });
const json = (description: string, schema: z.ZodType) => ({ description, content: { 'application/json': { schema } } });
/** What any companion route may answer about its token: forged or expired, or its parent revoked or short of the scope. */
const TOKEN_PROBLEMS = [
  'signature_invalid',
  'unauthorized',
  'insufficient_scope',
  'not_found',
  'database_unavailable',
  'storage_unavailable',
  'internal_error',
] as const;

const mintRoute = createRoute({
  method: 'post',
  path: '/',
  tags: [TAG],
  summary: "A companion endpoint for this tenant's Uppy page (`companionEndpoint` of @uppy/aws-s3)",
  security: requires('uploads:write', { uploadToken: true }),
  responses: {
    201: json(
      'Pass `companionEndpoint` (relative to this API) to @uppy/aws-s3; each file needs `meta.idempotencyKey`.',
      z.object({ companionEndpoint: z.string(), expiresAt: z.string() }).openapi('UppyEndpoint'),
    ),
    ...problems(...COMMON_V1_PROBLEMS),
  },
});

const UppyCreate = z
  .object({
    filename: z.string().max(1024).optional(),
    type: z.string().max(255).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .strict()
  .openapi('UppyCreateMultipart');
const UppyComplete = z
  .object({
    parts: z.array(z.object({ PartNumber: z.number().int().min(1).max(10_000), ETag: z.string().max(1024) }).strict()).max(10_000),
  })
  .strict()
  .openapi('UppyComplete');

const paramsRoute = createRoute({
  method: 'get',
  path: '/{token}/s3/params',
  tags: [TAG],
  summary: "One-request upload: where Uppy posts its form (Oncely's own form endpoint, which commits inline)",
  request: {
    params: z.object({ token }),
    query: z.object({ filename: z.string().optional(), type: z.string().optional() }).catchall(z.string()),
  },
  responses: {
    200: json('The form to post', z.object({ method: z.literal('POST'), url: z.string(), fields: z.record(z.string(), z.string()) })),
    ...problems(...TOKEN_PROBLEMS, 'idempotency_key_required', 'idempotency_key_invalid'),
  },
});

const formRoute = createRoute({
  method: 'post',
  path: '/{token}/s3/form',
  tags: [TAG],
  summary: 'The form Uppy posts after /s3/params: a form post (one file part) under the key in its fields',
  request: { params: z.object({ token }), body: { required: true, content: { 'multipart/form-data': { schema: { type: 'object' } } } } },
  responses: {
    201: json('The upload', z.object({}).passthrough()),
    ...problems(
      ...TOKEN_PROBLEMS,
      'form_invalid',
      'idempotency_key_required',
      'idempotency_key_reuse',
      'payload_too_large',
      'checksum_mismatch',
      'too_many_uploads',
      'upload_failed',
      'temporal_unavailable',
    ),
  },
});

const createRouteDef = createRoute({
  method: 'post',
  path: '/{token}/s3/multipart',
  tags: [TAG],
  summary: 'Create (or, for the same key and file, find again) the multipart upload of a file',
  request: {
    params: z.object({ token }),
    body: jsonRequestBody(UppyCreate, { filename: 'clip.mp4', type: 'video/mp4', metadata: { idempotencyKey: '…' } }),
  },
  responses: {
    200: json('The object key and upload id', z.object({ key: z.string(), uploadId: z.string() })),
    ...problems(
      ...TOKEN_PROBLEMS,
      'body_invalid',
      ...KEY_PROBLEMS,
      'upload_committed',
      'direct_upload_unsupported',
      'temporal_unavailable',
      'too_many_sessions',
    ),
  },
});

const partRouteDef = createRoute({
  method: 'get',
  path: '/{token}/s3/multipart/{uploadId}/{n}',
  tags: [TAG],
  summary: 'A presigned URL for one part',
  request: { params: z.object({ token, uploadId: z.string(), n: z.string().regex(/^\d{1,5}$/) }), query: objectKey },
  responses: {
    200: json('PUT the part there', z.object({ url: z.string(), expires: z.number() })),
    ...problems(...TOKEN_PROBLEMS, 'upload_committed', 'direct_upload_unsupported'),
  },
});

const listRouteDef = createRoute({
  method: 'get',
  path: '/{token}/s3/multipart/{uploadId}',
  tags: [TAG],
  summary: 'The parts the store holds (Uppy resumes from these)',
  request: { params: z.object({ token, uploadId: z.string() }), query: objectKey },
  responses: {
    200: json('Parts', z.array(z.object({ PartNumber: z.number(), ETag: z.string(), Size: z.number() }))),
    ...problems(...TOKEN_PROBLEMS, 'direct_upload_unsupported'),
  },
});

const completeRouteDef = createRoute({
  method: 'post',
  path: '/{token}/s3/multipart/{uploadId}/complete',
  tags: [TAG],
  summary: 'Complete the multipart and commit the upload (the same commit as POST /v1/uploads; sent again, the same answer)',
  request: {
    params: z.object({ token, uploadId: z.string() }),
    query: objectKey,
    body: jsonRequestBody(UppyComplete, { parts: [{ PartNumber: 1, ETag: '…' }] }),
  },
  responses: {
    200: json(
      'Committed: `location` is the upload, `upload` its JSON',
      z.object({ location: z.string(), key: z.string(), bucket: z.string(), upload: z.object({}).passthrough() }),
    ),
    ...problems(
      ...TOKEN_PROBLEMS,
      'body_invalid',
      'upload_locked',
      'content_type_mismatch',
      'idempotency_key_reuse',
      'upload_failed',
      'temporal_unavailable',
    ),
  },
});

const abortRouteDef = createRoute({
  method: 'delete',
  path: '/{token}/s3/multipart/{uploadId}',
  tags: [TAG],
  summary: 'Uppy cancelled the file: the session, its parts and its run go; the key is free',
  request: { params: z.object({ token, uploadId: z.string() }), query: objectKey },
  responses: { 204: { description: 'Aborted' }, ...problems(...TOKEN_PROBLEMS, 'upload_committed', 'temporal_unavailable') },
});

/** POST /v1/uppy-endpoints (behind the API key). */
export function uppyEndpointRoutes(deps: { uppy: UppyCompanion }) {
  const app = router();
  route(app, mintRoute, async function mintUppyEndpoint(c) {
    const { companionEndpoint, expiresAt } = deps.uppy.mintEndpoint(c.get('tenantId'), parentOf(c.get('principal')));
    return c.json({ companionEndpoint, expiresAt: expiresAt.toISOString() }, 201);
  });
  return app;
}

/** /uppy/{token}/s3/… (the token is the credential; mounted outside /v1's API-key check). */
export function uppyCompanionRoutes(deps: { uppy: UppyCompanion; receiver: UploadReceiver; config: Config; intake: Intake; pool: Pool }) {
  const { uppy, config, intake } = deps;
  const app = router();
  app.use('/:token/s3/*', companionAuth(deps, COMPANION_UPLOADS));
  const owner = endpointOwner;
  const tenant = (c: Context<AppEnv>) => owner(c, true).tenantId;
  const objectKeyOf = (c: Context<AppEnv>) => {
    const key = c.req.query('key');
    if (!key) throw problem('not_found', 'Send ?key= (the object key of the upload).');
    return key;
  };
  const uploadIdOf = (c: Context<AppEnv>) => c.req.param('uploadId') ?? '';
  const waitMs = config.MAX_WAIT_SECONDS * 1000;

  route(app, paramsRoute, async function uppyParams(c) {
    tenant(c);
    const key = keyOf({ idempotencyKey: c.req.query('metadata[idempotencyKey]') });
    const filename = c.req.query('filename') ?? 'file';
    const fields: Record<string, string> = { key: filename, idempotencyKey: key, fileName: filename.split('/').pop() || 'file' };
    const expiresAt = parseExpiresAt(c.req.query('metadata[expiresAt]'), 'query_invalid');
    if (expiresAt) fields.expiresAt = expiresAt;
    const pipeline = parsePipelineName(c.req.query('metadata[pipeline]'), 'query_invalid');
    if (pipeline) fields.pipeline = pipeline;
    // The form checks them again as it does every form's; a bad value is refused before any byte.
    const labels = labelsOf(
      parseMetadataText(c.req.query('metadata[metadata]'), 'query_invalid'),
      parseTagsText(c.req.query('metadata[tags]'), 'query_invalid'),
    );
    if (labels?.metadata) fields.metadata = JSON.stringify(labels.metadata);
    if (labels?.tags) fields.tags = labels.tags.join(',');
    const storageTarget = parseStorageTarget(c.req.query('metadata[storageTarget]'), 'query_invalid');
    if (storageTarget) fields.storageTarget = storageTarget;
    // Absolute: Uppy builds the object's location from it with new URL().
    return c.json(
      { method: 'POST' as const, url: absoluteUrl(c, config.PUBLIC_URL, `/uppy/${c.req.param('token')}/s3/form`), fields },
      200,
    );
  });

  route(app, formRoute, async function uppyForm(c) {
    return answerFormPost(c, deps, tenant(c), 'uppy');
  });

  route(app, createRouteDef, async function uppyCreateMultipart(c) {
    tenant(c);
    const body = await jsonBody(c, UppyCreate);
    const { declared, metadata } = uppyFile(body);
    c.set('idempotencyKey', declared.key);
    return c.json(await uppy.createMultipart(intake.declare(c, 'uppy', declared), metadata), 200);
  });

  route(app, partRouteDef, async function uppySignPart(c) {
    const signed = await uppy.partUrl(owner(c, false), uploadIdOf(c), objectKeyOf(c), Number(c.req.param('n')));
    return c.json(signed, 200);
  });

  route(app, listRouteDef, async function uppyListParts(c) {
    return c.json(await uppy.listParts(owner(c, false), uploadIdOf(c), objectKeyOf(c)), 200);
  });

  route(app, completeRouteDef, async function uppyComplete(c) {
    const o = owner(c, false);
    const key = objectKeyOf(c);
    const body = await jsonBody(c, UppyComplete);
    const outcome = await uppy.complete(o, uploadIdOf(c), key, body.parts, waitMs);
    if (outcome.kind === 'answer' && outcome.response.status < 300 && outcome.response.uploadId) {
      return c.json(
        { location: `/v1/uploads/${outcome.response.uploadId}`, key, bucket: '', upload: JSON.parse(outcome.response.body) as object },
        200,
      );
    }
    // A recorded rejection, or a commit still running: the upload's own answer.
    return renderOutcome(c, outcome, '', false);
  });

  route(app, abortRouteDef, async function uppyAbort(c) {
    await uppy.abort(owner(c, false), uploadIdOf(c), objectKeyOf(c));
    return c.body(null, 204);
  });

  return app;
}

/** The key of a file, from Uppy's metadata. */
function keyOf(metadata: unknown): string {
  const key = metadata && typeof metadata === 'object' ? (metadata as Record<string, unknown>).idempotencyKey : undefined;
  return parseIdempotencyKey(typeof key === 'string' ? [key] : undefined);
}

/** What identifies the file Uppy creates: its key, type, name and string metadata. */
function uppyFile(body: { filename?: unknown; type?: unknown; metadata?: unknown }): {
  declared: Declared;
  metadata: Record<string, string>;
} {
  const metadata = body.metadata && typeof body.metadata === 'object' ? (body.metadata as Record<string, unknown>) : {};
  const name = typeof body.filename === 'string' ? body.filename : undefined;
  const expiresAt = typeof metadata.expiresAt === 'string' ? parseExpiresAt(metadata.expiresAt, 'body_invalid') : undefined;
  const pipeline = typeof metadata.pipeline === 'string' ? parsePipelineName(metadata.pipeline, 'body_invalid') : undefined;
  // Uppy's meta may hold them as values or as text (a form field's copy).
  const labels = labelsOf(
    typeof metadata.metadata === 'string'
      ? parseMetadataText(metadata.metadata, 'body_invalid')
      : parseLabelValues({ metadata: metadata.metadata }, 'body_invalid')?.metadata,
    typeof metadata.tags === 'string'
      ? parseTagsText(metadata.tags, 'body_invalid')
      : parseLabelValues({ tags: metadata.tags }, 'body_invalid')?.tags,
  );
  const storageTarget = parseStorageTarget(metadata.storageTarget, 'body_invalid');
  return {
    declared: {
      ...(expiresAt ? { expiresAt } : {}),
      ...(pipeline ? { pipeline } : {}),
      ...(labels ? { labels } : {}),
      ...(storageTarget ? { storageTarget } : {}),
      key: keyOf(metadata),
      contentType: parseContentType(typeof body.type === 'string' && body.type !== '' ? body.type : undefined),
      fileName: name === undefined ? null : parseFileName(encodeURIComponent(name)),
      sha256: null,
    },
    metadata: Object.fromEntries(
      Object.entries(metadata)
        .filter(([, v]) => typeof v === 'string' || typeof v === 'number')
        .map(([k, v]) => [k, String(v)]),
    ),
  };
}
