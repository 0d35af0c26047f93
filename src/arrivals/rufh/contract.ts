// The IETF draft's routes as documented: their OpenAPI definitions (headers, bodies,
// answers and problems). The handlers that serve them are in routes.ts.
import { createRoute, z } from '@hono/zod-openapi';
import { ADMISSION_PROBLEMS } from '../intake';
import { PARTIAL_UPLOAD } from './protocol';
import { COMMON_V1_PROBLEMS, KEY_PROBLEMS, problems, uploadAnswers } from '../../http/openapi';
import { IdempotencyKey, PreferHeader, Sha256Header, Uuid } from '../../http/schemas';
import { requires } from '../../http/scopes';

const h = (description: string) => ({ description, schema: { type: 'string' as const } });
const TAG = 'resumable uploads (IETF draft)';
const sf = (description: string) => z.string().optional().openapi({ description });

/** The draft's request fields, shared by the creation routes' documents. */
export const RUFH_CREATION_HEADERS = {
  'upload-complete': sf('`?1`: this request carries the whole file; `?0`: more appends follow. Sending it makes the upload resumable.'),
  'upload-incomplete': sf('Interop version 3 (iOS 17): the inverse of Upload-Complete.'),
  'upload-draft-interop-version': sf('The draft interop version the client speaks (3, 4, 5, 6, 7 or 8); only a known one is sent 104s.'),
  'upload-length': sf('The whole file in bytes (sf-integer); required unless `Upload-Complete: ?1` with Content-Length.'),
  'repr-digest': sf('`sha-256=:base64:` of the whole file (RFC 9530); checked at completion.'),
  'content-disposition': sf('The file name (`filename`, `filename*`).'),
};

export const discoverRoute = createRoute({
  method: 'options',
  path: '/',
  tags: [TAG],
  summary: 'The limits of resumable uploads, and the draft interop versions served (no authentication)',
  responses: {
    204: {
      description: 'Limits and versions',
      headers: {
        'Upload-Limit': h('max-size (MAX_UPLOAD_BYTES), min-size=0, max-age (idle lifetime); `expires` for interop version 6'),
        'Upload-Draft-Interop-Versions': h('3, 4, 5, 6, 7, 8'),
      },
    },
  },
});

export const createRouteDef = createRoute({
  method: 'post',
  path: '/',
  tags: [TAG],
  summary: 'Create the resumable upload of an Idempotency-Key (the same as POST /v1/uploads with Upload-Complete)',
  description:
    'The request may carry none, some or all of the file. A client speaking a known interop version is sent `104 Upload Resumption Supported` ' +
    "with the upload resource's Location before the body is read, and 104s with `Upload-Offset` as parts are stored. The same creation again (same key, " +
    'same length, name, type, digest) answers the same Location and offset without reading its body (`Idempotent-Replayed: true`); once the upload is ' +
    'complete it replays the final answer. Another request under the key is 422.',
  security: requires('uploads:write', { uploadToken: true }),
  request: {
    headers: z.object({
      'idempotency-key': IdempotencyKey,
      ...RUFH_CREATION_HEADERS,
      'x-file-sha256': Sha256Header.optional(),
      prefer: PreferHeader.optional(),
    }),
    body: { required: false, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
  },
  responses: {
    ...uploadAnswers(
      "Complete: the upload's own answer, with `Upload-Complete: ?1`.",
      'Complete, and the commit outlived the wait: poll Location.',
    ),
    ...problems(...creationProblems()),
  },
});

export const headRouteDef = createRoute({
  method: 'head',
  path: '/{id}',
  tags: [TAG],
  summary: 'Offset retrieval: how much of the upload is stored (from any replica)',
  security: requires('uploads:write', { uploadToken: 'own-sessions' }),
  request: { params: z.object({ id: Uuid }) },
  responses: {
    204: {
      description: 'The state of the upload resource',
      headers: {
        'Upload-Offset': h('Bytes stored'),
        'Upload-Complete': h('?1 once the upload is complete (interop version 3: Upload-Incomplete, inverted)'),
        'Upload-Length': h('Size of the file'),
        'Upload-Limit': h('The limits, with max-age: the seconds left before an idle upload expires'),
        'Cache-Control': h('no-store'),
      },
    },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'interop_version_unsupported'),
  },
});
// Hono answers HEAD with the GET handler (body dropped).
export const getRouteDef = createRoute({ ...headRouteDef, method: 'get', summary: 'The same as HEAD' });

export const appendRouteDef = createRoute({
  method: 'patch',
  path: '/{id}',
  tags: [TAG],
  summary: 'Append at Upload-Offset; with Upload-Complete: ?1 the upload ends and commits (the answer comes after the commit)',
  security: requires('uploads:write', { uploadToken: 'own-sessions' }),
  request: {
    params: z.object({ id: Uuid }),
    headers: z.object({
      'upload-offset': z
        .string()
        .openapi({ description: 'Where these bytes start; must equal the stored offset (409 with the right one otherwise).' }),
      'upload-complete': z.string().openapi({ description: '`?1` when this append ends the upload.' }),
      'upload-draft-interop-version': sf('As at creation.'),
      'content-digest': sf('`sha-256=:…:` or `sha-512=:…:` of this body; a mismatch is 400 and nothing of it is kept.'),
      prefer: PreferHeader.optional(),
    }),
    body: { required: true, content: { [PARTIAL_UPLOAD]: { schema: { type: 'string', format: 'binary' } } } },
  },
  responses: {
    204: {
      description: 'Appended; the upload is not complete (Upload-Complete: ?0, Upload-Offset).',
      headers: { 'Upload-Offset': h('Bytes stored'), 'Upload-Complete': h('?0') },
    },
    ...uploadAnswers(
      "Complete: the upload's own answer, with `Upload-Complete: ?1` (also replayed to appends after completion).",
      'Complete, and the commit outlived the wait: poll Location.',
    ),
    ...problems(
      ...COMMON_V1_PROBLEMS,
      'not_found',
      'header_invalid',
      'interop_version_unsupported',
      'media_type_unsupported',
      'mismatching_upload_offset',
      'inconsistent_upload_length',
      'content_digest_mismatch',
      'upload_locked',
      'checksum_mismatch',
      'stored_bytes_lost',
      'payload_too_large',
      'content_type_mismatch',
      'upload_failed',
      'storage_unavailable',
      'temporal_unavailable',
    ),
  },
});

export const cancelRouteDef = createRoute({
  method: 'delete',
  path: '/{id}',
  tags: [TAG],
  summary: 'Upload cancellation: drop an uncommitted upload and free its key',
  security: requires('uploads:write', { uploadToken: 'own-sessions' }),
  request: { params: z.object({ id: Uuid }) },
  responses: {
    204: { description: 'Cancelled' },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'upload_locked', 'upload_committed', 'temporal_unavailable'),
  },
});

export function creationProblems() {
  return [
    ...COMMON_V1_PROBLEMS,
    ...KEY_PROBLEMS,
    'header_invalid',
    'interop_version_unsupported',
    'inconsistent_upload_length',
    'content_digest_mismatch',
    'checksum_invalid',
    'checksum_mismatch',
    'payload_too_large',
    'content_type_mismatch',
    ...ADMISSION_PROBLEMS,
    'too_many_sessions',
    'storage_unavailable',
    'temporal_unavailable',
  ] as const;
}
