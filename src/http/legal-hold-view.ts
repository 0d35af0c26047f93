// An upload's legal hold as every view of the upload shows it (GET /v1/uploads/{id}, the
// hold's own routes).
import { z } from '@hono/zod-openapi';
import type { HoldRow } from '../db/queries/legal-holds';

export const LegalHoldView = z
  .object({ reason: z.string(), placedAt: z.string().nullable(), placedBy: z.string().nullable() })
  .nullable()
  .openapi({ description: 'The hold; null once released.' });

/** The hold as the API shows it (null: not held). */
export function holdView(row: Pick<HoldRow, 'hold_reason' | 'held_at' | 'held_by'>) {
  return row.hold_reason === null ? null : { reason: row.hold_reason, placedAt: row.held_at?.toISOString() ?? null, placedBy: row.held_by };
}
