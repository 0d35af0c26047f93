// Reading what was stored: GET /v1/uploads/{id}/content (the original), its renditions,
// POST /v1/uploads/{id}/download-urls (URLs that work without the API key), and
// GET /v1/downloads/{id} — the embedded store's signed URL, mounted before authentication
// (its signature is the credential). All answers come from one serveObject.
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Config } from '../config';
import type { Pool } from '../db/pool';
import { findUpload, findUploadById, type UploadRow } from '../db/queries/uploads';
import { listRenditions, type RenditionRow } from '../db/queries/renditions';
import type { DownloadLinks } from './download-links';
import type { Disposition } from './disposition';
import { serveObject, type Servable, type ServeRequest } from './serve';
import { countEgress } from '../db/queries/byte-quotas';
import { dependency, problem } from '../errors';
import type { ObjectStore } from '../storage/store';
import { companionPrefix } from '../storage/layout';
import type { AppEnv } from '../http/env';
import { header } from '../http/headers';
import { jsonBody } from '../http/json-body';
import { COMMON_V1_PROBLEMS, problems, route, router, jsonRequestBody } from '../http/openapi';
import { absoluteUrl } from '../http/public-url';
import { CreateDownloadUrl, DispositionQuery, DownloadUrl } from './schemas';
import { Uuid } from '../http/schemas';
import { callingToken, requires } from '../http/scopes';
import { formatParent, parentOf } from '../tokens/parent';
import { actAsSigner } from '../http/signed-urls';

const DEFAULT_URL_SECONDS = 900;

export interface DownloadDeps {
  pool: Pool;
  store: ObjectStore;
  links: DownloadLinks;
  config: Config;
}

/** The authenticated routes, under /v1/uploads. */
export function uploadContentRoutes(deps: DownloadDeps) {
  const { pool, store, links, config } = deps;
  const app = router();

  route(app, contentRoute, async function getContent(c) {
    const upload = await tenantUpload(pool, c.get('tenantId'), c.req.param('id')!, callingToken(c)?.id);
    return serveObject(
      store,
      original(upload),
      serveRequest(c, { pool, tenantId: upload.tenant_id }),
      parseDisposition(c.req.query('disposition')),
    );
  });

  route(app, renditionRoute, async function getRendition(c) {
    const upload = await tenantUpload(pool, c.get('tenantId'), c.req.param('id')!, callingToken(c)?.id);
    const rendition = await findRendition(pool, upload, c.req.param('name')!.replace(/\.m3u8$/, ''));
    return serveObject(
      store,
      renditionOf(upload, rendition),
      serveRequest(c, { pool, tenantId: upload.tenant_id }),
      parseDisposition(c.req.query('disposition')),
    );
  });

  route(app, segmentRoute, async function getSegment(c) {
    const upload = await tenantUpload(pool, c.get('tenantId'), c.req.param('id')!, callingToken(c)?.id);
    const playlist = await findRendition(pool, upload, c.req.param('name')!);
    const file = c.req.param('file')!;
    if (!/^\d{3,5}\.ts$/.test(file) || playlist.content_type !== 'application/vnd.apple.mpegurl')
      throw problem('not_found', 'No such segment.');
    // A playlist's segments are stored beside it, under its name.
    const storageKey = `${companionPrefix(playlist.storage_key, playlist.name)}${file}`;
    const head = await dependency('storage_unavailable', () => store.head(storageKey));
    if (!head) throw problem('not_found', 'No such segment.');
    const segment = {
      storageKey,
      bytes: head.bytes,
      etag: `${upload.sha256}.${playlist.name}.${file}`,
      contentType: 'video/mp2t',
      fileName: null,
      lastModified: playlist.created_at,
    };
    return serveObject(store, segment, serveRequest(c, { pool, tenantId: upload.tenant_id }), parseDisposition(c.req.query('disposition')));
  });

  route(app, downloadUrlRoute, async function createDownloadUrl(c) {
    const upload = await tenantUpload(pool, c.get('tenantId'), c.req.param('id')!);
    const body = await jsonBody(c, CreateDownloadUrl);
    const seconds = body.expiresInSeconds ?? Math.min(DEFAULT_URL_SECONDS, config.DOWNLOAD_URL_MAX_SECONDS);
    if (seconds > config.DOWNLOAD_URL_MAX_SECONDS) {
      throw problem('body_invalid', `expiresInSeconds may be at most ${config.DOWNLOAD_URL_MAX_SECONDS} (DOWNLOAD_URL_MAX_SECONDS).`);
    }
    const obj = body.rendition ? renditionOf(upload, await findRendition(pool, upload, body.rendition)) : original(upload);
    const what = {
      uploadId: upload.id,
      rendition: body.rendition,
      disposition: body.disposition ?? 'attachment',
      by: formatParent(parentOf(c.get('principal'))),
    };
    const link = await dependency('storage_unavailable', () => links.create(upload.tenant_id, what, obj, seconds));
    return c.json(
      {
        url: absoluteUrl(c, config.PUBLIC_URL, link.url),
        expiresAt: link.expiresAt.toISOString(),
        disposition: link.disposition,
      },
      201,
    );
  });

  return app;
}

/** The embedded store's signed download URLs, under /v1/downloads (no API key). */
export function signedDownloadRoutes(deps: DownloadDeps) {
  const { pool, store, links } = deps;
  const app = router();

  route(app, signedDownloadRoute, async function signedDownload(c) {
    const id = c.req.param('id')!;
    const rendition = c.req.query('rendition');
    const disposition = parseDisposition(c.req.query('disposition'));
    const upload = Uuid.safeParse(id).success ? await dependency('database_unavailable', () => findUploadById(pool, id)) : undefined;
    // An unknown id answers like a bad signature: a URL names nothing it was not signed for.
    if (!upload) throw problem('signature_invalid', 'The download URL is not one this server signed (or it was changed).');
    const by = c.req.query('by') ?? '';
    links.check(upload.tenant_id, { uploadId: id, rendition, disposition, by }, c.req.query('expires'), c.req.query('signature'));
    await actAsSigner(c, pool, upload.tenant_id, by);
    servable(upload);
    const obj = rendition ? renditionOf(upload, await findRendition(pool, upload, rendition)) : original(upload);
    return serveObject(store, obj, serveRequest(c, { pool, tenantId: upload.tenant_id }), disposition);
  });

  return app;
}

/** The tenant's upload (with `tokenId`, only one that upload token made), read by `find`. */
export async function tenantUpload<T extends UploadRow = UploadRow>(
  pool: Pool,
  tenantId: string,
  id: string,
  tokenId?: string,
  find: (db: Pool, tenantId: string, id: string) => Promise<T | undefined> = findUpload as never,
): Promise<T> {
  const upload = Uuid.safeParse(id).success ? await dependency('database_unavailable', () => find(pool, tenantId, id)) : undefined;
  if (!upload || (tokenId !== undefined && upload.token_id !== tokenId)) throw problem('not_found', 'No such upload.');
  return servable(upload);
}

/** What `servable` answers for an upload whose bytes may not be read. */
export const UNSERVABLE_PROBLEMS = ['upload_deleted', 'upload_gated', 'upload_rejected'] as const;

/**
 * The upload unless it is deleted (from its tombstone on, its bytes are gone for every
 * reader), held by its pipeline's gates, or rejected by them.
 */
export function servable<T extends UploadRow>(upload: T): T {
  if (upload.deleted_at) throw problem('upload_deleted', 'This upload was deleted.', { extra: { uploadId: upload.id } });
  if (upload.availability === 'gated')
    throw problem('upload_gated', "The upload's pipeline gates (a virus scan) have not passed yet; try again shortly.", {
      extra: { uploadId: upload.id, availability: 'gated' },
    });
  if (upload.availability === 'rejected')
    throw problem('upload_rejected', `The upload was rejected by its pipeline: ${upload.rejection_reason}.`, {
      extra: { uploadId: upload.id, availability: 'rejected', reason: upload.rejection_reason },
    });
  return upload;
}

async function findRendition(pool: Pool, upload: UploadRow, name: string): Promise<RenditionRow> {
  const rendition = (await dependency('database_unavailable', () => listRenditions(pool, upload.id))).find((r) => r.name === name);
  if (!rendition) throw problem('not_found', 'No such rendition.');
  return rendition;
}

function original(u: UploadRow): Servable {
  return {
    storageKey: u.storage_key,
    bytes: Number(u.bytes),
    etag: u.sha256,
    contentType: u.content_type,
    fileName: u.file_name,
    lastModified: u.created_at,
  };
}

/** A rendition is written once per (upload, name), so the upload's SHA-256 and the name identify its bytes. */
function renditionOf(u: UploadRow, r: RenditionRow): Servable {
  const base = u.file_name?.replace(/\.[^.]*$/, '');
  const extension = r.content_type.split('/')[1]?.split('+')[0];
  return {
    storageKey: r.storage_key,
    bytes: Number(r.bytes),
    etag: `${u.sha256}.${r.name}`,
    contentType: r.content_type,
    fileName: base ? `${base}.${r.name}.${extension}` : null,
    lastModified: r.created_at,
  };
}

/** The request's headers that shape the answer; what it sends counts as the tenant's egress. */
export function serveRequest(c: Context<AppEnv>, egress: { pool: Pool; tenantId: string }): ServeRequest {
  return {
    method: c.req.method,
    range: header(c, 'range'),
    ifRange: header(c, 'if-range'),
    ifNoneMatch: header(c, 'if-none-match'),
    sent: (bytes) => {
      // Usage only: a lost count must not fail a download that was served.
      if (bytes > 0) countEgress(egress.pool, egress.tenantId, bytes).catch(() => {});
    },
  };
}

function parseDisposition(value: string | undefined): Disposition {
  if (value === undefined) return 'attachment';
  const r = DispositionQuery.safeParse(value);
  if (!r.success) throw problem('query_invalid', r.error.issues[0]?.message);
  return r.data;
}

const binary = { schema: { type: 'string' as const, format: 'binary' } };
const contentHeaders = {
  ETag: { description: 'The SHA-256 of the bytes, quoted (strong).', schema: { type: 'string' as const } },
  'Content-Disposition': { description: 'RFC 6266, with `filename*` for names beyond ASCII.', schema: { type: 'string' as const } },
  'Accept-Ranges': { description: '`bytes`', schema: { type: 'string' as const } },
};
export const contentRequest = {
  headers: z.object({
    range: z
      .string()
      .optional()
      .openapi({ description: 'One byte range (`bytes=0-1023`, `bytes=1024-`, `bytes=-500`); several are answered whole.' }),
    'if-range': z.string().optional().openapi({ description: 'The ETag the client holds: the range is served only if it still matches.' }),
    'if-none-match': z.string().optional().openapi({ description: 'ETags the client holds: 304 when one matches.' }),
  }),
  query: z.object({ disposition: DispositionQuery.optional() }),
};
export const contentResponses = (what: string) => ({
  200: { description: what, headers: contentHeaders, content: { 'application/octet-stream': binary } },
  206: {
    description: 'The requested range (Content-Range says which).',
    headers: contentHeaders,
    content: { 'application/octet-stream': binary },
  },
  304: { description: 'Not modified: the If-None-Match ETag still matches.' },
});

/** An authenticated GET of stored bytes under /v1/uploads, served by serveObject. */
function storedBytesRoute(path: string, params: z.ZodObject, summary: string, what: string) {
  return createRoute({
    method: 'get',
    path,
    tags: ['uploads'],
    summary,
    description:
      'Streams the stored object. Served with `X-Content-Type-Options: nosniff`; scripts and markup (HTML, SVG, XML, JavaScript) ' +
      'are always attachments with `Content-Security-Policy: sandbox`. HEAD answers the headers alone.',
    security: requires('uploads:read', { uploadToken: true }),
    request: { params, ...contentRequest },
    responses: {
      ...contentResponses(what),
      ...problems(
        ...COMMON_V1_PROBLEMS,
        'not_found',
        ...UNSERVABLE_PROBLEMS,
        'query_invalid',
        'range_not_satisfiable',
        'storage_unavailable',
      ),
    },
  });
}

const contentRoute = storedBytesRoute(
  '/{id}/content',
  z.object({ id: Uuid }),
  "The upload's original bytes (Range, ETag, Content-Disposition)",
  'The whole file, with its media type.',
);

const renditionRoute = storedBytesRoute(
  '/{id}/renditions/{name}',
  z.object({
    id: Uuid,
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,62}(\.m3u8)?$/)
      .openapi({ example: 'thumbnail', description: 'A playlist may be named with `.m3u8`, as its master playlist refers to it.' }),
  }),
  "One rendition's bytes (the built-in thumbnail, display, poster, audio, or a pipeline's own names), served like the original",
  'The rendition, with its media type.',
);

const segmentRoute = storedBytesRoute(
  '/{id}/renditions/{name}/{file}',
  z.object({
    id: Uuid,
    name: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/),
    file: z
      .string()
      .regex(/^\d{3,5}\.ts$/)
      .openapi({ example: '000.ts' }),
  }),
  "A segment of an HLS rendition's playlist (the playlist's relative URLs point here)",
  'The segment (video/mp2t).',
);

const downloadUrlRoute = createRoute({
  method: 'post',
  path: '/{id}/download-urls',
  tags: ['uploads'],
  summary: 'A URL that downloads the upload (or a rendition) without the API key until it expires',
  description:
    'On S3 a presigned GetObject with the Content-Disposition and Content-Type in its signature; on the embedded store a URL of this API ' +
    '(`GET /v1/downloads/{id}`) signed with SECRETS_KEY. Neither lets the client change what it names. Each call signs a fresh URL and ' +
    'stores nothing, so it needs no Idempotency-Key. A presigned S3 URL cannot be revoked: it works until it expires or the upload is deleted.',
  security: requires('uploads:read'),
  request: {
    params: z.object({ id: Uuid }),
    body: jsonRequestBody(CreateDownloadUrl, { expiresInSeconds: 900, disposition: 'attachment' }),
  },
  responses: {
    201: { description: 'The URL', content: { 'application/json': { schema: DownloadUrl } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', ...UNSERVABLE_PROBLEMS, 'body_invalid', 'payload_too_large', 'storage_unavailable'),
  },
});

const signedDownloadRoute = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['uploads'],
  summary: "The embedded store's signed download URL (no API key: the signature is the credential)",
  request: {
    params: z.object({ id: Uuid }),
    headers: contentRequest.headers,
    query: z.object({
      rendition: z.string().optional(),
      disposition: DispositionQuery,
      by: z.string().openapi({ description: 'The API key that asked for the URL: the URL serves while that key may read uploads.' }),
      expires: z.string(),
      signature: z.string(),
    }),
  },
  responses: {
    ...contentResponses('The file (or rendition) the URL was signed for.'),
    ...problems(
      'signature_invalid',
      'unauthorized',
      'insufficient_scope',
      'not_found',
      ...UNSERVABLE_PROBLEMS,
      'query_invalid',
      'range_not_satisfiable',
      'database_unavailable',
      'storage_unavailable',
    ),
  },
});
