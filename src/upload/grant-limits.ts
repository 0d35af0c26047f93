// The upload token's limits, checked again on the bytes that arrived (a declared length or
// type is the client's word; the bytes are the truth).
import { Problem, problem } from '../errors';
import { typeAllowed, type UploadGrant } from '../tokens/grant';
import { CHECKED_TYPES } from './sniff';

/** Whether `err` is checkArrived's refusal: the bytes broke the token's limits. */
export function isLimitRefusal(err: unknown): boolean {
  return err instanceof Problem && (err.code === 'type_not_allowed' || err.code === 'payload_too_large');
}

/**
 * On the bytes that arrived: their real length, and their type as the first bytes show it.
 * Bytes recognised as a type must be an allowed type; bytes declared as a recognisable type
 * (PNG, PDF, …) but not recognised are not that type.
 */
export function checkArrived(
  grant: UploadGrant | undefined,
  arrived: { bytes: number; sniffedType: string | null; contentType: string },
): void {
  if (!grant) return;
  if (grant.maxBytes !== null && arrived.bytes > grant.maxBytes)
    throw problem('payload_too_large', `The upload token allows at most ${grant.maxBytes} bytes; ${arrived.bytes} arrived.`);
  if (!grant.allowedTypes) return;
  const actual = arrived.sniffedType ?? (CHECKED_TYPES.has(arrived.contentType.toLowerCase()) ? null : arrived.contentType);
  if (actual === null || !typeAllowed(grant.allowedTypes, actual))
    throw problem(
      'type_not_allowed',
      `The file's content is ${actual ?? `not ${arrived.contentType}`}; the upload token allows ${grant.allowedTypes.join(', ')}.`,
    );
}
