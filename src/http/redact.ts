// Secrets that an answer shows once (a new API key, a webhook or pipeline signing secret, an
// upload token) are replaced wherever a stored answer is shown to anyone but a replay of the
// request that created it. The schemas mark each such field with `shownOnce()`; the test in
// test/unit/redact.test.ts holds this list and those marks to each other.
import { z } from '@hono/zod-openapi';

/** Names of answer fields that carry a secret shown once, at any depth. */
export const SECRET_FIELDS: ReadonlySet<string> = new Set(['key', 'secret', 'signingSecret', 'token']);
export const REDACTED = '[redacted]';
/** The OpenAPI extension that marks a secret-bearing answer field. */
export const SHOWN_ONCE = 'x-shown-once';

/** A string answer field holding a secret shown once (its name must be in SECRET_FIELDS). */
export function shownOnce(meta: { description: string; example?: string }) {
  return z.string().openapi({ ...meta, [SHOWN_ONCE]: true });
}

export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, SECRET_FIELDS.has(k) && typeof v === 'string' ? REDACTED : redactSecrets(v)]),
  );
}
