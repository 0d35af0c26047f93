// Parses the Idempotency-Key header (draft-ietf-httpapi-idempotency-key-header): a
// structured-field string ("...") is unwrapped; a bare value is taken as is. Either way
// the key is 16-255 visible ASCII characters, and exactly one value may be sent.
import { parseItem } from 'structured-headers';
import { IdempotencyKey } from '../schemas';
import { problem } from '../../errors';

/** `values` are the header's distinct field lines, as received. */
export function parseIdempotencyKey(values: readonly string[] | undefined): string {
  if (!values || values.length === 0)
    throw problem('idempotency_key_required', 'Send an Idempotency-Key header with a unique value per logical upload.');
  if (values.length > 1) throw problem('idempotency_key_invalid', 'Send exactly one Idempotency-Key header.');
  const raw = values[0]!.trim();
  if (raw === '') throw problem('idempotency_key_invalid', 'Idempotency-Key is empty.');
  let key: string;
  if (raw.startsWith('"')) {
    let item;
    try {
      item = parseItem(raw);
    } catch {
      throw problem('idempotency_key_invalid', 'Idempotency-Key is not a valid structured-field string (one quoted value, no parameters).');
    }
    if (typeof item[0] !== 'string' || item[1].size > 0)
      throw problem('idempotency_key_invalid', 'Idempotency-Key must be a single quoted string.');
    key = item[0];
  } else {
    if (raw.includes(',')) throw problem('idempotency_key_invalid', 'Idempotency-Key holds several values (a comma outside quotes).');
    key = raw;
  }
  // Syntax and length: the documented schema is the check.
  const checked = IdempotencyKey.safeParse(key);
  if (!checked.success) throw problem('idempotency_key_invalid', checked.error.issues[0]?.message);
  return checked.data;
}
