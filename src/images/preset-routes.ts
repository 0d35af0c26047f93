// Image presets (/v1/image-presets): a tenant's named specs, each name's versions immutable
// (a new spec is a new version, the same spec again answers the latest version).
import { createRoute, z } from '@hono/zod-openapi';
import type { Pool } from '../db/pool';
import { declareImagePreset, latestImagePreset, pageImagePresets, type ImagePresetRow } from './queries';
import { dependency, problem } from '../errors';
import { jsonBody } from '../http/json-body';
import { COMMON_V1_PROBLEMS, IDEMPOTENT_PROBLEMS, createdResponse, idempotentJsonRequest, problems, route, router } from '../http/openapi';
import { NextCursor, PageQuery } from '../http/schemas';
import { requires } from '../http/scopes';
import { idempotentRoute, type IdempotentRouteOptions } from '../http/idempotent-route';
import { encodeNameCursor, pageOf, parseNamePageQuery } from '../http/list-query';
import { withinQuota } from '../http/quota';
import { NAME } from '../pipelines/catalogue';
import { isOptionString, MAX_SPEC_LENGTH, parseSpec, SpecError, specText, type ParsedSpec } from './spec';

const PresetName = z
  .string()
  .regex(NAME, 'lower-case letters, digits, "-" and "_", at most 63, starting with a letter or digit')
  .openapi({ example: 'thumb' });

/** A new preset's name: `{spec}` would read one that begins like an option as options, so no request could name it. */
const NewPresetName = PresetName.refine(
  (name) => !isOptionString(name),
  'a preset name may not begin like an option (w_, h_, fit_, c_, f_, q_, dpr_, width_, ...)',
);

export const SPEC_DESCRIPTION =
  'Options joined by commas: `w_` and `h_` (pixels, at most 8192), `fit_` (`inside` default, `cover`, `contain`, `fill`, `outside`), ' +
  '`f_` (`webp`, `avif`, `jpeg`, `png`, `auto` from Accept; absent: the source format), `q_` (1-100), `dpr_` (1, 1.5, 2, 3, 4: multiplies ' +
  'w and h). Aliases (`width_`, `c_fill`, `f_jpg`, ...) and any order are accepted and normalised into one canonical spec.';

export const ImagePreset = z
  .object({
    name: z.string(),
    version: z.number().int(),
    spec: z.string().openapi({ description: 'The spec as stored: canonical order, `dpr` folded in, `f_auto` kept.' }),
    createdAt: z.string(),
  })
  .openapi('ImagePreset');

const DeclareImagePreset = z
  .object({
    name: NewPresetName,
    spec: z.string().min(1).max(MAX_SPEC_LENGTH).openapi({ example: 'w_400,h_300,fit_cover,f_auto', description: SPEC_DESCRIPTION }),
  })
  .strict()
  .openapi('DeclareImagePreset');

function presetView(p: ImagePresetRow) {
  return { name: p.name, version: p.version, spec: p.spec, createdAt: p.createdAt.toISOString() };
}

const declarePresetRoute = createRoute({
  method: 'post',
  path: '/',
  tags: ['images'],
  summary: 'Declare an image preset, or a new version of one (the same spec as the latest version answers that version, 200)',
  security: requires('pipelines:manage'),
  request: idempotentJsonRequest(DeclareImagePreset, { name: 'thumb', spec: 'w_400,h_300,fit_cover,f_auto' }),
  responses: {
    201: createdResponse('Created: the new version.', ImagePreset, { location: true }),
    200: { description: 'The spec equals the latest version: that version.', content: { 'application/json': { schema: ImagePreset } } },
    ...problems(...COMMON_V1_PROBLEMS, ...IDEMPOTENT_PROBLEMS, 'body_invalid', 'quota_exceeded'),
  },
});

const listPresetsRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['images'],
  summary: "The tenant's image presets in name order, each at its latest version",
  security: requires('pipelines:manage'),
  request: { query: PageQuery },
  responses: {
    200: {
      description: 'Presets',
      content: {
        'application/json': { schema: z.object({ data: z.array(ImagePreset), nextCursor: NextCursor }).openapi('ImagePresetList') },
      },
    },
    ...problems(...COMMON_V1_PROBLEMS, 'query_invalid'),
  },
});

const getPresetRoute = createRoute({
  method: 'get',
  path: '/{name}',
  tags: ['images'],
  summary: 'An image preset at its latest version: what its name renders',
  security: requires('pipelines:manage'),
  request: { params: z.object({ name: PresetName }) },
  responses: {
    200: { description: 'The latest version', content: { 'application/json': { schema: ImagePreset } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found'),
  },
});

export function imagePresetRoutes(deps: { idempotency: IdempotentRouteOptions; limits: { presets: number; versions: number } }) {
  const app = router();
  const pool: Pool = deps.idempotency.pool;

  route(app, declarePresetRoute, idempotentRoute(deps.idempotency), async function declareTenantImagePreset(c) {
    const body = await jsonBody(c, DeclareImagePreset);
    const spec = specText(parsedSpec(body.spec, 'body_invalid'));
    const { row, created } = await withinQuota(() => declareImagePreset(pool, c.get('tenantId'), { name: body.name, spec }, deps.limits));
    return created ? c.json(presetView(row), 201, { location: `/v1/image-presets/${row.name}` }) : c.json(presetView(row), 200);
  });

  route(app, listPresetsRoute, async function listTenantImagePresets(c) {
    const { after, limit } = parseNamePageQuery(c.req.query(), NAME);
    const rows = await dependency('database_unavailable', () => pageImagePresets(pool, c.get('tenantId'), { after, limit: limit + 1 }));
    const page = pageOf(rows, limit, (last) => encodeNameCursor(last.name));
    return c.json({ data: page.items.map(presetView), nextCursor: page.nextCursor }, 200);
  });

  route(app, getPresetRoute, async function getTenantImagePreset(c) {
    const name = c.req.param('name')!;
    const found = NAME.test(name)
      ? await dependency('database_unavailable', () => latestImagePreset(pool, c.get('tenantId'), name))
      : undefined;
    if (!found) throw problem('not_found', 'No such image preset.');
    return c.json(presetView(found), 200);
  });

  return app;
}

/** A spec parsed, or the problem `code` saying why it is not one. */
export function parsedSpec(spec: string, code: 'body_invalid' | 'image_spec_invalid'): ParsedSpec {
  try {
    return parseSpec(spec);
  } catch (err) {
    if (err instanceof SpecError) throw problem(code, `The image spec is not valid: ${err.message}.`);
    throw err;
  }
}
