// What a door is: its fingerprint route, the headers it reads and exposes, and how it mounts
// its routes. Apart from the list of doors (index.ts) so a door that lives in a wing can
// describe itself without importing the list.
import type { App } from '../http/wing';
import type { ServiceDeps, Services } from '../services';

/**
 * What the doors are built from: the upload services wired once (src/services.ts) and what
 * they were wired from, so a new door can build its own service in its entry.
 */
export type DoorDeps = Services & ServiceDeps;

/** The app a door mounts on (the same a wing mounts on). */
export type { App };

export interface Door {
  /** Recorded in its uploads' fingerprints: a key first used at one door is refused (422) at another. */
  fingerprintRoute: string;
  /** Request headers it reads beyond the API's own (allowed cross-origin; each is documented). */
  requestHeaders: readonly string[];
  /** Response headers a browser script may read beyond the API's own. */
  responseHeaders: readonly string[];
  /** Routes that carry their own credential or none (discovery, signed URLs, companion tokens): mounted before the API-key check. */
  mountPublic?: (app: App, deps: DoorDeps) => void;
  /** Routes behind the API-key check. */
  mount?: (app: App, deps: DoorDeps) => void;
  /** Where a session's later requests go: `{prefix}/{session id}…` (their traces continue the session's). */
  sessionPrefix?: string;
}
