// Byte quotas and usage as the app mounts them: the tenant's routes under /v1, the operator's
// under /admin. Reservations are made by the intake's admission (src/upload/admission.ts) and
// charged by the records transaction (src/db/queries/records.ts); SQL in
// src/db/queries/byte-quotas.ts.
import type { Pool } from '../db/pool';
import type { Wing } from '../http/wing';
import { operatorQuotaRoutes, tenantQuotaRoutes } from './routes';

export function quotaWing(deps: { pool: Pool }): Wing {
  return {
    mount: (app) => app.route('/v1', tenantQuotaRoutes(deps)),
    mountOperator: (app) => app.route('/admin', operatorQuotaRoutes(deps)),
  };
}
