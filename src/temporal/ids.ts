// Workflow IDs are derived, never random: the same (tenant, key) always names the same
// execution, which is what makes duplicates attach instead of starting a second run.
import { createHash } from 'node:crypto';

const MAX_WORKFLOW_ID_BYTES = 1000;

export function uploadWorkflowId(tenantId: string, key: string): string {
  const id = `upload/${tenantId}/${key}`;
  if (Buffer.byteLength(id) <= MAX_WORKFLOW_ID_BYTES) return id;
  return `upload/${tenantId}/sha256:${sha256Hex(key)}`;
}

/** The object-store folder for one key's attempts: short, path-safe, tenant-scoped. */
export function keyStoragePrefix(tenantId: string, key: string): string {
  return `tenants/${tenantId}/keys/${sha256Hex(key).slice(0, 32)}/`;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
