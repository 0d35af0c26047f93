// The record's requests and answers: a change, a version, and the list's label filters.
import { z } from '@hono/zod-openapi';
import { Metadata, Tag, Tags, Uuid } from '../http/schemas';

export const RecordChangeBody = z
  .object({
    metadata: Metadata.nullable().optional().openapi({ description: 'The new metadata, whole (null: none).' }),
    tags: Tags.optional().openapi({ description: 'The new tags, all of them.' }),
  })
  .strict()
  .refine((b) => b.metadata !== undefined || b.tags !== undefined, 'Send metadata, tags or both.')
  .openapi('RecordChange');

export const RecordVersion = z
  .object({
    uploadId: Uuid,
    version: z.number().int(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    tags: z.array(z.string()),
    changedBy: z.string().openapi({ description: '`upload` (version 1, as uploaded) or `key:{id}`, the API key that made it.' }),
    changedAt: z.string(),
  })
  .openapi('RecordVersion');

/** The upload list's filters on the record (src/api/schemas.ts ListUploadsQuery). */
export const LabelFilters = z.object({
  tag: z
    .string()
    .transform((list) => list.split(',').map((t) => t.trim()))
    .pipe(z.array(Tag).min(1).max(8, 'at most 8 tags'))
    .optional()
    .openapi({
      type: 'string',
      description: 'Only uploads carrying every one of these tags (comma-separated, at most 8).',
      example: 'holiday,2026',
    }),
  metadata: z
    .record(z.string().min(1).max(64), z.string().max(400, 'a metadata filter value is at most 400 characters'))
    .refine((m) => Object.keys(m).length <= 8, 'at most 8 metadata filters')
    .optional()
    .openapi({
      param: { style: 'deepObject', explode: true },
      description:
        '`metadata[key]=value`: only uploads whose metadata has this top-level entry (strings exactly; numbers and booleans as their JSON, `metadata[count]=3`, `metadata[draft]=true`). At most 8.',
      example: { album: 'holiday' },
    }),
});

export const LegalHoldBody = z
  .object({
    reason: z.string().trim().min(1).max(500).openapi({ description: 'Why it is held (a case, a matter).', example: 'Matter 2026-114' }),
  })
  .strict()
  .openapi('PlaceLegalHold');

export const LegalHold = z
  .object({
    uploadId: Uuid,
    legalHold: z
      .object({ reason: z.string(), placedAt: z.string().nullable(), placedBy: z.string().nullable() })
      .nullable()
      .openapi({ description: 'The hold; null once released.' }),
    storeHold: z.enum(['placed', 'released', 'unsupported']).openapi({
      description:
        "The store's own legal hold (S3 Object Lock) on the upload's objects: `placed` or `released` to match, `unsupported` where the bucket has no Object Lock (Oncely's hold alone keeps it).",
    }),
  })
  .openapi('LegalHold');
