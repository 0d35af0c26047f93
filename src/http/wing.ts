// What a wing is to the app: a capability's own routes, mounted at its own paths in the
// app's three places (before the API-key check, behind it, behind the operator token), and
// what else of the HTTP server it answers. Apart from the list of wings (src/api/wings.ts)
// so a wing can describe itself without importing the list; a door is described the same
// way in src/arrivals/door.ts.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { UncommittedUploads } from '../upload/uncommitted';
import type { AppEnv } from './env';

export type App = OpenAPIHono<AppEnv>;

export interface Wing {
  /** Routes that carry their own credential or none (signed URLs, the console's session): before the API-key check. */
  mountPublic?: (app: App) => void;
  /** Routes behind the API-key check. */
  mount?: (app: App) => void;
  /** Routes under /admin, behind the operator token. */
  mountOperator?: (app: App) => void;
  /** A WebSocket upgrade it answers: true when it took the socket. */
  upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;
  /** Called as the API stops (its listener then drains). */
  close?: () => void;
  /** Uploads it holds before their commit, which GET and DELETE /v1/uploads/{id} show and cancel (the import wing's). */
  uncommitted?: UncommittedUploads;
}

/** The one wing's uploads held before their commit: none or two is a wiring mistake, refused as the app is built. */
export function uncommittedOf(wings: readonly Wing[]): UncommittedUploads {
  const held = wings.flatMap((w) => (w.uncommitted ? [w.uncommitted] : []));
  if (held.length !== 1)
    throw new Error(`${held.length} wings hold uploads before their commit: GET and DELETE /v1/uploads/{id} need exactly one`);
  return held[0]!;
}
