// Secrets that an answer shows once (a new API key's token, a webhook signing secret) are
// replaced when the answer is shown anywhere but a replay of the request that created it.

/** Names of answer fields that carry a secret, at any depth (see the *Created schemas). */
const SECRET_FIELDS = new Set(['key', 'secret', 'token']);
export const REDACTED = '[redacted]';

export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, SECRET_FIELDS.has(k) && typeof v === 'string' ? REDACTED : redactSecrets(v)]),
  );
}
