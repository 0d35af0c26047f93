// Finding the payloads in a history or any message (pure: tests, chaos and the CLI read raw histories).
import type { Payload } from '@temporalio/common';

/**
 * The payloads a history (or any message) carries that the codec handles, by reference:
 * everything but the search attributes (Temporal indexes them in clear) and a local activity
 * marker's own bookkeeping (the SDK writes it, never sealed). For the codec's checks: the
 * tests and the chaos run's verifier read raw histories with it.
 */
export function payloadsIn(message: unknown): Payload[] {
  const found: Payload[] = [];
  const walk = (v: unknown, inMarkerDetails: boolean): void => {
    if (!v || typeof v !== 'object' || v instanceof Uint8Array) return;
    const p = v as Payload;
    if (p.metadata && typeof p.metadata === 'object' && p.metadata.encoding instanceof Uint8Array) {
      found.push(p);
      return;
    }
    for (const [k, x] of Object.entries(v)) {
      if (k === 'searchAttributes' || (inMarkerDetails && k === 'data')) continue;
      walk(x, k === 'details' && 'markerName' in v);
    }
  };
  walk(message, false);
  return found;
}
