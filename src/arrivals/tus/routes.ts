// tus 1.0.0 resumable uploads (core + creation, creation-with-upload, termination,
// expiration, checksum) at /v1/tus, under the same key rule and the same commit as
// POST /v1/uploads: the Idempotency-Key owns the session (the same creation again gets the
// same upload URL), and the final PATCH answers after the commit. Protocol details are in
// src/arrivals/tus/protocol.ts; sessions and their commit in the session core (src/sessions/appended.ts).
import { parseStorageTarget } from '../../http/parse/storage-target';
import { createRoute, z } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import type { Config } from '../../config';
import { problem } from '../../errors';
import type { AppendedSessions } from '../../sessions/appended';
import type { SessionRow } from '../../db/queries/sessions';
import {
  checkTusResumable,
  parseUploadChecksum,
  parseUploadLength,
  parseUploadMetadata,
  parseUploadOffset,
  TUS_CHECKSUM_ALGORITHMS,
  TUS_EXTENSIONS,
  TUS_VERSION,
} from './protocol';
import { parseIdempotencyKey } from '../../http/parse/idempotency-key';
import type { UploadOutcome } from '../../upload/receive';
import { parseContentType, parseExpiresAt, parseFileName, parsePrefer, parseSha256 } from '../../http/parse/request-headers';
import { parsePipelineName } from '../../pipelines/declared';
import { labelsOf, parseMetadataText, parseTagsText } from '../../http/parse/labels';
import type { AppEnv } from '../../http/env';
import { header, headerValues } from '../../http/headers';
import { COMMON_V1_PROBLEMS, problems, replayedHeader, route, router, KEY_PROBLEMS } from '../../http/openapi';
import { requestBody } from '../../http/request-body';
import { pathId } from '../../http/path-id';
import { IdempotencyKey, PreferHeader, Sha256Header, Uuid } from '../../http/schemas';
import { replayHeaders } from '../../http/replay-headers';
import { callingToken, requires } from '../../http/scopes';
import { ADMISSION_PROBLEMS, type Intake } from '../intake';

const OFFSET_STREAM = 'application/offset+octet-stream';
const h = (description: string) => ({ description, schema: { type: 'string' as const } });
const tusResumable = z.literal(TUS_VERSION).openapi({ description: 'The tus protocol version (required on every request but OPTIONS).' });
const tusAnswer = { 'Tus-Resumable': h('1.0.0') };

const discoverRoute = createRoute({
  method: 'options',
  path: '/',
  tags: ['resumable uploads (tus)'],
  summary: 'tus discovery: versions, extensions, maximum size, checksum algorithms (no authentication)',
  responses: {
    204: {
      description: 'What this tus server supports',
      headers: {
        ...tusAnswer,
        'Tus-Version': h('1.0.0'),
        'Tus-Extension': h(TUS_EXTENSIONS.join(',')),
        'Tus-Max-Size': h('MAX_UPLOAD_BYTES'),
        'Tus-Checksum-Algorithm': h(TUS_CHECKSUM_ALGORITHMS.join(',')),
      },
    },
  },
});

const createSessionRoute = createRoute({
  method: 'post',
  path: '/',
  tags: ['resumable uploads (tus)'],
  summary: 'Create (or, with the same key and request, find again) the resumable upload of an Idempotency-Key',
  description:
    'tus creation and creation-with-upload. The Idempotency-Key owns the session: the same request again answers the same upload URL with ' +
    '`Idempotent-Replayed: true`; another length, metadata or SHA-256, or a key used by another upload or route, is 422. ' +
    'Metadata `filename` and `filetype` name the file and its media type; `sha256` (hex), like `X-File-Sha256`, is checked against the whole file at the end; `pipeline` names the pipeline to run once it commits.',
  security: requires('uploads:write', { uploadToken: true }),
  request: {
    headers: z.object({
      'tus-resumable': tusResumable,
      'idempotency-key': IdempotencyKey,
      'upload-length': z
        .string()
        .openapi({ description: 'Size of the whole file in bytes (deferred lengths are not supported).', example: '1073741824' }),
      'upload-metadata': z.string().optional().openapi({
        description:
          'tus metadata: comma-separated `key base64value` pairs (`filename`, `filetype`, `sha256`, `expiresAt`, `pipeline`, `metadata` as JSON, `tags` comma-separated).',
      }),
      'x-file-sha256': Sha256Header.optional(),
      prefer: PreferHeader.optional(),
    }),
    body: {
      required: false,
      description: 'creation-with-upload: the first bytes (Content-Type: application/offset+octet-stream).',
      content: { [OFFSET_STREAM]: { schema: { type: 'string', format: 'binary' } } },
    },
  },
  responses: {
    201: {
      description: 'Created, or the same session again (Idempotent-Replayed).',
      headers: {
        ...tusAnswer,
        Location: h('The upload URL'),
        'Upload-Offset': h('Bytes received so far'),
        'Upload-Expires': h('When the session expires if idle'),
        'Idempotent-Replayed': replayedHeader,
      },
    },
    ...problems(
      ...COMMON_V1_PROBLEMS,
      'tus_version_unsupported',
      ...KEY_PROBLEMS,
      'header_invalid',
      'checksum_invalid',
      'payload_too_large',
      ...ADMISSION_PROBLEMS,
      'storage_unavailable',
      'temporal_unavailable',
      'too_many_sessions',
    ),
  },
});

const headSessionRoute = createRoute({
  method: 'head',
  path: '/{id}',
  tags: ['resumable uploads (tus)'],
  summary: 'The acknowledged offset of a resumable upload (from any replica)',
  security: requires('uploads:write', { uploadToken: 'own-sessions' }),
  request: { params: z.object({ id: Uuid }), headers: z.object({ 'tus-resumable': tusResumable }) },
  responses: {
    200: {
      description: 'Offset and length',
      headers: {
        ...tusAnswer,
        'Upload-Offset': h('Bytes acknowledged'),
        'Upload-Length': h('Size of the file'),
        'Upload-Metadata': h('As created'),
        'Upload-Expires': h('When it expires if idle'),
        'Cache-Control': h('no-store'),
      },
    },
    ...problems(...COMMON_V1_PROBLEMS, 'tus_version_unsupported', 'not_found'),
  },
});

// Hono answers HEAD with the GET handler (body dropped), so the session's state is served
// as GET (200, no body, the same headers) and HEAD reaches it that way.
const getSessionRoute = createRoute({ ...headSessionRoute, method: 'get', summary: 'The same as HEAD (tus clients use HEAD)' });

const patchSessionRoute = createRoute({
  method: 'patch',
  path: '/{id}',
  tags: ['resumable uploads (tus)'],
  summary: 'Append bytes at Upload-Offset; the last bytes commit the upload (the answer comes after the commit)',
  security: requires('uploads:write', { uploadToken: 'own-sessions' }),
  request: {
    params: z.object({ id: Uuid }),
    headers: z.object({
      'tus-resumable': tusResumable,
      'upload-offset': z.string().openapi({ description: 'Where these bytes start; must equal the acknowledged offset (409 otherwise).' }),
      'upload-checksum': z
        .string()
        .optional()
        .openapi({ description: '`sha1|sha256 <base64 digest>` of this body; a mismatch is 460 and nothing of it is kept.' }),
      prefer: PreferHeader.optional(),
    }),
    body: { required: true, content: { [OFFSET_STREAM]: { schema: { type: 'string', format: 'binary' } } } },
  },
  responses: {
    204: {
      description:
        'Bytes acknowledged. When complete, Location names the committed upload (or the key to poll if the commit outlived the wait).',
      headers: {
        ...tusAnswer,
        'Upload-Offset': h('Bytes acknowledged'),
        'Upload-Expires': h('When it expires if idle'),
        Location: h('/v1/uploads/{id} once committed'),
      },
    },
    ...problems(
      ...COMMON_V1_PROBLEMS,
      'tus_version_unsupported',
      'media_type_unsupported',
      'not_found',
      'header_invalid',
      'upload_offset_mismatch',
      'upload_locked',
      'upload_checksum_mismatch',
      'checksum_algorithm_unsupported',
      'checksum_mismatch',
      'stored_bytes_lost',
      'payload_too_large',
      'content_type_mismatch',
      'idempotency_key_reuse',
      'upload_failed',
      'storage_unavailable',
      'temporal_unavailable',
    ),
  },
});

const terminateSessionRoute = createRoute({
  method: 'delete',
  path: '/{id}',
  tags: ['resumable uploads (tus)'],
  summary: 'tus termination: drop an uncommitted upload and free its key',
  security: requires('uploads:write', { uploadToken: 'own-sessions' }),
  request: { params: z.object({ id: Uuid }), headers: z.object({ 'tus-resumable': tusResumable }) },
  responses: {
    204: { description: 'Terminated', headers: tusAnswer },
    ...problems(...COMMON_V1_PROBLEMS, 'tus_version_unsupported', 'not_found', 'upload_locked', 'upload_committed', 'temporal_unavailable'),
  },
});

/** Tus-Resumable on every answer; an error answered before the body was read closes the connection. */
function tusAnswers(): MiddlewareHandler<AppEnv> {
  return async function tusAnswers(c, next) {
    await next();
    c.res.headers.set('tus-resumable', TUS_VERSION);
    if (c.res.status >= 400 && (c.req.method === 'PATCH' || c.req.method === 'POST')) c.res.headers.set('connection', 'close');
  };
}

/** OPTIONS /v1/tus: mounted before authentication (tus clients discover without credentials). */
export function tusDiscoveryRoutes(config: Config) {
  const app = router();
  route(app, discoverRoute, async function discoverTus(c) {
    return c.body(null, 204, {
      'tus-resumable': TUS_VERSION,
      'tus-version': TUS_VERSION,
      'tus-extension': TUS_EXTENSIONS.join(','),
      'tus-max-size': String(config.MAX_UPLOAD_BYTES),
      'tus-checksum-algorithm': TUS_CHECKSUM_ALGORITHMS.join(','),
    });
  });
  return app;
}

export function tusRoutes(deps: { sessions: AppendedSessions; config: Config; intake: Intake }) {
  const { sessions, config, intake } = deps;
  const app = router();
  app.use('*', tusAnswers());

  /** An upload token reaches only the sessions it created (an API key, any of its tenant's). */
  const ownSession = async (c: Context<AppEnv>) => {
    const token = callingToken(c);
    if (token) await sessions.find(c.get('tenantId'), pathId(c, 'upload'), token.id);
  };

  route(app, createSessionRoute, async function createResumableUpload(c) {
    checkTusResumable(header(c, 'tus-resumable'));
    const key = parseIdempotencyKey(headerValues(c, 'idempotency-key'));
    c.set('idempotencyKey', key);
    const uploadLength = parseUploadLength(header(c, 'upload-length'));
    const uploadMetadata = header(c, 'upload-metadata') ?? '';
    const metadata = parseUploadMetadata(uploadMetadata);
    const headerSha = parseSha256(header(c, 'x-file-sha256'));
    const metaSha = metadata.sha256 === undefined ? null : parseSha256(metadata.sha256);
    if (headerSha && metaSha && headerSha !== metaSha) throw problem('checksum_invalid', 'X-File-Sha256 and the sha256 metadata differ.');
    const name = metadata.filename ?? metadata.name;
    const upload = intake.declare(c, 'tus', {
      key,
      bytes: uploadLength,
      contentType: parseContentType(metadata.filetype ?? metadata.type),
      fileName: name === undefined ? null : parseFileName(encodeURIComponent(name)),
      sha256: headerSha ?? metaSha,
      expiresAt: parseExpiresAt(metadata.expiresAt, 'header_invalid'),
      pipeline: parsePipelineName(metadata.pipeline, 'header_invalid'),
      labels: labelsOf(parseMetadataText(metadata.metadata, 'header_invalid'), parseTagsText(metadata.tags, 'header_invalid')),
      storageTarget: parseStorageTarget(metadata.storageTarget, 'header_invalid'),
    });
    const { session, replayed } = await sessions.create({ upload, uploadMetadata, metadata });
    c.set('outcome', replayed ? 'replayed' : 'created');
    const answer: Record<string, string> = {
      location: `/v1/tus/${session.id}`,
      'upload-expires': sessions.expiresAt(session).toUTCString(),
    };
    Object.assign(answer, replayHeaders(replayed));
    let offset = Number(session.upload_offset);
    // creation-with-upload: the first bytes ride on the creation (not on a replay, whose
    // session may have moved on; the client then HEADs and PATCHes as usual).
    if (!replayed && header(c, 'content-type')?.split(';')[0]?.trim() === OFFSET_STREAM) {
      const { waitMs } = parsePrefer(header(c, 'prefer'), config.DEFAULT_WAIT_SECONDS, config.MAX_WAIT_SECONDS);
      const result = await sessions.write(c.get('tenantId'), session.id, 0, requestBody(c), waitMs, { completes: 'when-full' });
      offset = result.write.offset;
    } else if (replayed) answer.connection = 'close';
    return c.body(null, 201, { ...answer, 'upload-offset': String(offset) });
  });

  app.openAPIRegistry.registerPath(headSessionRoute);
  route(app, getSessionRoute, async function headResumableUpload(c) {
    checkTusResumable(header(c, 'tus-resumable'));
    const s = await sessions.find(c.get('tenantId'), pathId(c, 'upload'), callingToken(c)?.id);
    return c.body(null, 200, {
      ...sessionHeaders(s, sessions.expiresAt(s)),
      'upload-length': s.upload_length,
      ...(s.upload_metadata ? { 'upload-metadata': s.upload_metadata } : {}),
      'cache-control': 'no-store',
    });
  });

  route(app, patchSessionRoute, async function patchResumableUpload(c) {
    checkTusResumable(header(c, 'tus-resumable'));
    if (header(c, 'content-type')?.split(';')[0]?.trim() !== OFFSET_STREAM)
      throw problem('media_type_unsupported', `Send Content-Type: ${OFFSET_STREAM}.`);
    const offset = parseUploadOffset(header(c, 'upload-offset'));
    const declared = header(c, 'content-length');
    const bodyBytes = declared !== undefined && /^\d+$/.test(declared.trim()) ? Number(declared) : undefined;
    const checksum = parseUploadChecksum(header(c, 'upload-checksum'));
    const { waitMs } = parsePrefer(header(c, 'prefer'), config.DEFAULT_WAIT_SECONDS, config.MAX_WAIT_SECONDS);
    await ownSession(c);
    const result = await sessions.write(c.get('tenantId'), pathId(c, 'upload'), offset, requestBody(c), waitMs, {
      completes: 'when-full',
      checksum,
      bodyBytes,
    });
    const answer: Record<string, string> = {
      ...sessionHeaders(
        { ...result.session, upload_offset: String(result.write.offset) },
        new Date(Date.now() + config.RESUMABLE_EXPIRY_HOURS * 3600_000),
      ),
    };
    if (result.outcome) {
      c.set('idempotencyKey', result.session.idempotency_key);
      const { outcome } = result;
      // A recorded rejection (e.g. 415 content_type_mismatch) is the upload's answer.
      if (outcome.kind === 'answer' && outcome.response.status >= 400) {
        return new Response(outcome.response.body, {
          status: outcome.response.status,
          headers: { ...answer, 'content-type': 'application/problem+json' },
        });
      }
      Object.assign(answer, completionHeaders(outcome, result.session.idempotency_key));
    }
    return c.body(null, 204, answer);
  });

  route(app, terminateSessionRoute, async function terminateResumableUpload(c) {
    checkTusResumable(header(c, 'tus-resumable'));
    await ownSession(c);
    await sessions.terminate(c.get('tenantId'), pathId(c, 'upload'));
    return c.body(null, 204);
  });

  return app;
}

function sessionHeaders(s: Pick<SessionRow, 'upload_offset'>, expires: Date): Record<string, string> {
  return { 'upload-offset': String(s.upload_offset), 'upload-expires': expires.toUTCString() };
}

/** After the last bytes: where the committed upload is, or the key to poll while it commits. */
function completionHeaders(outcome: UploadOutcome, key: string): Record<string, string> {
  if (outcome.kind === 'processing') return { location: `/v1/idempotency-keys/${encodeURIComponent(key)}`, 'retry-after': '2' };
  return outcome.response.uploadId ? { location: `/v1/uploads/${outcome.response.uploadId}` } : {};
}
