// Where an upload's derived objects live: under its rendition prefix, on the target its
// original is on (the original's address names it), so a deletion or a move finds them all.
import { addressBeside } from './address';

/** Where a rendition's companions (an HLS rung's segments) lie: a folder named after it, beside its object. */
export function companionPrefix(renditionStorageKey: string, name: string): string {
  return `${renditionStorageKey.slice(0, renditionStorageKey.lastIndexOf('/') + 1)}${name}/`;
}

/** The prefix of every rendition and variant of an upload whose original is at `originalAddress`. */
export function renditionPrefix(tenantId: string, uploadId: string, originalAddress: string): string {
  return addressBeside(originalAddress, `tenants/${tenantId}/renditions/${uploadId}/`);
}
