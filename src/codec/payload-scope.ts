// Which data key seals a payload, decided by the workflow that owns it (the SDK's
// serialization context): what is personal (an upload run's input holds the file name, the
// upload token's subject and metadata, an import's sealed headers; its downstream, render and
// re-processing runs carry the name on) goes under a key the upload's erasure destroys; a
// deletion run's payloads under its tenant's, which outlives the upload; everything else
// under the deployment's. Pure: workflow IDs are derived (names.ts, ids.ts), never random.
import type { SerializationContext } from '@temporalio/common';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const UPLOAD_RUN = new RegExp(`^upload/(${UUID})/`);
const UPLOAD_OWNED = new RegExp(`^(?:downstream|reprocess|image)/(${UUID})(?:/|$)`);
/** Runs of one tenant named by a row of theirs: the row says which tenant. */
const TENANT_RUNS: [RegExp, TenantRow][] = [
  [new RegExp(`^delete/(${UUID})$`), 'upload'],
  [/^redeliver\/([^/]+)\/[^/]+$/, 'event'],
  [new RegExp(`^recover/(${UUID})/`), 'endpoint'],
  [new RegExp(`^reprocess-job/(${UUID})$`), 'job'],
  [new RegExp(`^import-batch/(${UUID})$`), 'batch'],
];

/** The table row a tenant's run is about (src/db/queries/payload-keys.ts reads its tenant). */
export type TenantRow = 'upload' | 'event' | 'endpoint' | 'job' | 'batch';

export type PayloadOwner =
  /** An upload run (`upload/{tenant}/{key}`): its own key, destroyed when its upload is erased. */
  | { scope: string; tenantId: string }
  /** One upload's other runs: the upload's key, destroyed with it. */
  | { scope: string; uploadId: string }
  /** A tenant's run: the tenant's key, the tenant read from the row the run is about. */
  | { tenantOf: { row: TenantRow; id: string } }
  | { scope: 'deployment' };

export const scopes = {
  run: (workflowId: string) => `run:${workflowId}`,
  upload: (uploadId: string) => `upload:${uploadId}`,
  tenant: (tenantId: string) => `tenant:${tenantId}`,
  deployment: 'deployment',
} as const;

/** The scopes an upload's erasure destroys: its run's and its own. */
export function uploadScopes(uploadId: string, uploadWorkflowId: string | null): string[] {
  return uploadWorkflowId ? [scopes.upload(uploadId), scopes.run(uploadWorkflowId)] : [scopes.upload(uploadId)];
}

export function payloadOwner(context: SerializationContext | undefined): PayloadOwner {
  const workflowId = context?.workflowId;
  if (!workflowId) return { scope: scopes.deployment };
  let m = UPLOAD_RUN.exec(workflowId);
  if (m) return { scope: scopes.run(workflowId), tenantId: m[1]! };
  m = UPLOAD_OWNED.exec(workflowId);
  if (m) return { scope: scopes.upload(m[1]!), uploadId: m[1]! };
  for (const [pattern, row] of TENANT_RUNS) {
    m = pattern.exec(workflowId);
    if (m) return { tenantOf: { row, id: m[1]! } };
  }
  return { scope: scopes.deployment };
}
