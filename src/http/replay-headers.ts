// The headers that mark an answer as a replay of the key's first one: Stripe's spelling
// and the IETF idempotency draft's, both, on every route that replays.
export const REPLAY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'idempotent-replayed': 'true',
  'idempotent-replay': 'true',
});

/** REPLAY_HEADERS when `replayed`, else nothing. */
export function replayHeaders(replayed: boolean): Record<string, string> {
  return replayed ? { ...REPLAY_HEADERS } : {};
}
