// The import door's request, its JSON body checked strictly, and the progress it answers.
import { StorageTargetName } from '../../http/parse/storage-target';
import { z } from '@hono/zod-openapi';
import { ExpiresAt, FileNameField, MediaType, Metadata, Tags } from '../../http/schemas';
import type { ImportBody } from '../request';
import { MAX_IMPORT_HEADERS, reservedHeader } from '../headers';
import { PipelineName } from '../../pipelines/catalogue';

/** An HTTP field name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;

export const CreateImport = z
  .object({
    url: z
      .string()
      .min(1)
      .max(8192)
      .openapi({ description: 'The file: an http(s) URL without credentials in it. Redirects are followed (each checked).' }),
    fileName: FileNameField.optional().openapi({
      description: "The upload's file name; absent: the URL path's last segment (when it is one).",
    }),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'sha256 must be 64 lower-case hexadecimal characters.')
      .optional()
      .openapi({ description: 'SHA-256 of the file, hex: the import fails (checksum_mismatch) when the file read is not it.' }),
    contentType: MediaType.optional().openapi({
      description: "The upload's media type; absent: the one the origin names, else the one the file's first bytes show.",
    }),
    pipeline: PipelineName.optional().openapi({ description: "The pipeline to run once it is committed; absent: the tenant's `default`." }),
    expiresAt: ExpiresAt.optional(),
    metadata: Metadata.optional(),
    tags: Tags.optional(),
    storageTarget: StorageTargetName.optional(),
    headers: z
      .record(
        z.string().regex(HEADER_NAME, 'header names are HTTP tokens'),
        z
          .string()
          .max(4096)
          .regex(/^[^\x00-\x1f\x7f]*$/, 'header values hold no control characters'),
      )
      .superRefine((headers, ctx) => {
        const names = Object.keys(headers);
        if (names.length > MAX_IMPORT_HEADERS) ctx.addIssue({ code: 'custom', message: `at most ${MAX_IMPORT_HEADERS} headers` });
        if (new Set(names.map((n) => n.toLowerCase())).size !== names.length)
          ctx.addIssue({ code: 'custom', message: 'each header once (names are case-insensitive)' });
        for (const name of names) {
          const why = reservedHeader(name);
          if (why) ctx.addIssue({ code: 'custom', message: why, path: [name] });
        }
      })
      .optional()
      .openapi({
        description:
          "Request headers for the origin (e.g. `Authorization` for a private file). Stored sealed with the secrets box, sent only to the URL's own origin (once a redirect leaves it for another scheme, host or port, the rest of the hops go without them), never shown again.",
      }),
  })
  .strict()
  .openapi('CreateImport') satisfies z.ZodType<ImportBody>;

/** An import not yet committed: its 202, and GET /v1/uploads/{id} until the commit. */
export const ImportProgress = z
  .object({
    uploadId: z.string().openapi({ format: 'uuid', description: 'The upload it becomes (GET /v1/uploads/{id} shows it throughout).' }),
    status: z.enum(['importing', 'failed']).openapi({
      description: '`importing`: being read from its origin (then committed); `failed`: it ended without a file (`error`).',
    }),
    idempotencyKey: z.string(),
    origin: z.string().openapi({
      description: 'Scheme, host and port of the URL (the rest of the URL is not shown).',
      example: 'https://files.example.com',
    }),
    tokenId: z.string().nullable(),
    bytesFetched: z.number().int().openapi({ description: 'Bytes read and stored so far (a whole part at a time).' }),
    bytesTotal: z.number().int().nullable().openapi({ description: "The file's length, once the origin declared it." }),
    createdAt: z.string().openapi({ format: 'date-time' }),
    updatedAt: z.string().openapi({ format: 'date-time' }),
    error: z
      .record(z.string(), z.unknown())
      .nullable()
      .optional()
      .openapi({ description: 'A failed import: the problem its key answers (e.g. `import_failed` with `originStatus`).' }),
  })
  .openapi('ImportProgress');
