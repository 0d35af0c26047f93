// Storage targets' requests and answers (POST/GET/PATCH/DELETE /v1/storage-targets).
import { z } from '@hono/zod-openapi';
import { Uuid } from '../http/schemas';
import { Label, StorageTargetName } from '../http/parse/storage-target';

const TargetEncryption = z
  .object({
    sse: z.enum(['AES256', 'aws:kms']).openapi({ description: '`AES256` (SSE-S3) or `aws:kms` (SSE-KMS).' }),
    kmsKeyId: z.string().min(1).max(2048).optional().openapi({ description: "SSE-KMS's key (absent: the bucket's default, aws/s3)." }),
  })
  .strict()
  .refine((e) => e.sse === 'aws:kms' || e.kmsKeyId === undefined, 'kmsKeyId goes with sse aws:kms')
  .openapi('StorageTargetEncryption');

export const CreateStorageTarget = z
  .object({
    name: Label.openapi({ description: 'What uploads name it by (`storageTarget`).', example: 'eu-archive' }),
    endpoint: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .openapi({ description: 'The S3-compatible endpoint.', example: 'https://s3.eu-central-1.amazonaws.com' }),
    bucket: z
      .string()
      .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'an S3 bucket name')
      .openapi({ description: 'An existing bucket.', example: 'acme-uploads' }),
    region: z.string().min(1).max(64).default('us-east-1'),
    prefix: z
      .string()
      .max(256)
      .regex(/^$|^[^/][^\\]*\/$/, 'empty, or a path ending in "/" (not starting with one)')
      .default('')
      .openapi({ description: "Every object's key starts with it.", example: 'oncely/' }),
    forcePathStyle: z.boolean().default(true).openapi({ description: 'Path-style addressing (`endpoint/bucket/key`).' }),
    accessKeyId: z.string().min(1).max(256),
    secretAccessKey: z.string().min(1).max(1024).openapi({ description: 'Kept sealed; never answered.' }),
    residency: Label.optional().openapi({
      description: 'Where the bucket keeps its data (`eu`, `us-east`): a tenant that requires a residency stores only in targets with it.',
      example: 'eu',
    }),
    default: z.boolean().default(false).openapi({ description: "Make it the tenant's default target." }),
    encryption: TargetEncryption.optional().openapi({
      description: "Server-side encryption asked for on every object written to it; absent: the instance's (S3_SSE).",
    }),
  })
  .strict()
  .openapi('CreateStorageTarget');

export const ChangeStorageTarget = z
  .object({
    accessKeyId: z.string().min(1).max(256).optional(),
    secretAccessKey: z.string().min(1).max(1024).optional(),
    default: z
      .boolean()
      .optional()
      .openapi({ description: "true: the tenant's default from now on; false: the instance's store is again (when it was the default)." }),
  })
  .strict()
  .refine((b) => (b.accessKeyId === undefined) === (b.secretAccessKey === undefined), 'send accessKeyId and secretAccessKey together')
  .refine((b) => b.accessKeyId !== undefined || b.default !== undefined, 'send new credentials, default, or both')
  .openapi('ChangeStorageTarget');

export const StorageTarget = z
  .object({
    id: Uuid,
    name: z.string(),
    endpoint: z.string(),
    bucket: z.string(),
    region: z.string(),
    prefix: z.string(),
    forcePathStyle: z.boolean(),
    accessKeyIdHint: z.string().openapi({ description: "The access key id's last four characters." }),
    residency: z.string().nullable(),
    encryption: z
      .object({ sse: z.enum(['AES256', 'aws:kms']), kmsKeyId: z.string().optional() })
      .nullable()
      .openapi({ description: "Its own server-side encryption; null: the instance's (S3_SSE)." }),
    default: z.boolean(),
    credentialsVersion: z.number().int().openapi({ description: 'Goes up with each change of credentials.' }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('StorageTarget');

export const StorageTargetList = z
  .object({
    data: z.array(StorageTarget),
    nextCursor: z.string().nullable().openapi({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
    defaultTarget: Uuid.nullable().openapi({ description: "The tenant's default target (null: the instance's store)." }),
    residency: z
      .string()
      .nullable()
      .openapi({ description: 'The residency every upload of the tenant must have (an operator sets it; null: any).' }),
  })
  .openapi('StorageTargetList');

/** A migration's source or destination: a target's name or id, or `default` (the instance's store). */
const MigrationEnd = z.union([z.literal('default'), StorageTargetName]);

export const CreateStorageMigration = z
  .object({
    from: MigrationEnd.openapi({
      description: "Where the uploads are: a target's name or id, or `default` (the instance's store).",
      example: 'default',
    }),
    to: MigrationEnd.openapi({ description: 'Where they go.', example: 'eu-archive' }),
    filter: z
      .object({
        createdAfter: z.iso.datetime({ offset: true }).optional(),
        createdBefore: z.iso.datetime({ offset: true }).optional(),
        contentType: z
          .string()
          .toLowerCase()
          .regex(/^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/([a-z0-9][a-z0-9!#$&^_.+-]{0,126}|\*)$/, 'contentType is a media type or `type/*`')
          .optional(),
      })
      .strict()
      .default({})
      .openapi({ description: 'Only the uploads matching it (all of them when absent).' }),
    concurrency: z.number().int().min(1).max(16).default(4).openapi({ description: 'Uploads moved at once.' }),
  })
  .strict()
  .refine((b) => b.from !== b.to, 'from and to must differ')
  .openapi('CreateStorageMigration');

export const StorageMigration = z
  .object({
    id: Uuid,
    from: Uuid.nullable().openapi({ description: "The source target (null: the instance's store)." }),
    to: Uuid.nullable().openapi({ description: "The destination (null: the instance's store)." }),
    filter: z.record(z.string(), z.unknown()),
    state: z.enum(['running', 'paused', 'completed', 'cancelled']),
    total: z.number().int().openapi({ description: 'The uploads it takes, counted when it started.' }),
    moved: z.number().int(),
    skipped: z.number().int(),
    failed: z.number().int(),
    bytesMoved: z.number().int(),
    failures: z.array(z.object({ uploadId: Uuid, reason: z.string().nullable() })).openapi({ description: 'The first 100.' }),
    createdAt: z.string(),
    finishedAt: z.string().nullable(),
  })
  .openapi('StorageMigration');

export const StorageMigrationList = z
  .object({ data: z.array(StorageMigration), nextCursor: z.string().nullable() })
  .openapi('StorageMigrationList');
