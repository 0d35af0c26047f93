// Where an upload is stored, as the wire carries it: the storage target an upload or a token
// names (a header, a form field, tus or Uppy metadata, a body), the upload list's filters and
// a tenant's placement. Every door and the API read these; the storage targets wing (their
// registry and migrations) builds on them.
import { z } from '@hono/zod-openapi';
import { problem, type ErrorCode } from '../../errors';
import { Uuid } from '../schemas';

/** A target's name or residency label: short, lower-case, safe in a header, a form field and a tus metadata value. */
export const Label = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'lower-case letters, digits, ".", "_" and "-", 1 to 63 characters');

/** The target an upload names in its declaration: a registered target's name or id. */
export const StorageTargetName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,62}$|^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "a storage target's name or id")
  .openapi({ description: "A registered storage target's name or id (absent: the tenant's default).", example: 'eu-archive' });

/** The target an upload names in a header, a form field, tus or Uppy metadata, or a body (absent or empty: none). */
export function parseStorageTarget(value: unknown, code: ErrorCode): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const parsed = StorageTargetName.safeParse(typeof value === 'string' ? value.trim() : value);
  if (!parsed.success) throw problem(code, `storageTarget: ${parsed.error.issues[0]?.message}.`);
  return parsed.data;
}

/** The upload list's filters on where uploads are stored (src/api/schemas.ts ListUploadsQuery). */
export const TargetFilters = z.object({
  storageTarget: z
    .union([z.literal('default'), Uuid])
    .optional()
    .openapi({ description: "Only uploads stored in this target (its id), or `default` for the instance's store." }),
  residency: Label.optional().openapi({
    description: 'Only uploads stored in a target with this residency label (the instance store counts with STORAGE_RESIDENCY).',
    example: 'eu',
  }),
});

/** The operator's tenant setting (PATCH /admin/tenants/{id}). */
export const TenantResidency = z.object({
  residency: Label.nullable().optional().openapi({
    description:
      "The residency every upload of the tenant must be stored in (a storage target's `residency`, or STORAGE_RESIDENCY for the instance's store); an upload naming a target elsewhere is refused 422 `residency_mismatch`. The tenant's default must already have it. null: any.",
    example: 'eu',
  }),
});

/** A tenant's placement as its operator reads it. */
export const TenantPlacementView = z.object({
  defaultStorageTarget: Uuid.nullable().openapi({ description: "Where its uploads that name no target go (null: the instance's store)." }),
  residency: z.string().nullable(),
});

export const UploadStorageTarget = Uuid.nullable().openapi({
  description: "The storage target its bytes (and renditions) are in (null: the instance's store); fixed when its key was claimed.",
});

export const TokenStorageTarget = StorageTargetName.openapi({
  description: 'The storage target (name or id) every upload made with the token is stored in; an upload naming another is refused, 403.',
});
