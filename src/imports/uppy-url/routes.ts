// Uppy's URL plugin (@uppy/url) against Oncely's companion endpoint: `url/meta` looks at the
// file through the import's own checks, `url/get` imports it under the file's
// `meta.idempotencyKey` (the same import as POST /v1/imports with that key and body) and
// answers the token of its progress socket (./progress.ts). What else Uppy sends to a
// companion (its uploader's endpoint, `headers` with the page's credential) is ignored: the
// file goes through Oncely's import, and nothing from the page is sent to the origin.
import { parseStorageTarget } from '../../http/parse/storage-target';
import { createRoute, z } from '@hono/zod-openapi';
import type { Pool } from '../../db/pool';
import { problem } from '../../errors';
import { jsonBody } from '../../http/json-body';
import { jsonRequestBody, problems, route, router } from '../../http/openapi';
import { parseIdempotencyKey } from '../../http/parse/idempotency-key';
import type { Importer } from '../importer';
import { IMPORT_REFUSALS } from '../failures';
import { nameFromUrl } from '../request';
import { FILE_NAME_PATTERN } from '../../upload/file-name';
import type { Intake } from '../../arrivals/intake';
import { callingToken } from '../../http/scopes';
import { COMPANION_IMPORTS, companionAuth, endpointOwner, type EndpointOwners } from '../../arrivals/uppy/endpoint';
import { progressToken } from './progress';

const TAG = 'Uppy (@uppy/url companion routes)';
const token = z.string().openapi({ description: 'The companion token from POST /v1/uppy-endpoints.' });

const UrlMeta = z
  .object({ url: z.string().min(1).max(8192) })
  .strict()
  .openapi('UppyUrlMeta');
/** What @uppy/tus and @uppy/aws-s3 send for a remote file; only `url` and `metadata` are used. */
const UrlGet = z
  .object({
    url: z.string().min(1).max(8192),
    fileId: z.string().max(8192).optional(),
    metadata: z.record(z.string(), z.unknown()).openapi({
      description: "The file's Uppy metadata: `idempotencyKey` is its key (required), `name` its file name.",
    }),
    protocol: z.string().max(64).optional(),
    size: z.number().nullable().optional(),
    endpoint: z.string().max(8192).optional().openapi({ description: "The uploader's endpoint (ignored)." }),
    uploadUrl: z.string().max(8192).nullable().optional(),
    headers: z
      .record(z.string(), z.string())
      .optional()
      .openapi({ description: "The uploader's headers: never sent anywhere (the file is read by Oncely's import)." }),
  })
  .strict()
  .openapi('UppyUrlGet');

const metaRoute = createRoute({
  method: 'post',
  path: '/{token}/url/meta',
  tags: [TAG],
  summary: "What the file at a URL is (Uppy's Link source asks before adding it)",
  description: 'The URL passes the import checks (address, redirects, timeouts); the file is not read.',
  request: { params: z.object({ token }), body: jsonRequestBody(UrlMeta, { url: 'https://files.example.com/cat.jpg' }) },
  responses: {
    200: {
      description: 'Its name, media type and size when the origin says them',
      content: {
        'application/json': {
          schema: z
            .object({ name: z.string(), type: z.string().nullable(), size: z.number().nullable(), statusCode: z.number() })
            .openapi('UppyUrlFile'),
        },
      },
    },
    ...problems(
      'signature_invalid',
      'unauthorized',
      'insufficient_scope',
      'body_invalid',
      'import_url_invalid',
      ...IMPORT_REFUSALS,
      'internal_error',
    ),
  },
});

const getRoute = createRoute({
  method: 'post',
  path: '/{token}/url/get',
  tags: [TAG],
  summary: 'Import the file at a URL under its `meta.idempotencyKey`; answers the token of its progress socket',
  description:
    'The socket is `GET /uppy/{token}/api/{socketToken}` (WebSocket): `progress` messages with the bytes read, then `success` with the upload ' +
    '(`response.responseText` is the upload JSON) or `error`. The same file again (a retry, a reload) is the same import.',
  request: {
    params: z.object({ token }),
    body: jsonRequestBody(UrlGet, { url: 'https://files.example.com/cat.jpg', metadata: { idempotencyKey: '…' } }),
  },
  responses: {
    200: {
      description: 'Importing (or imported)',
      content: { 'application/json': { schema: z.object({ token: z.string() }).openapi('UppyUrlToken') } },
    },
    ...problems(
      'signature_invalid',
      'unauthorized',
      'insufficient_scope',
      'body_invalid',
      'idempotency_key_required',
      'idempotency_key_invalid',
      'idempotency_key_reuse',
      'import_url_invalid',
      'import_host_not_allowed',
      'pipeline_unknown',
      'too_many_imports',
      'temporal_unavailable',
    ),
  },
});

const socketRoute = createRoute({
  method: 'get',
  path: '/{token}/api/{socketToken}',
  tags: [TAG],
  summary: "An import's progress socket, as Companion's (a WebSocket: connect with `Upgrade: websocket`)",
  description:
    'Messages: `progress` (`bytesUploaded`, `bytesTotal`) about once a second, then `success` with the upload (`response.responseText`) ' +
    "or `error`, and the socket closes. Uppy's `cancel` on it cancels the import as a DELETE of its upload would. A key naming no import " +
    'of the caller\'s answers `error` "No such import." after 30 s; a message over 4 KiB closes the socket (1009). A tenant holds at most ' +
    '`TENANT_MAX_PROGRESS_SOCKETS` per API process.',
  request: { params: z.object({ token, socketToken: z.string().openapi({ description: 'The `token` url/get answered.' }) }) },
  responses: {
    101: { description: 'Switching Protocols: the socket' },
    ...problems('signature_invalid', 'unauthorized', 'insufficient_scope', 'upgrade_required', 'too_many_progress_sockets'),
  },
});

export function uppyUrlRoutes(deps: { uppy: EndpointOwners; pool: Pool; importer: Importer; intake: Intake }) {
  const app = router();
  app.use('/:token/url/*', companionAuth(deps, COMPANION_IMPORTS));
  app.use('/:token/api/*', companionAuth(deps, COMPANION_IMPORTS));

  route(app, metaRoute, async function uppyUrlMeta(c) {
    endpointOwner(c, true);
    const { url } = await jsonBody(c, UrlMeta);
    const parsed = URL.parse(url);
    if (!parsed) throw problem('import_url_invalid', 'The import URL is not an absolute URL.');
    const file = await deps.importer.probe(url, callingToken(c)?.grant);
    return c.json({ name: nameFromUrl(parsed) ?? 'file', type: file.contentType, size: file.length, statusCode: 200 }, 200);
  });

  route(app, getRoute, async function uppyUrlGet(c) {
    endpointOwner(c, true);
    const body = await jsonBody(c, UrlGet);
    const sent = body.metadata.idempotencyKey;
    const key = parseIdempotencyKey(typeof sent === 'string' ? [sent] : undefined);
    c.set('idempotencyKey', key);
    const url = URL.parse(body.url);
    if (!url) throw problem('import_url_invalid', 'The import URL is not an absolute URL.');
    const name = typeof body.metadata.name === 'string' ? body.metadata.name : undefined;
    const fileName = name && FILE_NAME_PATTERN.test(name) ? name : undefined;
    const upload = deps.intake.declare(c, 'import', {
      key,
      contentType: 'application/octet-stream',
      typeUnknown: true,
      fileName: fileName ?? nameFromUrl(url),
      sha256: null,
      storageTarget: parseStorageTarget(body.metadata.storageTarget, 'body_invalid'),
    });
    await deps.importer.create(upload, { url: body.url, ...(fileName ? { fileName } : {}) }, 0);
    return c.json({ token: progressToken(key) }, 200);
  });

  // Upgrades are taken by the HTTP server before routing (./progress.ts); a plain GET gets here.
  route(app, socketRoute, async function uppyProgressSocket() {
    throw problem('upgrade_required', 'This is a WebSocket: connect with `Connection: Upgrade` and `Upgrade: websocket`.', {
      headers: { upgrade: 'websocket', connection: 'Upgrade' },
    });
  });

  return app;
}
