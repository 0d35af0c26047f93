// The schemas every door and the API share: the upload headers, keys, ids, dates, the
// upload answer, problems, list paging and the webhook event. Request schemas are what the
// handlers validate with (the header parsers and body readers call them); the OpenAPI
// document at /openapi.json is generated from these same objects, so the contract and the
// checks cannot drift. A resource's own schemas live with it (src/api/schemas.ts, a door's
// folder).
import { z } from '@hono/zod-openapi';
import { catalogue, type ErrorCode } from '../errors';
import { MEDIA_TYPE_PATTERN } from '../upload/media-type';
import { FILE_NAME_PATTERN } from '../upload/file-name';

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
  .regex(FILE_NAME_PATTERN, 'X-File-Name must be 1-255 characters without control characters, bidirectional overrides or slashes.')
  .openapi({
    description:
      'Original file name, percent-encoded when not ASCII (1-255 characters, no control characters, bidirectional overrides or slashes).',
    example: 'holiday%20photo.jpg',
  });

/** A file name in a JSON body (the same rule as X-File-Name, not percent-encoded). */
export const FileNameField = z
  .string()
  .regex(FILE_NAME_PATTERN, 'fileName must be 1-255 characters without control characters, bidirectional overrides or slashes.')
  .openapi({ example: 'talk.mp4' });

/** A media type's essence (parameters are dropped before this check). */
export const MediaType = z.string().regex(MEDIA_TYPE_PATTERN, 'Content-Type is not a valid media type.').openapi({
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

/** The upload's own metadata at most: its JSON text, nesting, key length, top-level entries. */
export const METADATA_LIMITS = { bytes: 16_384, depth: 4, keyLength: 64, entries: 64 } as const;

/** Why `value` is not a metadata object within METADATA_LIMITS, or undefined when it is one. */
export function metadataFault(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'metadata must be a JSON object.';
  if (Object.keys(value).length > METADATA_LIMITS.entries) return `metadata holds at most ${METADATA_LIMITS.entries} top-level entries.`;
  if (Buffer.byteLength(JSON.stringify(value)) > METADATA_LIMITS.bytes)
    return `metadata is at most ${METADATA_LIMITS.bytes} bytes of JSON.`;
  const walk = (v: unknown, depth: number): string | undefined => {
    if (typeof v !== 'object' || v === null) return undefined;
    if (depth > METADATA_LIMITS.depth) return `metadata nests at most ${METADATA_LIMITS.depth} levels deep.`;
    for (const [k, inner] of Object.entries(v)) {
      if (!Array.isArray(v) && (k.length === 0 || k.length > METADATA_LIMITS.keyLength))
        return `metadata keys are 1-${METADATA_LIMITS.keyLength} characters long.`;
      const fault = walk(inner, depth + 1);
      if (fault) return fault;
    }
    return undefined;
  };
  return walk(value, 1);
}

export const Metadata = z
  .record(z.string(), z.unknown(), { error: 'metadata must be a JSON object.' })
  .superRefine((value, ctx) => {
    const fault = metadataFault(value);
    if (fault) ctx.addIssue({ code: 'custom', message: fault });
  })
  .openapi({
    description:
      "The upload's own metadata: a JSON object of at most 16 KiB, 4 levels deep, keys of 1-64 characters, 64 top-level entries. " +
      "An upload token's metadata is merged over it (a key the token fixes cannot be sent with another value: 403).",
    example: { album: 'holiday', camera: { make: 'Fujifilm' } },
  });

const TAG_PATTERN = /^[\p{L}\p{N}][\p{L}\p{N} ._:/+@#-]{0,63}$/u;
export const Tag = z
  .string()
  .regex(TAG_PATTERN, 'A tag is 1-64 letters, digits, spaces or . _ : / + @ # - (starting with a letter or digit).');
export const Tags = z
  .array(Tag)
  .max(32, 'at most 32 tags')
  .openapi({ description: 'At most 32 tags of 1-64 characters (repeats count once).', example: ['holiday', '2026'] });

export const MetadataHeader = z.string().openapi({
  description:
    "The upload's metadata as JSON (a JSON object; non-ASCII as \\u escapes). Within the server's header size: larger metadata goes in a form field or a plan's body.",
  example: '{"album":"holiday"}',
});
export const TagsHeader = z.string().openapi({ description: "The upload's tags, comma-separated (at most 32).", example: 'holiday,2026' });

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

export const MediaRange = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/(\*|[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*)$/, 'a media type (image/png) or family (image/*)');
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

/** The query of a list that pages (every list route does): `limit` per page and the opaque `cursor`. */
/** A credential's or URL's lifetime in seconds, as asked for (its maximum is a setting, checked by the route). */
export const lifetimeSeconds = (description: string) => z.number().int().min(1).optional().openapi({ description, example: 900 });

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

export const UploadProcessing = z
  .object({ status: z.literal('processing'), idempotencyKey: z.string(), workflowId: z.string() })
  .openapi('UploadProcessing', {
    description: 'Accepted; the result is not known yet. Poll the Location (the key) or retry with the same key.',
  });

/** Every webhook event type (src/downstream/events.ts). */
export const EVENT_TYPES = [
  'upload.completed',
  'upload.processed',
  'upload.rejected',
  'upload.deleted',
  'upload.updated',
  'upload.hold_placed',
  'upload.hold_released',
  'upload.restored',
  'storage_migration.completed',
  'storage_migration.cancelled',
] as const;

export const WebhookEvent = z
  .object({
    type: z.enum(EVENT_TYPES),
    timestamp: z.string(),
    data: z.record(z.string(), z.unknown()).openapi({
      description:
        'The upload (as in GET /v1/uploads/{id}, with its `metadata` and `tags`); `upload.processed` adds processing and renditions; `upload.deleted` carries only `uploadId`, `reason`, `deletedAt` and `erasedAt`; ' +
        '`upload.updated` carries `uploadId`, the new `version` with its `metadata`, `tags`, `changedBy` and `changedAt`, and `previous` (the version it replaced); ' +
        '`upload.hold_placed` and `upload.hold_released` carry `uploadId`, `reason`, `changedBy` and `changedAt`; `upload.restored` carries `uploadId` and `restoredAt`; ' +
        '`storage_migration.completed` and `storage_migration.cancelled` carry the migration as in GET /v1/storage-migrations/{id} (`migrationId` its id), its counts final.',
    }),
  })
  .openapi('WebhookEvent');
