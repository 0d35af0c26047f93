// How an import ends without a file: the codes its run records as the key's answer (a byte
// quota the read file would pass among them). Pure, so
// the upload workflow can tell an import's own failure from anything else.
import type { ErrorCode } from '../errors';

/** What the origin decided (or failed to do in time). */
export type ImportFailureCode = 'import_failed' | 'import_too_large' | 'import_forbidden_address' | 'import_timeout';

/**
 * Every way an import ends without its file for good: the origin's failures, the file's
 * checks after it is read, and a deletion before it committed.
 */
export const IMPORT_REFUSALS = [
  'import_canceled',
  'import_failed',
  'import_too_large',
  'import_forbidden_address',
  'import_timeout',
  'type_not_allowed',
  'checksum_mismatch',
  'byte_quota_exceeded',
] as const satisfies readonly ErrorCode[];
export type ImportRefusal = (typeof IMPORT_REFUSALS)[number];

export function isImportRefusal(type: string | undefined | null): type is ImportRefusal {
  return (IMPORT_REFUSALS as readonly string[]).includes(type ?? '');
}
