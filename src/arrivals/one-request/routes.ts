// POST /v1/uploads, the one-request door: the raw file as the body (or a form post), under the
// key rule; a request that speaks the resumable-upload draft is upgraded to it.
import { parseStorageTarget } from '../../http/parse/storage-target';
import { createRoute, z } from '@hono/zod-openapi';
import type { Config } from '../../config';
import { problem } from '../../errors';
import { parseIdempotencyKey } from '../../http/parse/idempotency-key';
import {
  parseContentLength,
  parseContentType,
  parseExpiresAt,
  parseFileName,
  parsePrefer,
  parseSha256,
} from '../../http/parse/request-headers';
import type { UploadReceiver } from '../../upload/receive';
import { ADMISSION_PROBLEMS, type Intake } from '../intake';
import { header, headerValues } from '../../http/headers';
import { requestBody } from '../../http/request-body';
import { renderOutcome } from '../../http/upload-answer';
import { closesUnreadBody } from '../../http/unread-body';
import { isFormPost } from '../form/form-post';
import { answerFormPost } from '../form/form-answer';
import { oneRequestUpload } from '../../upload/upload-request';
import { parsePipelineName } from '../../pipelines/declared';
import { PipelineName } from '../../pipelines/catalogue';
import { COMMON_V1_PROBLEMS, problems, route, router, uploadAnswers, KEY_PROBLEMS } from '../../http/openapi';
import {
  ContentLengthHeader,
  ExpiresAt,
  FileName,
  IdempotencyKey,
  MediaType,
  MetadataHeader,
  PreferHeader,
  Sha256Header,
  TagsHeader,
} from '../../http/schemas';
import { labelsOf, parseMetadataText, parseTagsText } from '../../http/parse/labels';
import { assertTokenLive, requires } from '../../http/scopes';
import { dialectOf } from '../rufh/protocol';
import { RUFH_CREATION_HEADERS } from '../rufh/contract';
import { createResumableUpload, type ResumableDeps } from '../rufh/routes';

export function oneRequestRoutes(deps: {
  receiver: UploadReceiver;
  config: Config;
  intake: Intake;
  /** A request that speaks the resumable-upload draft is upgraded to it. */
  resumable: ResumableDeps;
}) {
  const { receiver, config, intake } = deps;
  const app = router();

  route(app, createUploadRoute, async function createUpload(c) {
    const tenantId = c.get('tenantId');
    if (isFormPost(header(c, 'content-type'))) {
      // A form's key may be a field, after bytes: an expired token sends no form at all.
      assertTokenLive(c);
      return answerFormPost(c, { receiver, config, intake }, tenantId);
    }
    const resumable = dialectOf((name) => header(c, name));
    if (resumable) return createResumableUpload(c, deps.resumable, resumable);
    const key = parseIdempotencyKey(headerValues(c, 'idempotency-key'));
    if (header(c, 'transfer-encoding') && header(c, 'content-length') === undefined) {
      throw problem('content_length_required', 'Chunked uploads are not accepted: send Content-Length.');
    }
    const { waitMs } = parsePrefer(header(c, 'prefer'), config.DEFAULT_WAIT_SECONDS, config.MAX_WAIT_SECONDS);
    const upload = intake.declare(c, 'upload', {
      key,
      bytes: parseContentLength(header(c, 'content-length')),
      sha256: parseSha256(header(c, 'x-file-sha256')),
      fileName: parseFileName(header(c, 'x-file-name')),
      contentType: parseContentType(header(c, 'content-type')),
      expiresAt: parseExpiresAt(header(c, 'x-expires-at'), 'header_invalid'),
      pipeline: parsePipelineName(header(c, 'x-pipeline'), 'header_invalid'),
      labels: labelsOf(parseMetadataText(header(c, 'x-metadata'), 'header_invalid'), parseTagsText(header(c, 'x-tags'), 'header_invalid')),
      storageTarget: parseStorageTarget(header(c, 'x-storage-target'), 'header_invalid'),
    });
    const req = oneRequestUpload(upload);
    c.set('idempotencyKey', key);
    // The key rule first: a replay answers whatever credential asks for it.
    const replay = await receiver.replay(req, { beforeStart: true });
    if (replay) return renderOutcome(c, replay, key, closesUnreadBody(c));
    await intake.admit(upload);
    // Replays above cost nothing; a new upload takes one of the tenant's in-flight slots.
    let release: () => void;
    try {
      release = intake.slot(tenantId);
    } catch (err) {
      await intake.release(upload);
      throw err;
    }
    try {
      const outcome = await receiver.receive(req, requestBody(c), waitMs);
      return renderOutcome(c, outcome, key, false);
    } finally {
      release();
    }
  });

  return app;
}

const createUploadRoute = createRoute({
  method: 'post',
  path: '/',
  tags: ['uploads'],
  summary: 'Upload a file, exactly once per Idempotency-Key',
  description:
    'Streams the body to object storage and records it once. Copies of the request with the same key attach to the same execution: ' +
    'while it runs they wait with it (or get 202 / 409), afterwards they get the stored answer byte for byte. ' +
    'The same key with a different file (size, type, name or SHA-256) is refused with 422. ' +
    'With `Upload-Complete` (draft-ietf-httpbis-resumable-upload) the upload becomes resumable: see the resumable uploads (IETF draft) routes.',
  security: requires('uploads:write', { uploadToken: 'replays' }),
  request: {
    headers: z.object({
      'idempotency-key': IdempotencyKey,
      'content-length': ContentLengthHeader,
      'content-type': MediaType.optional(),
      'x-file-sha256': Sha256Header.optional(),
      'x-file-name': FileName.optional(),
      'x-expires-at': ExpiresAt.optional(),
      'x-pipeline': PipelineName.optional().openapi({
        description: "The pipeline to run once the upload commits (its latest version then); absent: the tenant's `default`.",
      }),
      'x-metadata': MetadataHeader.optional(),
      'x-tags': TagsHeader.optional(),
      prefer: PreferHeader.optional(),
      ...RUFH_CREATION_HEADERS,
    }),
    body: {
      required: true,
      description:
        'The file bytes (any media type; not chunked). Or a form (multipart/form-data): exactly one file part, optional fields `fileName`, `sha256`, `expiresAt`, `pipeline`, `metadata` (JSON), `tags` (comma-separated) and ' +
        '`idempotencyKey` (before the file part) when the header cannot be set. A form is identified by its file (bytes, SHA-256, media type, name), not its envelope.',
      content: {
        'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
        'multipart/form-data': {
          schema: {
            type: 'object',
            required: ['file'],
            properties: {
              idempotencyKey: { type: 'string' },
              fileName: { type: 'string' },
              expiresAt: { type: 'string', format: 'date-time' },
              pipeline: { type: 'string' },
              metadata: { type: 'string', description: 'JSON object' },
              tags: { type: 'string', description: 'comma-separated' },
              sha256: { type: 'string' },
              file: { type: 'string', format: 'binary' },
            },
          },
        },
      },
    },
  },
  responses: {
    ...uploadAnswers(
      'Stored (or, with Idempotent-Replayed, the stored answer of the first request).',
      'Accepted, result not known within the wait: poll Location (the key) or retry with the same key.',
    ),
    ...problems(
      ...COMMON_V1_PROBLEMS,
      ...KEY_PROBLEMS,
      'idempotency_in_progress',
      'content_length_required',
      'payload_too_large',
      'checksum_invalid',
      'checksum_mismatch',
      'body_incomplete',
      'header_invalid',
      'malformed_request',
      'request_timeout',
      'headers_too_large',
      'content_type_mismatch',
      'type_not_allowed',
      'token_exhausted',
      ...ADMISSION_PROBLEMS,
      'too_many_uploads',
      'form_invalid',
      'upload_failed',
      'storage_unavailable',
      'temporal_unavailable',
    ),
  },
});
