// /v1/pipelines: what runs after a tenant's uploads commit. A declaration is validated
// against the step catalogue (src/pipelines/catalogue.ts) and kept as the name's next
// immutable version; an upload records the version it ran. `default` is the built-in
// (version 0) until the tenant declares its own.
import { createRoute, z } from '@hono/zod-openapi';
import type { Pool } from '../../db/pool';
import {
  declarePipeline,
  findPipelineVersion,
  latestPipelineVersion,
  pagePipelines,
  type PipelineVersionRow,
} from '../../db/queries/pipelines';
import { dependency, problem } from '../../errors';
import { randomBytes } from 'node:crypto';
import { NAME, PipelineDeclaration, PipelineName, PipelineStep, ValidationHookSpec } from '../../pipelines/catalogue';
import type { DeclaredPipelines } from '../../pipelines/declared';
import { assertDeliverableUrl, DisallowedUrlError } from '../../downstream/url-guard';
import { pipelineSecretContext } from '../../secret-box';
import { DEFAULT_PIPELINE, type PipelineVersion } from '../../pipelines/steps';
import { jsonBody } from '../../http/json-body';
import { idempotentRoute, type IdempotentRouteOptions } from '../../http/idempotent-route';
import {
  COMMON_V1_PROBLEMS,
  IDEMPOTENT_PROBLEMS,
  createdResponse,
  idempotentJsonRequest,
  problems,
  route,
  router,
} from '../../http/openapi';
import { shownOnce } from '../../http/redact';
import { INT4_MAX, NextCursor, PageQuery } from '../../http/schemas';
import { encodeNameCursor, pageOf, parseNamePageQuery } from '../../http/list-query';
import { withinQuota } from '../../http/quota';
import { requires } from '../../http/scopes';

export const Pipeline = z
  .object({
    name: z.string(),
    version: z.number().int().openapi({ description: 'Versions count from 1; 0 is the built-in default.' }),
    steps: z.array(PipelineStep),
    validate: ValidationHookSpec.nullable(),
    builtin: z.boolean().openapi({ description: 'The built-in default (no declaration of the tenant).' }),
    createdAt: z.string().nullable(),
  })
  .openapi('Pipeline');

function view(p: PipelineVersion & { createdAt?: Date }) {
  return {
    name: p.name,
    version: p.version,
    steps: p.steps,
    validate: p.validate ?? null,
    builtin: p.version === 0,
    createdAt: p.createdAt?.toISOString() ?? null,
  };
}

const PipelineDeclared = Pipeline.extend({
  signingSecret: shownOnce({
    description:
      "Only in the answer that declared the name's first version (and its replays): the `whsec_` secret its validation hook and http.call steps are signed with, as webhooks are.",
  }).optional(),
}).openapi('PipelineDeclared');

const nameParam = z.object({ name: PipelineName });

const declareRoute = createRoute({
  method: 'post',
  path: '/',
  tags: ['pipelines'],
  summary: 'Declare a pipeline, or a new version of one (the same steps as the latest version answer that version, 200)',
  security: requires('pipelines:manage'),
  request: idempotentJsonRequest(PipelineDeclaration, { name: 'photos', steps: [{ type: 'webhook' }] }),
  responses: {
    201: createdResponse('Created: the new version.', PipelineDeclared, { location: true }),
    200: { description: 'The steps equal the latest version: that version.', content: { 'application/json': { schema: Pipeline } } },
    ...problems(...COMMON_V1_PROBLEMS, ...IDEMPOTENT_PROBLEMS, 'temporal_unavailable', 'body_invalid', 'quota_exceeded'),
  },
});

const listRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['pipelines'],
  summary: "The tenant's pipelines in name order, each at its latest version (with the built-in default unless declared)",
  security: requires('pipelines:manage'),
  request: { query: PageQuery },
  responses: {
    200: {
      description: 'Pipelines',
      content: { 'application/json': { schema: z.object({ data: z.array(Pipeline), nextCursor: NextCursor }).openapi('PipelineList') } },
    },
    ...problems(...COMMON_V1_PROBLEMS, 'query_invalid'),
  },
});

const getRoute = createRoute({
  method: 'get',
  path: '/{name}',
  tags: ['pipelines'],
  summary: 'A pipeline at its latest version: what new uploads naming it run',
  security: requires('pipelines:manage'),
  request: { params: nameParam },
  responses: {
    200: { description: 'The latest version', content: { 'application/json': { schema: Pipeline } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found'),
  },
});

const versionRoute = createRoute({
  method: 'get',
  path: '/{name}/versions/{version}',
  tags: ['pipelines'],
  summary: 'One version of a pipeline, as uploads that recorded it ran it',
  security: requires('pipelines:manage'),
  request: {
    params: nameParam.extend({
      version: z
        .string()
        .regex(/^\d{1,10}$/)
        .refine((v) => Number(v) <= INT4_MAX, 'at most 2147483647')
        .openapi({ example: '2' }),
    }),
  },
  responses: {
    200: { description: 'The version', content: { 'application/json': { schema: Pipeline } } },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found'),
  },
});

export function pipelineRoutes(deps: {
  idempotency: IdempotentRouteOptions;
  builtin: PipelineVersion;
  /** Tenant URLs must be public addresses unless allowed (WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
  allowPrivateNetworks: boolean;
  pipelines: DeclaredPipelines;
  /** TENANT_MAX_PIPELINES names per tenant, PIPELINE_MAX_VERSIONS versions per name. */
  limits: { pipelines: number; versions: number };
}) {
  const app = router();
  const pool: Pool = deps.idempotency.pool;
  const db = <T>(fn: () => Promise<T>) => dependency('database_unavailable', fn);
  /** The latest version of a name: the tenant's, or the built-in default. */
  const latest = async (tenantId: string, name: string): Promise<PipelineVersionRow | PipelineVersion | undefined> =>
    (await db(() => latestPipelineVersion(pool, tenantId, name))) ?? (name === DEFAULT_PIPELINE ? deps.builtin : undefined);
  const nameOf = (raw: string | undefined) => {
    if (!PipelineName.safeParse(raw).success) throw problem('not_found', 'No such pipeline.');
    return raw!;
  };

  route(app, declareRoute, idempotentRoute(deps.idempotency), async function declareTenantPipeline(c) {
    const body = await jsonBody(c, PipelineDeclaration);
    const urls = [body.validate?.url, ...body.steps.map((s) => (s.type === 'http.call' ? s.url : undefined))];
    for (const url of urls.filter((u) => u !== undefined)) {
      try {
        await assertDeliverableUrl(url, { allowPrivateNetworks: deps.allowPrivateNetworks });
      } catch (err) {
        if (err instanceof DisallowedUrlError) throw problem('body_invalid', `The URL ${url} is not allowed: ${err.message}.`);
        throw err;
      }
    }
    const tenantId = c.get('tenantId');
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const sealed = deps.idempotency.box.seal(secret, pipelineSecretContext(tenantId, body.name));
    const { row, created, secretCreated } = await withinQuota(() => declarePipeline(pool, tenantId, body, sealed, deps.limits));
    deps.pipelines.forget(tenantId, row.name);
    const location = `/v1/pipelines/${row.name}/versions/${row.version}`;
    const answer = { ...view(row), ...(secretCreated ? { signingSecret: secret } : {}) };
    return created ? c.json(answer, 201, { location }) : c.json(answer, 200);
  });

  route(app, listRoute, async function listTenantPipelines(c) {
    const { after, limit } = parseNamePageQuery(c.req.query(), NAME);
    const rows: (PipelineVersion & { createdAt?: Date })[] = await db(() =>
      pagePipelines(pool, c.get('tenantId'), { after, limit: limit + 1 }),
    );
    // The built-in default is listed in its place by name until the tenant declares its own.
    if ((after === undefined || DEFAULT_PIPELINE > after) && !rows.some((r) => r.name === DEFAULT_PIPELINE)) {
      rows.push(deps.builtin);
      rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    }
    const page = pageOf(rows, limit, (last) => encodeNameCursor(last.name));
    return c.json({ data: page.items.map(view), nextCursor: page.nextCursor }, 200);
  });

  route(app, getRoute, async function getTenantPipeline(c) {
    const found = await latest(c.get('tenantId'), nameOf(c.req.param('name')));
    if (!found) throw problem('not_found', 'No such pipeline.');
    return c.json(view(found), 200);
  });

  route(app, versionRoute, async function getTenantPipelineVersion(c) {
    const name = nameOf(c.req.param('name'));
    const version = Number(c.req.param('version'));
    const found =
      version === 0
        ? name === DEFAULT_PIPELINE
          ? deps.builtin
          : undefined
        : await db(() => findPipelineVersion(pool, c.get('tenantId'), name, version));
    if (!found) throw problem('not_found', `No version ${c.req.param('version')} of pipeline ${name}.`);
    return c.json(view(found), 200);
  });

  return app;
}
