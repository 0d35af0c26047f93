// The byte quotas' and usage's wire shapes.
import { z } from '@hono/zod-openapi';
import { Uuid } from '../http/schemas';

const limit = (what: string) =>
  z
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .nullable()
    .openapi({ description: `${what}; null: unlimited.` });

export const ByteQuotaSettings = z
  .object({
    maxStoredBytes: limit('Bytes the tenant may store: originals of uploads not yet erased, their renditions and image variants'),
    maxIngressBytesPerMonth: limit('Bytes the tenant may upload or import per calendar month (UTC)'),
    maxUploadsPerMonth: limit('Uploads the tenant may commit per calendar month (UTC)'),
  })
  .openapi('ByteQuotaSettings');

export const ChangeByteQuotas = ByteQuotaSettings.partial()
  .strict()
  .refine((q) => Object.keys(q).length > 0, 'name at least one quota')
  .openapi('ChangeByteQuotas');

const count = (description: string) => z.number().int().openapi({ description });

export const ByteQuotaStanding = z
  .object({
    tenantId: Uuid,
    quotas: ByteQuotaSettings,
    usage: z.object({
      storedBytes: count('Bytes stored now: originals committed and not erased, renditions, image variants.'),
      ingressBytesThisMonth: count('Bytes committed this month.'),
      uploadsThisMonth: count('Uploads committed this month.'),
      reservedBytes: count('Bytes reserved by uploads admitted and not yet committed or ended.'),
      reservedUploads: count('Uploads admitted and not yet committed or ended.'),
    }),
    remaining: z
      .object({
        storedBytes: count('Bytes a new upload may still declare under maxStoredBytes.').nullable(),
        ingressBytesThisMonth: count('Under maxIngressBytesPerMonth.').nullable(),
        uploadsThisMonth: count('Under maxUploadsPerMonth.').nullable(),
      })
      .openapi({ description: 'What is left under each quota after usage and reservations; null: unlimited.' }),
  })
  .openapi('ByteQuotaStanding');

export const UsageQuery = z
  .object({
    from: z.string().datetime({ offset: true }).optional().openapi({
      description: 'Start (inclusive), rounded down to the granularity. Absent: 30 days (granularity day) or 48 hours (hour) before `to`.',
    }),
    to: z.string().datetime({ offset: true }).optional().openapi({ description: 'End (exclusive), rounded up. Absent: now.' }),
    granularity: z.enum(['day', 'hour']).default('day'),
    format: z.enum(['json', 'csv']).optional().openapi({ description: '`csv`: the buckets as CSV (as `Accept: text/csv` does).' }),
  })
  .strict();

export const OperatorUsageQuery = UsageQuery.extend({
  tenantId: Uuid.optional().openapi({ description: 'One tenant; absent: every tenant summed.' }),
}).strict();

export const UsageBucket = z
  .object({
    at: z.string().openapi({ description: "The bucket's start (UTC)." }),
    uploads: count('Uploads committed.'),
    ingressBytes: count('Bytes committed (every door, imports included).'),
    importBytes: count('Of those, bytes imported from a URL or a bucket.'),
    egressBytes: count('Bytes served by Oncely: downloads, renditions, image variants.'),
    renders: count('Image variants rendered and stored.'),
    storedAdded: count('Bytes that began to count as stored.'),
    storedReleased: count('Bytes erased.'),
    storedBytes: count("Bytes stored at the bucket's end."),
  })
  .openapi('UsageBucket');

export const Usage = z
  .object({
    tenantId: Uuid.nullable(),
    from: z.string(),
    to: z.string(),
    granularity: z.enum(['day', 'hour']),
    buckets: z.array(UsageBucket),
  })
  .openapi('Usage');
