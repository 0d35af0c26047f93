// The record's requests and answers: a change, a version, a legal hold.
import { z } from '@hono/zod-openapi';
import { LegalHoldView } from '../http/legal-hold-view';
import { Metadata, Tags, Uuid } from '../http/schemas';

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

export const LegalHoldBody = z
  .object({
    reason: z.string().trim().min(1).max(500).openapi({ description: 'Why it is held (a case, a matter).', example: 'Matter 2026-114' }),
  })
  .strict()
  .openapi('PlaceLegalHold');

export const LegalHold = z
  .object({
    uploadId: Uuid,
    legalHold: LegalHoldView,
    storeHold: z.enum(['placed', 'released', 'unsupported']).openapi({
      description:
        "The store's own legal hold (S3 Object Lock) on the upload's objects: `placed` or `released` to match, `unsupported` where the bucket has no Object Lock (Oncely's hold alone keeps it).",
    }),
  })
  .openapi('LegalHold');
