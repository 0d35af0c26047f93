// When and how long to wait before sending an upload again. Pure and platform-neutral
// (Node and browsers): the same key is reused on every attempt; only outcomes whose
// result is unknown or transient are retried.

/** Statuses worth retrying: the request may not have been processed, or will succeed later. */
const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 409, 425, 429, 500, 502, 503, 504]);

export function isRetryableStatus(status: number): boolean {
  return RETRYABLE_STATUSES.has(status);
}

export interface BackoffOptions {
  baseMs: number;
  capMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 500, capMs: 30_000 };

/** "Full jitter": uniform in [0, min(cap, base · 2^attempt)). `attempt` counts from 0. */
export function backoffDelayMs(attempt: number, opts: BackoffOptions = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const ceiling = Math.min(opts.capMs, opts.baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

/** Retry-After as delta-seconds or an HTTP date, in ms; undefined when absent or invalid. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The wait before the next attempt: the server's Retry-After wins over our own backoff. */
export function nextDelayMs(
  attempt: number,
  retryAfter: string | null | undefined,
  opts: BackoffOptions = DEFAULT_BACKOFF,
  random?: () => number,
): number {
  return parseRetryAfter(retryAfter) ?? backoffDelayMs(attempt, opts, random);
}
