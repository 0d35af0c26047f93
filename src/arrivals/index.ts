// The one list of doors: every way an upload arrives, with what the app needs to know about
// it. The app mounts the doors from here (the routes that carry their own credential before
// the API-key check, the rest after it) and CORS allows and exposes their headers; each
// door's fingerprint route keeps a key first used at one door from being reused at another.
// A door's mode and session kind are spelled once, in src/modes.ts; what a door is, in door.ts.
import { UPLOAD_ROUTE } from '../db/queries/idempotency-keys';
import { IMPORT_ROUTE, type ArrivalMode } from '../modes';
import type { App, Door, DoorDeps } from './door';
import { DIRECT_ROUTE } from './direct/direct-uploads';
import { directObjectRoutes, directUploadRoutes } from './direct/routes';
import { FORM_ROUTE } from './form/form-post';
import { oneRequestRoutes } from './one-request/routes';
import { RUFH_PATH, RUFH_REQUEST_HEADERS, RUFH_RESPONSE_HEADERS, RUFH_ROUTE } from './rufh/protocol';
import { resumableDiscoveryRoutes, resumableUploadRoutes } from './rufh/routes';
import { TUS_REQUEST_HEADERS, TUS_RESPONSE_HEADERS, TUS_ROUTE } from './tus/protocol';
import { tusDiscoveryRoutes, tusRoutes } from './tus/routes';
import { UPPY_ROUTE } from './uppy/uppy-companion';
import { uppyCompanionRoutes, uppyEndpointRoutes } from './uppy/routes';

/** In mount order. */
export const DOORS = {
  tus: {
    fingerprintRoute: TUS_ROUTE,
    requestHeaders: TUS_REQUEST_HEADERS,
    responseHeaders: TUS_RESPONSE_HEADERS,
    sessionPrefix: '/v1/tus',
    mountPublic: (app, { config }) => app.route('/v1/tus', tusDiscoveryRoutes(config)),
    mount: (app, { tus, config, intake }) => app.route('/v1/tus', tusRoutes({ sessions: tus, config, intake })),
  },
  rufh: {
    fingerprintRoute: RUFH_ROUTE,
    requestHeaders: RUFH_REQUEST_HEADERS,
    responseHeaders: RUFH_RESPONSE_HEADERS,
    sessionPrefix: RUFH_PATH,
    mountPublic: (app, { config }) => {
      app.route('/v1/uploads', resumableDiscoveryRoutes(config));
      app.route(RUFH_PATH, resumableDiscoveryRoutes(config));
    },
    mount: (app, { rufh, config, intake }) => app.route(RUFH_PATH, resumableUploadRoutes({ sessions: rufh, config, intake })),
  },
  direct: {
    fingerprintRoute: DIRECT_ROUTE,
    requestHeaders: [],
    responseHeaders: [],
    sessionPrefix: '/v1/direct-uploads',
    mountPublic: (app, { direct }) => app.route('/v1/direct-uploads', directObjectRoutes({ direct })),
    mount: (app, { direct, config, intake }) => app.route('/v1/direct-uploads', directUploadRoutes({ direct, config, intake })),
  },
  uppy: {
    fingerprintRoute: UPPY_ROUTE,
    requestHeaders: [],
    responseHeaders: [],
    mountPublic: (app, deps) => app.route('/uppy', uppyCompanionRoutes(deps)),
    mount: (app, { uppy }) => app.route('/v1/uppy-endpoints', uppyEndpointRoutes({ uppy })),
  },
  // POST /v1/uploads: a raw body; a form post and the draft's creation are told apart there.
  upload: {
    fingerprintRoute: UPLOAD_ROUTE,
    requestHeaders: [],
    responseHeaders: [],
    mount: (app, deps) =>
      app.route('/v1/uploads', oneRequestRoutes({ ...deps, resumable: { sessions: deps.rufh, config: deps.config, intake: deps.intake } })),
  },
  form: { fingerprintRoute: FORM_ROUTE, requestHeaders: [], responseHeaders: [] },
  // Imports are a wing (src/imports/wing.ts): it mounts POST /v1/imports, the batches and Uppy's URL plugin.
  import: { fingerprintRoute: IMPORT_ROUTE, requestHeaders: [], responseHeaders: [] },
} satisfies Record<ArrivalMode, Door>;

const doors = Object.entries(DOORS) as [ArrivalMode, Door][];

/** Mounts every door's public routes, in list order. */
export function mountPublicDoors(app: App, deps: DoorDeps): void {
  for (const [, door] of doors) door.mountPublic?.(app, deps);
}

/** Mounts every door's routes behind the API-key check, in list order. */
export function mountDoors(app: App, deps: DoorDeps): void {
  for (const [, door] of doors) door.mount?.(app, deps);
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const SESSION_PATH = new RegExp(`^(?:${doors.flatMap(([, d]) => (d.sessionPrefix ? [d.sessionPrefix] : [])).join('|')})/(${UUID})(?:/|$)`);

/** The session a request path addresses (a tus PATCH, a draft append, a direct upload's completion), if any. */
export function sessionInPath(path: string): string | undefined {
  return SESSION_PATH.exec(path)?.[1];
}

/** The request and response headers of every door, each once. */
export function doorHeaders(): { request: string[]; response: string[] } {
  return {
    request: [...new Set(doors.flatMap(([, d]) => d.requestHeaders))],
    response: [...new Set(doors.flatMap(([, d]) => d.responseHeaders))],
  };
}
