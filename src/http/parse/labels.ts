// An upload's metadata and tags as each door carries them: JSON text and a comma-separated
// list in a header, a form field, tus or Uppy metadata; JSON values in a plan's or an
// import's body. All end as one canonical UploadLabels (tags sorted, each once), so the
// same labels sent through any door fingerprint alike.
import { z } from '@hono/zod-openapi';
import { problem, type ErrorCode } from '../../errors';
import type { UploadLabels } from '../../upload/types';
import { Metadata, Tag, Tags } from '../schemas';

function check<T>(schema: z.ZodType<T>, value: unknown, field: string, code: ErrorCode): T {
  const r = schema.safeParse(value);
  if (!r.success) {
    const issue = r.error.issues[0];
    const at = issue?.path.length ? `${field}[${issue.path.join('][')}]` : field;
    throw problem(code, `${at}: ${issue?.message}`);
  }
  return r.data;
}

/** Metadata sent as JSON text (X-Metadata, a form field, tus or Uppy metadata). */
export function parseMetadataText(text: string | undefined, code: ErrorCode): Record<string, unknown> | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw problem(code, 'metadata is not valid JSON.');
  }
  return check(Metadata, value, 'metadata', code);
}

/** Tags sent as one comma-separated list (X-Tags, a form field, tus or Uppy metadata). */
export function parseTagsText(text: string | undefined, code: ErrorCode): string[] | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  return check(
    Tags,
    text.split(',').map((t) => t.trim()),
    'tags',
    code,
  );
}

/** Metadata and tags sent as JSON values (a plan's or an import's body, a PATCH). */
export function parseLabelValues(body: { metadata?: unknown; tags?: unknown }, code: ErrorCode): UploadLabels | undefined {
  return labelsOf(
    body.metadata === undefined ? undefined : check(Metadata, body.metadata, 'metadata', code),
    body.tags === undefined ? undefined : check(Tags, body.tags, 'tags', code),
  );
}

/** The canonical labels (undefined when there are none): empty metadata and no tags are no labels. */
export function labelsOf(metadata: Record<string, unknown> | undefined, tags: readonly string[] | undefined): UploadLabels | undefined {
  const sorted = [...new Set(tags ?? [])].sort();
  const hasMetadata = metadata !== undefined && Object.keys(metadata).length > 0;
  if (!hasMetadata && sorted.length === 0) return undefined;
  return { ...(hasMetadata ? { metadata } : {}), ...(sorted.length ? { tags: sorted } : {}) };
}

/** The upload list's filters on the record (src/api/schemas.ts ListUploadsQuery; the record's own answers are in src/record/). */
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
