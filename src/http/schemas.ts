// The API's schemas, in one place. Request schemas are what the handlers validate with
// (the header parsers and body readers call them); the OpenAPI document at /openapi.json
// is generated from these same objects, so the contract and the checks cannot drift.
// Response schemas describe the answers; the OpenAPI test validates real answers against them.
import { z } from '@hono/zod-openapi';
import { SCOPES } from '../credentials';
import { catalogue, type ErrorCode } from '../errors';
import { PipelineName } from '../pipelines/catalogue';
import { shownOnce } from './redact';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// ---- request headers, parameters and bodies -------------------------------------------

const keyLength = (iss: { input?: unknown }) => `Idempotency-Key must be 16-255 characters long (got ${String(iss.input ?? '').length}).`;

/** The key itself, after an RFC 8941 quoted string (if sent) is unwrapped. */
export const IdempotencyKey = z
  .string()
  .regex(/^[\x21-\x7e]+$/, 'Idempotency-Key may contain only visible ASCII characters (no spaces or control characters).')
  .min(16, { error: keyLength })
  .max(255, { error: keyLength })
  .openapi({
    description:
      'One value per logical request, reused on every retry of it (16-255 visible ASCII characters; a structured-field quoted string is accepted too). ' +
      'Scoped to the tenant. Answers are kept for the key TTL (default 24 h), then a tombstone answers `idempotency_key_expired` for 7 more days.',
    example: 'order-7f3c9d2e-upload-1',
  });

export const ContentLengthHeader = z
  .string()
  .regex(/^\s*\d{1,16}\s*$/, 'Content-Length must be a non-negative integer.')
  .openapi({
    description: 'Size of the file in bytes (required: uploads are streamed, not chunked). At most the configured MAX_UPLOAD_BYTES.',
    example: '48213',
  });

export const Sha256Header = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[0-9a-f]{64}$/, 'X-File-Sha256 must be 64 hexadecimal characters.')
  .openapi({
    description:
      'SHA-256 of the file, hex. When sent, a body that hashes differently is refused with `checksum_mismatch` and nothing is stored.',
    example: 'a3f1c0d24b1e9f0e7d2c7b0a5e4f3d2c1b0a99887766554433221100ffeeddcc',
  });

/** The file name after percent-decoding (non-ASCII names arrive percent-encoded). */
export const FileName = z
  .string()
  .min(1, 'X-File-Name must be 1-255 characters without control characters or slashes.')
  .max(255, 'X-File-Name must be 1-255 characters without control characters or slashes.')
  .regex(/^[^\x00-\x1f\x7f/\\]+$/, 'X-File-Name must be 1-255 characters without control characters or slashes.')
  .openapi({
    description: 'Original file name, percent-encoded when not ASCII (1-255 characters, no control characters or slashes).',
    example: 'holiday%20photo.jpg',
  });

/** A media type's essence (parameters are dropped before this check). */
export const MediaType = z
  .string()
  .regex(/^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/, 'Content-Type is not a valid media type.')
  .openapi({
    description:
      'Media type of the file; images, video and audio get renditions. Content that contradicts it is refused with 415. Default application/octet-stream.',
    example: 'image/jpeg',
  });

/** The largest value of a PostgreSQL integer column. */
export const INT4_MAX = 2_147_483_647;

/** A declared pipeline version (versions count from 1). */
export const PipelineVersionNumber = z.number().int().min(1).max(INT4_MAX);

const EARLIEST_INSTANT = Date.UTC(1970, 0, 1);
const LATEST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * An RFC 3339 date-time with its offset, from 1970 to 9999 in UTC: what both a JavaScript
 * Date and a PostgreSQL timestamptz hold and print back (year 0000 is neither's).
 */
export function instant(name: string) {
  return z.iso
    .datetime({ offset: true, error: `${name} must be an RFC 3339 date-time with its offset (2027-01-31T00:00:00Z).` })
    .refine((v) => {
      const t = Date.parse(v);
      return t >= EARLIEST_INSTANT && t <= LATEST_INSTANT;
    }, `${name} must lie between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z.`);
}

export const ExpiresAt = instant('expiresAt').openapi({
  description:
    'When to delete the upload (RFC 3339, in the future): the deletion workflow erases it then, as DELETE would. The tenant retention (retentionDays) may delete it earlier.',
  example: '2027-01-31T00:00:00Z',
});

export const PreferHeader = z.string().openapi({
  description:
    'RFC 7240: `wait=N` bounds how long the request waits for the upload to finish (default 10 s, at most 60 s) before answering 202; `respond-async` answers 202 at once.',
  example: 'wait=30',
});

export const WaitQuery = z
  .string()
  .regex(/^\d{1,6}$/, 'wait must be a whole number of seconds.')
  .openapi({ description: 'Long-poll: wait up to this many seconds (at most 60) for the upload to reach `processed`.', example: '20' });

export const Uuid = z.string().regex(UUID_PATTERN).openapi({ format: 'uuid', example: '0b8f7a4e-2f4c-4d7e-9b59-3c1b8e0a6d21' });

const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'sha256 must be 64 lower-case hexadecimal characters.');

export const CreateDirectUpload = z
  .object({
    bytes: z.number().int().min(0).openapi({ description: 'Size of the file in bytes (at most MAX_UPLOAD_BYTES).', example: 268435456 }),
    sha256: Sha256Hex.openapi({
      description: 'SHA-256 of the whole file, hex. The signed PUT carries it, so the store refuses other bytes.',
    }),
    contentType: z
      .string()
      .regex(/^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/, 'contentType is not a valid media type.')
      .optional()
      .openapi({ example: 'video/mp4' }),
    fileName: z
      .string()
      .min(1)
      .max(255)
      .regex(/^[^\x00-\x1f\x7f/\\]+$/, 'fileName must be 1-255 characters without control characters or slashes.')
      .optional()
      .openapi({ example: 'talk.mp4' }),
    expiresAt: ExpiresAt.optional(),
    pipeline: z
      .string()
      .optional()
      .openapi({ description: "The pipeline to run once it is committed; absent: the tenant's `default`.", example: 'photos' }),
  })
  .strict()
  .openapi('CreateDirectUpload');

export const SignedRequest = z
  .object({
    method: z.literal('PUT'),
    url: z.string().openapi({
      description:
        "Absolute: the S3 server's, or this API's own on the embedded store (from PUBLIC_URL, else the origin the request came to).",
    }),
    headers: z.record(z.string(), z.string()).openapi({ description: 'Send exactly these headers: the signature covers them.' }),
    expiresAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('SignedRequest');

export const DirectUploadPlan = z
  .object({
    id: z.string().openapi({ format: 'uuid' }),
    idempotencyKey: z.string(),
    state: z.enum(['open', 'completing', 'committed']),
    bytes: z.number().int(),
    sha256: z.string(),
    contentType: z.string(),
    fileName: z.string().nullable(),
    expiresAt: z.string().openapi({ format: 'date-time', description: 'When an uncompleted session is aborted and its key freed.' }),
    upload: SignedRequest.optional().openapi({
      description: 'One PUT of the whole file (plans up to S3_SINGLE_PUT_MAX_MIB, and every plan on the embedded store).',
    }),
    multipart: z
      .object({ partBytes: z.number().int(), partCount: z.number().int() })
      .optional()
      .openapi({ description: 'Multipart: ask POST …/parts/{n} for each part.' }),
    committedUpload: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ description: 'Instant upload (dedupe): the committed upload; no bytes to send.' }),
  })
  .openapi('DirectUploadPlan');

export const DirectPartRequest = z
  .object({
    sha256: z
      .string()
      .regex(/^([0-9a-f]{64}|[A-Za-z0-9+/]{43}=)$/, "sha256 must be the part's SHA-256, hex or base64.")
      .openapi({ description: "The part's SHA-256 (hex or base64): the store refuses other bytes." }),
  })
  .strict()
  .openapi('DirectPartRequest');

export const DirectPartUrl = SignedRequest.extend({ partNumber: z.number().int(), bytes: z.number().int() }).openapi('DirectPartUrl');

export const CreateWebhookEndpoint = z
  .object({
    url: z.string().min(1).max(2048).openapi({
      description: 'http(s) URL; private and loopback addresses are refused unless allowed by configuration.',
      example: 'https://example.com/hooks/oncely',
    }),
    description: z.string().max(500).optional(),
  })
  .strict()
  .openapi('CreateWebhookEndpoint');

/** A credential's or URL's lifetime in seconds, as asked for (its maximum is a setting, checked by the route). */
const lifetimeSeconds = (description: string) => z.number().int().min(1).optional().openapi({ description, example: 900 });

export const MediaRange = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/(\*|[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*)$/, 'a media type (image/png) or family (image/*)');
export const CreateUploadToken = z
  .object({
    expiresInSeconds: lifetimeSeconds('Lifetime, at most UPLOAD_TOKEN_MAX_SECONDS (24 h by default); 3600 unless given.'),
    maxBytes: z.number().int().min(1).optional().openapi({ description: 'Largest file allowed.', example: 10_000_000 }),
    allowedTypes: z
      .array(MediaRange)
      .min(1)
      .max(32)
      .optional()
      .openapi({ description: 'Types allowed, declared and as the bytes show them.', example: ['image/*', 'application/pdf'] }),
    maxUploads: z.number().int().min(1).max(1_000_000).optional().openapi({ description: 'Uploads committed under the token at most.' }),
    subject: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: "Whose uploads these are (the app's user id).", example: 'user-42' }),
    metadata: z
      .record(z.string().min(1).max(64), z.string().max(512))
      .refine((m) => Object.keys(m).length <= 16, 'at most 16 entries')
      .optional()
      .openapi({ description: 'Recorded on every upload made with the token.', example: { album: 'holiday' } }),
    pipeline: PipelineName.optional().openapi({
      description: 'The pipeline every upload made with the token runs (it must be declared; an upload naming another is refused, 403).',
    }),
  })
  .strict()
  .openapi('CreateUploadToken');

export const UploadToken = z
  .object({
    id: Uuid,
    expiresAt: z.string(),
    maxBytes: z.number().nullable(),
    allowedTypes: z.array(z.string()).nullable(),
    maxUploads: z.number().nullable(),
    uploadsUsed: z.number(),
    subject: z.string().nullable(),
    metadata: z.record(z.string(), z.string()).nullable(),
    pipeline: z.string().nullable(),
    createdAt: z.string(),
    revokedAt: z.string().nullable(),
  })
  .openapi('UploadToken');
export const UploadTokenCreated = UploadToken.extend({
  token: shownOnce({ description: 'The bearer token (`oup_…`); shown in this answer and its replays only.' }),
}).openapi('UploadTokenCreated');

export const CreateTenant = z
  .object({
    name: z.string().trim().min(1).max(200).openapi({ example: 'Acme Photos' }),
    dedupe: z
      .enum(['off', 'sha256'])
      .optional()
      .openapi({ description: 'sha256: identical bytes under this tenant share one stored object (default off).' }),
  })
  .strict()
  .openapi('CreateTenant');

export const TenantSettings = z
  .object({
    retentionDays: z.number().int().min(1).max(36500).nullable().openapi({
      description: "Days the tenant's uploads are kept before the deletion workflow erases them; null keeps them.",
      example: 30,
    }),
  })
  .strict()
  .openapi('TenantSettings');

export const Tenant = z
  .object({ tenantId: Uuid, name: z.string(), dedupe: z.enum(['off', 'sha256']), retentionDays: z.number().int().nullable() })
  .openapi('Tenant');

export const Scope = z.enum(SCOPES).openapi('Scope');
export const CreateApiKey = z
  .object({
    label: z.string().trim().max(100).optional().openapi({ example: 'ci uploader' }),
    scopes: z
      .array(Scope)
      .min(1)
      .refine((list) => new Set(list).size === list.length, 'scopes must not repeat')
      .optional()
      .openapi({
        description:
          "What the key may do. Without it the new key holds the calling key's scopes (every scope for a key made without a list).",
        example: ['uploads:write', 'uploads:read'],
      }),
  })
  .strict()
  .openapi('CreateApiKey');

// ---- responses --------------------------------------------------------------------------

const codes = Object.keys(catalogue) as [ErrorCode, ...ErrorCode[]];

export const ProblemDetails = z
  .object({
    type: z.string().openapi({ example: 'https://oncely.dev/problems/idempotency-key-reuse' }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    error: z.enum(codes).openapi({ description: 'Stable machine-readable code (the catalogue in src/errors.ts).' }),
    message: z.string(),
  })
  .catchall(z.unknown())
  .openapi('Problem', { description: 'RFC 9457 problem details; `error` is the stable code.' });

/** The answer to the request that stored the upload (and, byte for byte, to its replays). */
export const UploadCreated = z
  .object({
    uploadId: Uuid,
    storageKey: z.string(),
    bytes: z.number().int(),
    sha256: z.string(),
    contentType: z.string(),
    fileName: z.string().nullable(),
    createdAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('UploadCreated');

export const Upload = UploadCreated.extend({
  status: z.enum(['committed', 'processed', 'deleted']).openapi({
    description:
      '`committed`: stored and recorded; `processed`: downstream steps (renditions, webhooks) done; `deleted`: erased (the row stays, without its bytes or personal metadata).',
  }),
  idempotencyKey: z.string(),
  deletedAt: z.string().nullable().openapi({ description: 'When the upload was deleted (its bytes stopped being served).' }),
  erasedAt: z.string().nullable().openapi({ description: 'When its bytes, renditions and personal metadata were gone.' }),
  expiresAt: z
    .string()
    .nullable()
    .openapi({ description: 'When it is to be deleted, as sent with it (the tenant retention may come first).' }),
  tokenId: z.string().nullable().openapi({ description: 'The upload token it was made with (null: an API key).' }),
  subject: z.string().nullable().openapi({ description: "The upload token's subject: whose upload it is." }),
  metadata: z.record(z.string(), z.string()).nullable().openapi({ description: "The upload token's metadata." }),
  processing: z.object({
    status: z.enum(['pending', 'ready', 'skipped', 'failed']),
    reason: z.string().nullable(),
    media: z.record(z.string(), z.unknown()).nullable(),
    processedAt: z.string().nullable(),
  }),
  pipeline: z
    .object({ name: z.string(), version: z.number().int() })
    .openapi({ description: 'The pipeline version it was committed with (version 0: the built-in default).' }),
  availability: z.enum(['available', 'gated', 'rejected']).openapi({
    description:
      '`gated`: its pipeline gates (a virus scan) have not passed, nothing of it is served yet (423); `rejected`: a gate refused it, its bytes are deleted (409).',
  }),
  rejectionReason: z.string().nullable(),
}).openapi('Upload');

export const UploadDetail = Upload.extend({
  pipeline: z.object({
    name: z.string(),
    version: z.number().int(),
    steps: z
      .array(
        z.object({
          index: z.number().int().openapi({ description: "The step's place in the declaration, from 0." }),
          type: z.string(),
          status: z.enum(['succeeded', 'skipped', 'failed', 'rejected']),
          reason: z.string().nullable(),
          scan: z
            .object({ verdict: z.enum(['clean', 'infected', 'not_scanned']), viruses: z.array(z.string()), reason: z.string().nullable() })
            .optional()
            .openapi({ description: "A scan step's verdict." }),
          finishedAt: z.string(),
        }),
      )
      .openapi({ description: 'The outcome of each step that ran (steps that do not apply to the file do not run).' }),
  }),
  renditions: z.array(
    z.object({
      name: z.string(),
      storageKey: z.string(),
      contentType: z.string(),
      bytes: z.number().int(),
      width: z.number().int().nullable(),
      height: z.number().int().nullable(),
      durationMs: z.number().int().nullable(),
    }),
  ),
  deliveries: z.array(
    z.object({
      eventId: z.string(),
      eventType: z.string(),
      endpointId: Uuid,
      attempts: z.number().int(),
      lastStatus: z.number().int().nullable(),
      lastError: z.string().nullable(),
      deliveredAt: z.string().nullable(),
    }),
  ),
}).openapi('UploadDetail');

/** The query of a list that pages (every list route does): `limit` per page and the opaque `cursor`. */
export const PageQuery = z
  .object({
    cursor: z
      .string()
      .max(200)
      .optional()
      .openapi({ description: 'Opaque: the `nextCursor` of the previous page. Absent: the first page.' }),
    limit: z
      .string()
      .regex(/^\d{1,3}$/, 'limit must be a whole number from 1 to 100.')
      .transform(Number)
      .refine((n) => n >= 1 && n <= 100, 'limit must be a whole number from 1 to 100.')
      .optional()
      .openapi({ type: 'string', description: 'Items per page, 1 to 100 (default 50).', example: '100' }),
  })
  .strict();

/** The `nextCursor` of a paged list answer. */
export const NextCursor = z.string().nullable().openapi({ description: 'Pass as `cursor` for the next page; null on the last page.' });

export const ListUploadsQuery = z
  .object({
    cursor: PageQuery.shape.cursor,
    limit: PageQuery.shape.limit,
    status: z
      .enum(['committed', 'processed', 'deleted'], { error: 'status must be committed, processed or deleted.' })
      .optional()
      .openapi({ description: 'Only uploads in this state.' }),
    contentType: z
      .string()
      .toLowerCase()
      .regex(
        /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/([a-z0-9][a-z0-9!#$&^_.+-]{0,126}|\*)$/,
        'contentType must be a media type (image/png) or a type with every subtype (image/*).',
      )
      .optional()
      .openapi({ description: 'Only this media type, or `type/*` for every subtype of it.', example: 'image/*' }),
    subject: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: 'Only uploads made with an upload token naming this subject.', example: 'user-42' }),
    createdAfter: instant('createdAfter')
      .optional()
      .openapi({ description: 'Only uploads created after this instant (RFC 3339).', example: '2026-12-01T00:00:00Z' }),
    createdBefore: instant('createdBefore').optional().openapi({ description: 'Only uploads created before this instant (RFC 3339).' }),
    idempotencyKey: IdempotencyKey.optional().openapi({ description: 'Only the upload made under this key.' }),
  })
  .strict();

export const ListEventsQuery = z
  .object({
    cursor: ListUploadsQuery.shape.cursor,
    limit: ListUploadsQuery.shape.limit,
    type: z
      .enum(['upload.completed', 'upload.processed', 'upload.rejected', 'upload.deleted'], {
        error: 'type must be upload.completed, upload.processed, upload.rejected or upload.deleted.',
      })
      .optional(),
    uploadId: Uuid.optional().openapi({ description: "Only this upload's events." }),
    deliveryFailed: z
      .enum(['true', 'false'], { error: 'deliveryFailed must be true or false.' })
      .optional()
      .openapi({ description: '`true`: only events some endpoint has not taken (attempted, not delivered).' }),
  })
  .strict();

export const WebhookEventSummary = z
  .object({ id: z.string(), type: z.string(), uploadId: Uuid, createdAt: z.string() })
  .openapi('WebhookEventSummary');

export const EventList = z.object({ items: z.array(WebhookEventSummary), nextCursor: z.string().nullable() }).openapi('EventList');

export const EventDetail = WebhookEventSummary.extend({
  payload: z.record(z.string(), z.unknown()).openapi({ description: 'The body every delivery of the event sends, byte for byte.' }),
  deliveries: z.array(
    z.object({
      endpointId: Uuid,
      attempts: z.number().int(),
      lastStatus: z.number().int().nullable(),
      lastError: z.string().nullable(),
      deliveredAt: z.string().nullable(),
    }),
  ),
  attempts: z.array(
    z.object({
      endpointId: Uuid,
      trigger: z.enum(['automatic', 'manual', 'recover']),
      attemptedAt: z.string(),
      durationMs: z.number().int(),
      status: z.number().int().nullable(),
      error: z.string().nullable(),
      delivered: z.boolean(),
    }),
  ),
}).openapi('EventDetail');

export const Redeliver = z
  .object({ endpointId: Uuid.optional().openapi({ description: 'Only this endpoint (one added after the event must be named).' }) })
  .strict()
  .openapi('Redeliver');

export const RedeliveryStarted = z
  .object({
    redeliveryId: z.string(),
    eventId: z.string(),
    endpointIds: z.array(Uuid),
    outcomes: z.record(z.string(), z.string()).nullable().openapi({ description: 'Per endpoint, once done within the wait.' }),
  })
  .openapi('RedeliveryStarted');

export const Recover = z
  .object({
    since: instant('since'),
    until: instant('until').optional(),
  })
  .strict()
  .openapi('Recover');

export const Recovery = z
  .object({
    recoveryId: z.string(),
    endpointId: Uuid,
    since: z.string(),
    until: z.string(),
    found: z.number().int(),
    delivered: z.number().int(),
    failed: z.number().int(),
    done: z.boolean(),
  })
  .openapi('Recovery');

export const UploadList = z
  .object({
    items: z.array(Upload),
    nextCursor: z.string().nullable().openapi({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
  })
  .openapi('UploadList');

export const DispositionQuery = z.enum(['inline', 'attachment'], { error: 'disposition must be inline or attachment.' }).openapi({
  description:
    '`attachment` (default) makes a browser save the file, `inline` lets it show it. Scripts and markup (HTML, SVG, XML, JavaScript) are always attachments.',
});

export const CreateDownloadUrl = z
  .object({
    expiresInSeconds: lifetimeSeconds('How long the URL works (default 900 s, at most DOWNLOAD_URL_MAX_SECONDS).'),
    disposition: DispositionQuery.optional(),
    rendition: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .openapi({ description: 'A rendition of the upload instead of the original.', example: 'thumbnail' }),
  })
  .strict()
  .openapi('CreateDownloadUrl');

export const DownloadUrl = z
  .object({
    url: z
      .string()
      .openapi({ description: 'Fetch it with GET (Range works); no API key. A presigned S3 URL cannot be revoked before it expires.' }),
    expiresAt: z.string(),
    disposition: z.enum(['inline', 'attachment']),
  })
  .openapi('DownloadUrl');

export const Deletion = z
  .object({
    uploadId: Uuid,
    status: z.enum(['deleting', 'deleted']).openapi({ description: '`deleting`: tombstoned, erasure under way; `deleted`: erased.' }),
    deletedAt: z.string().nullable(),
    erasedAt: z.string().nullable(),
  })
  .openapi('Deletion');

export const BatchDelete = z
  .object({
    ids: z
      .array(Uuid)
      .min(1, 'ids must name 1 to 100 uploads.')
      .max(100, 'ids must name 1 to 100 uploads.')
      .refine((ids) => new Set(ids).size === ids.length, 'ids must not repeat an upload.'),
  })
  .strict()
  .openapi('BatchDelete');

export const BatchDeletion = z
  .object({
    items: z.array(
      z.object({
        uploadId: Uuid,
        status: z.enum(['deleting', 'deleted', 'not_found']),
      }),
    ),
  })
  .openapi('BatchDeletion');

export const UploadProcessing = z
  .object({ status: z.literal('processing'), idempotencyKey: z.string(), workflowId: z.string() })
  .openapi('UploadProcessing', {
    description: 'Accepted; the result is not known yet. Poll the Location (the key) or retry with the same key.',
  });

export const IdempotencyKeyState = z
  .union([
    z.object({
      idempotencyKey: z.string(),
      state: z.literal('completed'),
      status: z.number().int(),
      uploadId: Uuid.nullable(),
      response: z.unknown(),
      createdAt: z.string(),
      completedAt: z.string(),
      expiresAt: z.string(),
    }),
    z.object({
      idempotencyKey: z.string(),
      state: z.enum(['processing', 'failed']),
      phase: z.string().nullable(),
      workflowId: z.string().nullable(),
    }),
  ])
  .openapi('IdempotencyKeyState');

export const WebhookEndpoint = z
  .object({
    id: Uuid,
    url: z.string(),
    description: z.string(),
    enabled: z.boolean(),
    disabledReason: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi('WebhookEndpoint');
export const WebhookEndpointCreated = WebhookEndpoint.extend({
  secret: shownOnce({ description: 'Standard Webhooks signing secret (`whsec_…`), shown on creation only.' }),
}).openapi('WebhookEndpointCreated');
export const WebhookEndpointList = z.object({ data: z.array(WebhookEndpoint), nextCursor: NextCursor }).openapi('WebhookEndpointList');

export const ApiKey = z
  .object({ id: Uuid, label: z.string(), scopes: z.array(Scope), createdAt: z.string(), revokedAt: z.string().nullable() })
  .openapi('ApiKey');
export const ApiKeyCreated = ApiKey.extend({
  key: shownOnce({
    description: 'The bearer token. Shown in this answer (and its idempotent replays) only; stored as a hash.',
    example: 'onc_…',
  }),
}).openapi('ApiKeyCreated');
export const ApiKeyList = z.object({ data: z.array(ApiKey), nextCursor: NextCursor }).openapi('ApiKeyList');

export const TenantCreated = z
  .object({ tenantId: Uuid, name: z.string(), dedupe: z.enum(['off', 'sha256']), createdAt: z.string(), apiKey: ApiKeyCreated })
  .openapi('TenantCreated');

export const Health = z
  .object({
    status: z.literal('ok'),
    role: z.enum(['all', 'api', 'worker']),
    version: z.string().openapi({ description: "package.json's version" }),
    commit: z.string().openapi({ description: 'the commit the build was made from (`unknown` when it was built without git)' }),
  })
  .openapi('Health');
export const Readiness = z
  .object({
    status: z.enum(['ready', 'unavailable', 'draining']),
    checks: z.record(z.string(), z.string()).openapi({
      description:
        "`ok` or why not, per dependency: `postgres`, `temporal`, `objectStore`; a worker adds `worker` (its pollers' state). Empty while the process drains before it stops",
    }),
  })
  .openapi('Readiness');

export const WebhookEvent = z
  .object({
    type: z.enum(['upload.completed', 'upload.processed', 'upload.deleted']),
    timestamp: z.string(),
    data: z.record(z.string(), z.unknown()).openapi({
      description:
        'The upload (as in GET /v1/uploads/{id}); `upload.processed` adds processing and renditions; `upload.deleted` carries only `uploadId`, `reason`, `deletedAt` and `erasedAt`.',
    }),
  })
  .openapi('WebhookEvent');
