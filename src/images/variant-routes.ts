// Image variants on request. GET /v1/uploads/{id}/images/{spec}: a variant of
// an image upload, by preset name or by option string (`w_400,h_300,fit_cover,f_webp`),
// rendered once per (upload, canonical spec) and then streamed from the store. Option
// strings are served to the API key only when the tenant allows them (`imageSpecs: any`).
import { createHash } from 'node:crypto';
import { createRoute, z } from '@hono/zod-openapi';
import type { Pool } from '../db/pool';
import { findImageSource, latestImagePreset, pageImageVariants } from './queries';
import { findUploadById, type UploadRow } from '../db/queries/uploads';
import { serveObject, type Servable } from '../downloads/serve';
import { dependency, problem } from '../errors';
import { header } from '../http/headers';
import { jsonBody } from '../http/json-body';
import { COMMON_V1_PROBLEMS, jsonRequestBody, problems, route, router } from '../http/openapi';
import { NextCursor, PageQuery, Uuid } from '../http/schemas';
import { parseQuery } from '../http/list-query';
import { callingToken, requires } from '../http/scopes';
import { boxCost, canonicalSpec, isOptionString, MAX_SPEC_LENGTH, parseSpec, specText, type CanonicalSpec, type ParsedSpec } from './spec';
import type { ImageVariants, StoredVariant } from './variants';
import { NAME } from '../pipelines/catalogue';
import { mediaKind } from '../pipelines/steps';
import type { ObjectStore } from '../storage/store';
import type { SecretBox } from '../secret-box';
import type { AppEnv } from '../http/env';
import type { Context } from 'hono';
import { absoluteUrl } from '../http/public-url';
import { checkImageUrl, signImageUrl } from './image-links';
import { formatParent, parentOf } from '../tokens/parent';
import { actAsSigner } from '../http/signed-urls';
import { parsedSpec, SPEC_DESCRIPTION } from './preset-routes';
import { contentRequest, contentResponses, servable, serveRequest, tenantUpload, UNSERVABLE_PROBLEMS } from '../downloads/routes';

/** What serving a variant may answer besides the upload's own state (signed or not). */
const RENDER_PROBLEMS = [
  'not_an_image',
  'too_many_image_variants',
  'too_many_renders',
  'byte_quota_exceeded',
  'image_unrenderable',
  'image_render_failed',
  'range_not_satisfiable',
  'storage_unavailable',
  'temporal_unavailable',
] as const;

const imageRoute = createRoute({
  method: 'get',
  path: '/{id}/images/{spec}',
  tags: ['images'],
  summary: 'A variant of an image upload, by preset name or option string, rendered once and then served from the store',
  description:
    `\`{spec}\` is a preset's name or an option string. ${SPEC_DESCRIPTION} An option string needs the tenant's \`imageSpecs: any\` ` +
    '(else 403 `transform_not_allowed`: use a preset or a signed URL). The first request for a variant renders it (every replica ' +
    'attaches to the one render); later ones stream it. `f_auto` answers `Vary: Accept`.',
  security: requires('uploads:read', { uploadToken: true }),
  request: {
    params: z.object({ id: Uuid, spec: z.string().openapi({ example: 'w_400,h_300,fit_cover,f_webp' }) }),
    headers: contentRequest.headers,
  },
  responses: {
    ...contentResponses('The variant, with its media type.'),
    ...problems(
      ...COMMON_V1_PROBLEMS,
      'not_found',
      ...UNSERVABLE_PROBLEMS,
      'image_spec_invalid',
      'transform_not_allowed',
      ...RENDER_PROBLEMS,
    ),
  },
});

const StoredImageVariant = z
  .object({
    spec: z
      .string()
      .openapi({ description: 'Its spec as an option string (a preset resolved), as it was rendered.', example: 'w_400,f_webp' }),
    contentType: z.string(),
    bytes: z.number().int(),
    width: z.number().int(),
    height: z.number().int(),
    createdAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('StoredImageVariant');

const listVariantsRoute = createRoute({
  method: 'get',
  path: '/{id}/images',
  tags: ['images'],
  summary: "An image upload's stored variants, in spec order, a page at a time",
  description:
    'Each variant rendered so far (by a preset, an option string or a signed URL), with its size and dimensions; fetch one by its spec ' +
    '(GET …/images/{spec}, or a signed URL from POST …/image-urls where option strings need one). They count against the tenant’s stored bytes.',
  security: requires('uploads:read', { uploadToken: true }),
  request: { params: z.object({ id: Uuid }), query: PageQuery },
  responses: {
    200: {
      description: 'One page',
      content: {
        'application/json': {
          schema: z.object({ items: z.array(StoredImageVariant), nextCursor: NextCursor }).openapi('StoredImageVariantList'),
        },
      },
    },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', ...UNSERVABLE_PROBLEMS, 'not_an_image', 'query_invalid'),
  },
});

export interface ImageDeps {
  pool: Pool;
  store: ObjectStore;
  images: ImageVariants;
  box: SecretBox;
  publicUrl: string | undefined;
  /** DOWNLOAD_URL_MAX_SECONDS: the longest a signed image URL may last. */
  maxUrlSeconds: number;
  /** IMAGE_MAX_RENDER_COST: a box that would cost more to render is refused before any work. */
  maxRenderCost: number;
}

const DEFAULT_URL_SECONDS = 900;

const CreateImageUrl = z
  .object({
    spec: z.string().min(1).max(MAX_SPEC_LENGTH).openapi({ description: "A preset's name (its latest version) or an option string." }),
    expiresInSeconds: z
      .number()
      .int()
      .min(1)
      .optional()
      .openapi({ description: 'How long the URL works (default 900 s, at most DOWNLOAD_URL_MAX_SECONDS).', example: 86400 }),
  })
  .strict()
  .openapi('CreateImageUrl');

const ImageUrl = z
  .object({
    url: z.string().openapi({ description: 'Fetch it with GET, without the API key; its answers may be cached publicly (immutable).' }),
    expiresAt: z.string(),
    spec: z.string().openapi({ description: 'The spec the URL names, as an option string (a preset is resolved when signing).' }),
  })
  .openapi('ImageUrl');

const imageUrlRoute = createRoute({
  method: 'post',
  path: '/{id}/image-urls',
  tags: ['images'],
  summary: 'A URL that serves a variant without the API key until it expires (any spec, whatever the tenant allows unsigned)',
  description:
    'An HMAC (SECRETS_KEY) over the tenant, the upload, the spec and the expiry, answered by `GET /v1/images/{id}/{spec}` on both ' +
    'stores with `Cache-Control: public, max-age=31536000, immutable` (and `Vary: Accept` for `f_auto`). Each call signs a fresh URL ' +
    'and stores nothing, so it needs no Idempotency-Key. After the upload is deleted the URL answers 410.',
  security: requires('uploads:read'),
  request: {
    params: z.object({ id: Uuid }),
    body: jsonRequestBody(CreateImageUrl, { spec: 'w_400,h_300,fit_cover,f_auto', expiresInSeconds: 86400 }),
  },
  responses: {
    201: { description: 'The URL', content: { 'application/json': { schema: ImageUrl } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', ...UNSERVABLE_PROBLEMS, 'not_an_image', 'body_invalid', 'payload_too_large'),
  },
});

const signedImageRoute = createRoute({
  method: 'get',
  path: '/{id}/{spec}',
  tags: ['images'],
  summary: 'A variant through a signed image URL (no API key): rendered once, then served from the store',
  request: {
    params: z.object({ id: z.string(), spec: z.string() }),
    query: z.object({
      by: z
        .string()
        .optional()
        .openapi({ description: 'The API key that asked for the URL: the URL serves while that key may read uploads.' }),
      expires: z.string().optional(),
      signature: z.string().optional(),
    }),
    headers: contentRequest.headers,
  },
  responses: {
    ...contentResponses('The variant, with its media type.'),
    ...problems(
      'signature_invalid',
      'unauthorized',
      'insufficient_scope',
      ...UNSERVABLE_PROBLEMS,
      ...RENDER_PROBLEMS,
      'database_unavailable',
      'internal_error',
    ),
  },
});

/** The authenticated variant routes, under /v1/uploads. */
export function uploadImageRoutes(deps: ImageDeps) {
  const { pool } = deps;

  const app = router();

  route(app, imageRoute, async function getImageVariant(c) {
    const tenantId = c.get('tenantId');
    const upload = imageUpload(await tenantUpload(pool, tenantId, c.req.param('id')!, callingToken(c)?.id, findImageSource));
    const asked = c.req.param('spec')!;
    // Parsed first: a spec no URL could render is 400 naming the option, whatever the tenant allows.
    const spec = await resolveSpec(pool, tenantId, asked);
    if (isOptionString(asked) && upload.image_specs !== 'any')
      throw problem(
        'transform_not_allowed',
        'Option strings are served only through signed URLs (the tenant\'s imageSpecs is "presets"): name a preset, or ask POST /v1/uploads/{id}/image-urls.',
      );
    return serveVariant(c, deps, upload, spec, 'private');
  });

  route(app, listVariantsRoute, async function listImageVariants(c) {
    const upload = imageUpload(await tenantUpload(pool, c.get('tenantId'), c.req.param('id')!, callingToken(c)?.id));
    const q = parseQuery(PageQuery, c.req.query());
    const limit = q.limit ?? 50;
    const after = q.cursor === undefined ? undefined : Buffer.from(q.cursor, 'base64url').toString();
    const rows = await dependency('database_unavailable', () => pageImageVariants(pool, upload.id, after, limit + 1));
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return c.json(
      {
        items: page.map((v) => ({
          spec: v.spec,
          contentType: v.content_type,
          bytes: Number(v.bytes),
          width: v.width,
          height: v.height,
          createdAt: v.created_at.toISOString(),
        })),
        nextCursor: rows.length > limit && last ? Buffer.from(last.spec).toString('base64url') : null,
      },
      200,
      { 'cache-control': 'no-store' },
    );
  });

  route(app, imageUrlRoute, async function createImageUrl(c) {
    const tenantId = c.get('tenantId');
    const upload = imageUpload(await tenantUpload(pool, tenantId, c.req.param('id')!));
    const body = await jsonBody(c, CreateImageUrl);
    const seconds = body.expiresInSeconds ?? Math.min(DEFAULT_URL_SECONDS, deps.maxUrlSeconds);
    if (seconds > deps.maxUrlSeconds)
      throw problem('body_invalid', `expiresInSeconds may be at most ${deps.maxUrlSeconds} (DOWNLOAD_URL_MAX_SECONDS).`);
    const resolved = await resolveSpec(pool, tenantId, body.spec, 'body_invalid');
    affordable(canonicalSpec(resolved, upload.content_type, undefined), deps.maxRenderCost, 'body_invalid');
    const spec = specText(resolved);
    const link = signImageUrl(deps.box, tenantId, upload.id, spec, formatParent(parentOf(c.get('principal'))), seconds);
    return c.json({ url: absoluteUrl(c, deps.publicUrl, link.url), expiresAt: link.expiresAt.toISOString(), spec }, 201);
  });

  return app;
}

/** Signed image URLs, under /v1/images: the signature is the credential (mounted before the API-key check). */
export function signedImageRoutes(deps: ImageDeps) {
  const { pool } = deps;
  const app = router();

  route(app, signedImageRoute, async function signedImage(c) {
    const id = c.req.param('id')!;
    const spec = c.req.param('spec')!;
    const found = Uuid.safeParse(id).success ? await dependency('database_unavailable', () => findUploadById(pool, id)) : undefined;
    // An unknown id answers like a bad signature: a URL names nothing it was not signed for.
    if (!found) throw problem('signature_invalid', 'The image URL is not one this server signed (or it was changed).');
    const by = c.req.query('by') ?? '';
    checkImageUrl(deps.box, found.tenant_id, id, spec, { by, expires: c.req.query('expires'), signature: c.req.query('signature') });
    await actAsSigner(c, pool, found.tenant_id, by);
    return serveVariant(c, deps, imageUpload(servable(found)), parseSpec(spec), 'public');
  });

  return app;
}

/** A preset's spec (its latest version) or an option string, parsed. */
async function resolveSpec(
  pool: Pool,
  tenantId: string,
  asked: string,
  code: 'body_invalid' | 'image_spec_invalid' = 'image_spec_invalid',
): Promise<ParsedSpec> {
  if (isOptionString(asked)) return parsedSpec(asked, code);
  const preset = NAME.test(asked) ? await dependency('database_unavailable', () => latestImagePreset(pool, tenantId, asked)) : undefined;
  if (!preset) throw problem('not_found', `No image preset named ${asked}.`);
  return parseSpec(preset.spec);
}

/**
 * The variant, rendered first when cold. A signed URL's answer names immutable bytes (the
 * URL fixes the spec; the upload's bytes never change): any cache may keep it for a year.
 * The API key's answers stay private.
 */
async function serveVariant(c: Context<AppEnv>, deps: ImageDeps, upload: UploadRow, spec: ParsedSpec, caching: 'public' | 'private') {
  const canonical = affordable(canonicalSpec(spec, upload.content_type, header(c, 'accept')), deps.maxRenderCost);
  const variant = await deps.images.variant(upload, canonical);
  const res = await serveObject(
    deps.store,
    variantOf(upload, variant),
    serveRequest(c, { pool: deps.pool, tenantId: upload.tenant_id }),
    'inline',
  );
  if (caching === 'public') res.headers.set('cache-control', 'public, max-age=31536000, immutable');
  if (canonical.negotiated) res.headers.set('vary', 'Accept');
  return res;
}

/** The spec, unless the box it fills could cost more to render than IMAGE_MAX_RENDER_COST (400, before any work). */
function affordable(
  spec: CanonicalSpec,
  maxCost: number,
  code: 'image_spec_invalid' | 'body_invalid' = 'image_spec_invalid',
): CanonicalSpec {
  const cost = boxCost(spec);
  if (cost !== undefined && cost > maxCost)
    throw problem(
      code,
      `A ${spec.width}×${spec.height} ${spec.format} variant would cost ${cost.toFixed(1)} megapixels of JPEG to render, more than the limit of ${maxCost} (IMAGE_MAX_RENDER_COST): ask for a smaller box or a cheaper format.`,
    );
  return spec;
}

/** The upload, when it is a picture the variants are made from. */
function imageUpload<T extends UploadRow>(upload: T): T {
  if (mediaKind(upload.content_type) !== 'image')
    throw problem(
      'not_an_image',
      `The upload is ${upload.content_type}; variants are made of JPEG, PNG, WebP, GIF, AVIF and TIFF pictures.`,
    );
  return upload;
}

/** A variant is written once per (upload, canonical spec): the upload's SHA-256 and the spec identify its bytes. */
function variantOf(u: UploadRow, v: StoredVariant): Servable {
  return {
    storageKey: v.storage_key,
    bytes: Number(v.bytes),
    // The spec's commas would split an If-None-Match list: it goes in hashed.
    etag: `${u.sha256}.${createHash('sha256').update(v.spec).digest('hex').slice(0, 16)}`,
    contentType: v.content_type,
    fileName: null,
    // Derived from bytes that never change: the same date whichever request made the variant.
    lastModified: u.created_at,
  };
}
