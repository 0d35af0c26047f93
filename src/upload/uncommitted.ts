// An upload whose row is not written yet because its door takes time before the commit (an
// import reading its file from an origin). GET and DELETE /v1/uploads/{id} find it with the
// stored uploads in one lookup (findUploadOrImport) and ask the door that owns it to show or
// cancel it, so the upload routes name no door.
import type { z } from '@hono/zod-openapi';
import type { ImportRow } from '../db/queries/imports';

export interface UncommittedUploads {
  /** What GET /v1/uploads/{id} answers for one (the OpenAPI document shows it beside the upload). */
  readonly schema: z.ZodType;
  view(row: ImportRow): Promise<unknown>;
  /** `canceling`: it stops and nothing is kept; `committing`: too late, its upload is being stored. */
  cancel(row: ImportRow): Promise<'canceling' | 'committing'>;
}
