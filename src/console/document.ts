// The console's routes in /openapi.json (tag `console`): each page and action with its summary.
// A route without a summary here stops the app from starting, so the document cannot lag.
import { z } from '@hono/zod-openapi';
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Env } from 'hono';

const SUMMARIES: Record<string, string> = {
  'GET /assets/console.css': "The console's stylesheet",
  'GET /assets/console.js': "The console's one script (Turbo: page changes, forms over fetch, live refresh)",
  'GET /sign-in': 'The sign-in page: an API key (or ADMIN_TOKEN) for a session cookie',
  'POST /sign-in':
    'Signs in: the key is checked and a session cookie (HttpOnly, SameSite=Strict) set; 401 with the page again when not valid',
  'POST /sign-out': 'Ends this session',
  'GET /session': "This session's CSRF token and scopes, for the upload pages (same origin only)",
  'POST /upload-tokens': "Mints an upload token for the upload pages as the session's key (X-CSRF-Token)",
  'GET /': 'The console: to the uploads (a tenant) or the sessions (the operator)',
  'GET /uploads': "The tenant's uploads: filters, search by file name or key prefix, uploads per hour",
  'GET /uploads/{id}': "An upload's page: record, key, steps, renditions, events with every delivery attempt, its run",
  'GET /uploads/{id}/thumbnail': "An image upload's thumbnail rendition",
  'GET /uploads/{id}/renditions/{name}': "One of an upload's renditions",
  'GET /uploads/{id}/content': "The upload's bytes",
  'GET /uploads/{id}/live': "Server-sent events that refresh an upload's page while it changes (processing, erasure)",
  'POST /uploads/{id}/delete': 'Deletes the upload (once per drawn form)',
  'POST /uploads/{id}/reprocess': "Re-processes the upload with its pipeline's latest version (once per drawn form)",
  'GET /events': 'The event log, failed deliveries first, with the endpoints and their health',
  'GET /events/live': 'Server-sent events that refresh the event log when an event arrives',
  'GET /events/{id}': "An event's page: each delivery and every attempt",
  'POST /events/{id}/redeliver': 'Redelivers the event to the endpoints it was addressed to (once per drawn form)',
  'POST /endpoints/{id}/recover': 'Redelivers every event of the last day that failed for the endpoint (once per drawn form)',
  'GET /credentials': "The tenant's API keys",
  'POST /api-keys': 'Creates an API key (shown once)',
  'POST /api-keys/{id}/revoke': 'Revokes an API key (its console sessions end with it)',
  'GET /sessions': 'Console sessions: every one with keys:manage, else those of this key',
  'POST /sessions/{id}/revoke': 'Revokes a console session',
};

const ANSWERS = {
  GET: {
    200: { description: 'The page (text/html), or what it serves', content: { 'text/html': { schema: { type: 'string' as const } } } },
  },
  POST: {
    303: { description: 'Done: on to the page that shows it' },
    403: { description: "The form's CSRF token is not this session's, or the key lacks the scope" },
  },
};

/** Registers every route `app` serves in its OpenAPI registry. */

export function documentConsole<E extends Env>(app: OpenAPIHono<E>): void {
  for (const r of app.routes) {
    if (r.method !== 'GET' && r.method !== 'POST') continue;
    const path = r.path.replaceAll(/:(\w+)/g, '{$1}');
    const summary = SUMMARIES[`${r.method} ${path}`];
    if (!summary) throw new Error(`console route ${r.method} ${path} has no summary in src/console/document.ts`);
    const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    app.openAPIRegistry.registerPath({
      method: r.method === 'GET' ? 'get' : 'post',
      path,
      tags: ['console'],
      summary,
      ...(params.length ? { request: { params: z.object(Object.fromEntries(params.map((p) => [p, z.string()]))) } } : {}),
      responses: ANSWERS[r.method],
    });
  }
}
