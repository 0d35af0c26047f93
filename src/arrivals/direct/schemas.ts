// The direct mode's requests and answers: its plan, part and completion bodies.
import { StorageTargetName } from '../../http/parse/storage-target';
import { z } from '@hono/zod-openapi';
import { ExpiresAt, FileNameField, Metadata, Tags } from '../../http/schemas';
import { MEDIA_TYPE_PATTERN } from '../../upload/media-type';

const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'sha256 must be 64 lower-case hexadecimal characters.');

export const CreateDirectUpload = z
  .object({
    bytes: z.number().int().min(0).openapi({ description: 'Size of the file in bytes (at most MAX_UPLOAD_BYTES).', example: 268435456 }),
    sha256: Sha256Hex.openapi({
      description: 'SHA-256 of the whole file, hex. The signed PUT carries it, so the store refuses other bytes.',
    }),
    contentType: z
      .string()
      .regex(MEDIA_TYPE_PATTERN, 'contentType is not a valid media type.')
      .optional()
      .openapi({ example: 'video/mp4' }),
    fileName: FileNameField.optional(),
    expiresAt: ExpiresAt.optional(),
    pipeline: z
      .string()
      .optional()
      .openapi({ description: "The pipeline to run once it is committed; absent: the tenant's `default`.", example: 'photos' }),
    metadata: Metadata.optional(),
    tags: Tags.optional(),
    storageTarget: StorageTargetName.optional(),
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
      description: 'One PUT of the whole file (plans up to S3_SINGLE_PUT_MAX_MIB, and every plan into the embedded store).',
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
