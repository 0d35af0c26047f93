// The schemas of the API's own resources (keys, tokens, endpoints, events, lists, downloads,
// deletions, tenants, health): the requests their handlers validate and the answers the
// OpenAPI test checks. What the doors share with them is in src/http/schemas.ts.
import { TargetFilters, TokenStorageTarget, UploadStorageTarget } from '../http/parse/storage-target';
import { LabelFilters } from '../http/parse/labels';
import { LegalHoldView } from '../http/legal-hold-view';
import { ARRIVAL_MODES, type ArrivalMode } from '../modes';
import { z } from '@hono/zod-openapi';
import { IdempotencyKey, instant, lifetimeSeconds, Uuid, MediaRange, UploadCreated, PageQuery, NextCursor } from '../http/schemas';
import { SCOPES } from '../credentials';
import { UPLOAD_STATUSES } from '../db/queries/uploads';
import { PipelineName } from '../pipelines/catalogue';
import { shownOnce } from '../http/redact';

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
    importHosts: z
      .array(
        z
          .string()
          .toLowerCase()
          .regex(
            /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/,
            'importHosts are host names (`files.example.com`, or `*.example.com` for its subdomains)',
          ),
      )
      .min(1)
      .max(32)
      .optional()
      .openapi({
        description:
          'Hosts it may import from (`POST /v1/imports`; every redirect too). `*.example.com` covers the subdomains. Absent: the token may not import.',
        example: ['files.example.com'],
      }),
    storageTarget: TokenStorageTarget.optional(),
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
    importHosts: z.array(z.string()).nullable(),
    storageTarget: Uuid.nullable().openapi({ description: 'The storage target its uploads go to (null: as each names).' }),
    createdAt: z.string(),
    revokedAt: z.string().nullable(),
  })
  .openapi('UploadToken');
export const UploadTokenCreated = UploadToken.extend({
  token: shownOnce({ description: 'The bearer token (`oup_…`); shown in this answer and its replays only.' }),
}).openapi('UploadTokenCreated');

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

export const Upload = UploadCreated.extend({
  status: z.enum(['committed', 'processed', 'deleted_pending', 'deleted']).openapi({
    description:
      '`committed`: stored and recorded; `processed`: downstream steps (renditions, webhooks) done; `deleted_pending`: deleted, restorable until `restorableUntil`; `deleted`: erased (the row stays, without its bytes or personal metadata).',
  }),
  restorableUntil: z.string().nullable().openapi({ description: 'While deleted_pending: until when POST …/restore brings it back.' }),
  storageTarget: UploadStorageTarget,
  idempotencyKey: z.string(),
  deletedAt: z.string().nullable().openapi({ description: 'When the upload was deleted (its bytes stopped being served).' }),
  erasedAt: z.string().nullable().openapi({ description: 'When its bytes, renditions and personal metadata were gone.' }),
  expiresAt: z
    .string()
    .nullable()
    .openapi({ description: 'When it is to be deleted, as sent with it (the tenant retention may come first).' }),
  tokenId: z.string().nullable().openapi({ description: 'The upload token it was made with (null: an API key).' }),
  subject: z.string().nullable().openapi({ description: "The upload token's subject: whose upload it is." }),
  metadata: z
    .record(z.string(), z.unknown())
    .nullable()
    .openapi({ description: "Its own metadata (the upload token's merged in at upload); PATCH changes it." }),
  tags: z.array(z.string()).openapi({ description: 'Its tags, sorted; PATCH changes them.' }),
  legalHold: LegalHoldView,
  version: z
    .number()
    .int()
    .openapi({ description: "The record's version (metadata and tags), 1 as uploaded; the ETag PATCH's If-Match names." }),
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
  arrival: z
    .enum(Object.keys(ARRIVAL_MODES) as [ArrivalMode, ...ArrivalMode[]])
    .nullable()
    .openapi({
      description:
        'The door it came through (`upload`, `form`, `tus`, `rufh`, `direct`, `uppy`, `import`); null for uploads committed before it was recorded.',
    }),
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

export const ListUploadsQuery = z
  .object({
    cursor: PageQuery.shape.cursor,
    limit: PageQuery.shape.limit,
    status: z
      .enum(UPLOAD_STATUSES, { error: 'status must be committed, processed, deleted_pending or deleted.' })
      .optional()
      .openapi({ description: 'Only uploads in this state (as their `status` shows it: `deleted_pending` within a restore window).' }),
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
    keyPrefix: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .openapi({ description: 'Only uploads whose Idempotency-Key starts with this (case-sensitive).', example: 'order-42-' }),
    fileNamePrefix: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .openapi({ description: 'Only uploads whose file name starts with this, ignoring case.', example: 'invoice' }),
    ...LabelFilters.shape,
    ...TargetFilters.shape,
  })
  .strict();

export const UploadList = z
  .object({
    items: z.array(Upload),
    nextCursor: z.string().nullable().openapi({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
  })
  .openapi('UploadList');

export const Deletion = z
  .object({
    uploadId: Uuid,
    status: z.enum(['deleted_pending', 'deleting', 'deleted']).openapi({
      description: '`deleted_pending`: tombstoned, restorable until `restorableUntil`; `deleting`: erasure under way; `deleted`: erased.',
    }),
    deletedAt: z.string().nullable(),
    erasedAt: z.string().nullable(),
    restorableUntil: z.string().nullable().openapi({ description: 'Until when POST /v1/uploads/{id}/restore takes the deletion back.' }),
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
        status: z.enum(['deleting', 'deleted', 'importing', 'held', 'not_found']).openapi({
          description:
            '`importing`: an import read and being committed (too late to cancel): delete it again once it is committed; `held`: under a legal hold, not deleted.',
        }),
      }),
    ),
  })
  .openapi('BatchDeletion');

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

export const KeyRequests = z
  .object({
    idempotencyKey: z.string(),
    total: z.number().int().openapi({ description: 'Every request that came with the key, kept or not.' }),
    items: z
      .array(
        z.object({
          n: z.number().int().openapi({ description: 'Its place in the order the key saw them, from 1.' }),
          at: z.string(),
          requestId: z.string().openapi({ description: 'Its X-Request-Id (in the access log and traces).' }),
          method: z.string(),
          route: z.string(),
          status: z.number().int(),
          outcome: z.string().openapi({
            description:
              "`created` (the first answer), `replayed` (the stored answer again), `processing` (attached to the run under way, answered 202), `ok` (another route's first answer); refused by the key: `reuse` (another request's key), `expired`, `conflict` (one still in flight).",
          }),
        }),
      )
      .openapi({ description: 'The first 50, in order.' }),
  })
  .openapi('KeyRequests');

export const ApiKey = z
  .object({
    id: Uuid,
    label: z.string(),
    scopes: z.array(Scope),
    createdAt: z.string(),
    revokedAt: z.string().nullable(),
    lastUsedAt: z
      .string()
      .nullable()
      .openapi({ description: 'When it last authenticated a request, to the minute (null: never).', format: 'date-time' }),
  })
  .openapi('ApiKey');
export const ApiKeyCreated = ApiKey.extend({
  key: shownOnce({
    description: 'The bearer token. Shown in this answer (and its idempotent replays) only; stored as a hash.',
    example: 'onc_…',
  }),
}).openapi('ApiKeyCreated');
export const ApiKeyList = z.object({ data: z.array(ApiKey), nextCursor: NextCursor }).openapi('ApiKeyList');

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
