// The operators' tenant resources (POST/GET/PATCH/DELETE /admin/tenants): a tenant's creation,
// settings, view and deletion.
import { z } from '@hono/zod-openapi';
import { Uuid } from '../http/schemas';
import { TenantPlacementView, TenantResidency } from '../http/parse/storage-target';
import { ApiKeyCreated } from './schemas';

export const CreateTenant = z
  .object({
    name: z.string().trim().min(1).max(200).openapi({ example: 'Acme Photos' }),
    dedupe: z
      .enum(['off', 'sha256'])
      .optional()
      .openapi({ description: 'sha256: identical bytes under this tenant share one stored object (default off).' }),
  })
  .strict()
  .openapi('CreateTenant');

export const TenantSettings = z
  .object({
    retentionDays: z.number().int().min(1).max(36500).nullable().optional().openapi({
      description: "Days the tenant's uploads are kept before the deletion workflow erases them; null keeps them.",
      example: 30,
    }),
    imageSpecs: z.enum(['presets', 'any']).optional().openapi({
      description: '`presets`: image option strings are served only through signed URLs (strict, the default); `any`: to the API key too.',
    }),
    deleteGraceHours: z.number().int().min(0).max(720).optional().openapi({
      description:
        'Hours a deleted upload can be restored (POST /v1/uploads/{id}/restore) before it is erased; 0 (the default) erases at once.',
      example: 72,
    }),
    ...TenantResidency.shape,
  })
  .strict()
  .openapi('TenantSettings');

export const Tenant = z
  .object({
    tenantId: Uuid,
    name: z.string(),
    dedupe: z.enum(['off', 'sha256']),
    retentionDays: z.number().int().nullable(),
    imageSpecs: z.enum(['presets', 'any']),
    deleteGraceHours: z.number().int(),
    ...TenantPlacementView.shape,
    status: z.enum(['active', 'deleting', 'deleted']).openapi({
      description: '`deleting`: closed (its credentials refused, nothing new written), its uploads being erased; `deleted`: erased.',
    }),
    closedAt: z.string().nullable(),
    erasedAt: z.string().nullable(),
  })
  .openapi('Tenant');

export const TenantDeletion = z
  .object({
    tenantId: Uuid,
    status: z.enum(['deleting', 'deleted']),
    closedAt: z.string().nullable(),
    erasedAt: z.string().nullable(),
    uploadsErased: z
      .number()
      .int()
      .optional()
      .openapi({ description: 'Uploads the deletion erased (on the answer of the DELETE that saw it finish).' }),
    sessionsEnded: z.number().int().optional(),
    dataKeysDestroyed: z.number().int().optional(),
    objectsDeleted: z.number().int().optional().openapi({
      description: "Objects left under the tenant's prefix after its uploads were erased (staged copies of runs the deletion ended).",
    }),
  })
  .openapi('TenantDeletion');

export const TenantCreated = z
  .object({ tenantId: Uuid, name: z.string(), dedupe: z.enum(['off', 'sha256']), createdAt: z.string(), apiKey: ApiKeyCreated })
  .openapi('TenantCreated');
