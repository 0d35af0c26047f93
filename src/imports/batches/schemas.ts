// The import batch's schemas: the request (URLs or an S3 source), the batch and its items.
import { z } from '@hono/zod-openapi';
import { FileNameField, Metadata, NextCursor, PageQuery, Tags, Uuid } from '../../http/schemas';
import { PipelineName } from '../../pipelines/catalogue';
import { MAX_BATCH_ITEMS } from './service';

/** The largest import batch body (10,000 items with long URLs). */
export const MAX_BATCH_BODY_BYTES = 8 * 1024 * 1024;

const BatchItem = z
  .object({
    url: z
      .string()
      .max(2048)
      .refine((u) => /^https?:$/.test(URL.parse(u)?.protocol ?? ''), 'url must be an absolute http(s) URL')
      .openapi({ example: 'https://files.example.com/a.jpg' }),
    fileName: FileNameField.optional(),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'sha256 must be 64 lower-case hexadecimal characters.')
      .optional(),
    metadata: Metadata.optional().openapi({ description: "This item's metadata: its keys over the batch's." }),
    tags: Tags.optional().openapi({ description: "This item's tags, added to the batch's." }),
  })
  .strict()
  .openapi('ImportBatchItemRequest');

const S3SourceRequest = z
  .object({
    endpoint: z
      .string()
      .max(2048)
      .refine((u) => {
        const url = URL.parse(u);
        return !!url && /^https?:$/.test(url.protocol) && (url.pathname === '/' || url.pathname === '') && !url.search && !url.hash;
      }, 'endpoint must be an http(s) origin without a path, e.g. https://s3.eu-west-1.amazonaws.com')
      .transform((u) => new URL(u).origin)
      .openapi({ example: 'https://s3.eu-west-1.amazonaws.com' }),
    region: z
      .string()
      .regex(/^[a-z0-9-]{1,40}$/, 'region must be a region name such as eu-west-1.')
      .default('us-east-1'),
    bucket: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'bucket must be an S3 bucket name (3 to 63 of a-z, 0-9, . and -).'),
    prefix: z.string().max(1024).default('').openapi({ description: 'Only keys starting with this are imported (default: every key).' }),
    accessKeyId: z.string().min(1).max(256),
    secretAccessKey: z.string().min(1).max(256).openapi({ description: 'Stored sealed with the secrets box; never shown again.' }),
    sessionToken: z.string().min(1).max(4096).optional(),
  })
  .strict()
  .openapi('ImportBatchS3Source');

export const CreateImportBatch = z
  .object({
    items: z
      .array(BatchItem)
      .min(1)
      .max(MAX_BATCH_ITEMS)
      .optional()
      .openapi({ description: 'The files, 1 to 10,000; item n (from 1) is imported under `import-batch/{id}/{n}`. Give `items` or `s3`.' }),
    s3: S3SourceRequest.optional().openapi({
      description:
        "Another S3-compatible store's objects under a prefix (at most 10,000, folder markers left out), listed when the batch starts and imported in key order. Give `items` or `s3`.",
    }),
    pipeline: PipelineName.optional().openapi({ description: "The pipeline every item runs; absent: the tenant's `default`." }),
    concurrency: z.number().int().min(1).max(16).optional().openapi({ description: 'Items imported at once (default 4).', example: 4 }),
    metadata: Metadata.optional().openapi({ description: "Metadata every item's upload carries (an item's own keys win)." }),
    tags: Tags.optional().openapi({ description: "Tags every item's upload carries, with an item's own." }),
  })
  .strict()
  .refine((b) => (b.items === undefined) !== (b.s3 === undefined), { message: 'Give either items or s3 (one of them, not both).' })
  .openapi('CreateImportBatch');

export const ImportBatch = z
  .object({
    id: Uuid,
    state: z.enum(['listing', 'running', 'paused', 'completed', 'cancelled', 'failed']).openapi({
      description:
        "`listing` while an S3 source's objects are listed (its `total` then known); `failed` when they could not be (see `error`).",
    }),
    total: z.number().int(),
    done: z.number().int().openapi({ description: 'Items committed.' }),
    failed: z.number().int().openapi({ description: 'Items whose import failed (their error is on the item).' }),
    skipped: z.number().int().openapi({ description: 'Items not started before the batch was cancelled.' }),
    pending: z.number().int(),
    concurrency: z.number().int(),
    pipeline: z.string().nullable(),
    metadata: z
      .record(z.string(), z.unknown())
      .nullable()
      .openapi({ description: "The batch's metadata, every item's upload carries it." }),
    tags: z.array(z.string()).openapi({ description: "The batch's tags, sorted." }),
    source: z
      .object({ endpoint: z.string(), region: z.string(), bucket: z.string(), prefix: z.string() })
      .nullable()
      .openapi({ description: "An S3 source's location (its credentials are never shown); a batch of URLs: null." }),
    createdAt: z.string().openapi({ format: 'date-time' }),
    finishedAt: z.string().nullable().openapi({ format: 'date-time' }),
    error: z
      .object({})
      .passthrough()
      .nullable()
      .openapi({ description: "Why a failed batch's source could not be listed (a problem: `error`, `detail`); otherwise null." }),
  })
  .openapi('ImportBatch');

export const BatchItemsQuery = PageQuery.extend({
  state: z.enum(['pending', 'done', 'failed', 'skipped'], { error: 'state must be pending, done, failed or skipped.' }).optional(),
}).strict();

export const ImportBatchItems = z
  .object({
    items: z.array(
      z.object({
        n: z.number().int(),
        url: z.string(),
        fileName: z.string().nullable(),
        sha256: z.string().nullable(),
        metadata: z.record(z.string(), z.unknown()).nullable().openapi({ description: "The item's own metadata (the batch's is added)." }),
        tags: z.array(z.string()).openapi({ description: "The item's own tags, sorted (the batch's are added)." }),
        state: z.enum(['pending', 'done', 'failed', 'skipped']),
        uploadId: z.string().nullable(),
        error: z.record(z.string(), z.unknown()).nullable().openapi({ description: "A failed item's problem." }),
      }),
    ),
    nextCursor: NextCursor,
  })
  .openapi('ImportBatchItems');
