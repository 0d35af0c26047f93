// Byte quotas and usage: GET /v1/quotas and /v1/usage for a tenant (uploads:read); for the
// operator, GET and PATCH /admin/tenants/{tenantId}/quotas and GET /admin/usage (one tenant or
// all). Usage comes from the transactions that committed and erased, per hour, as JSON or CSV.
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Pool } from '../db/pool';
import {
  findByteQuotas,
  quotaStanding,
  setByteQuotas,
  usageSeries,
  NO_QUOTAS,
  remainingUnder,
  type UsageBucket,
} from '../db/queries/byte-quotas';
import { findTenant } from '../db/queries/tenants';
import { dependency, problem } from '../errors';
import type { AppEnv } from '../http/env';
import { header } from '../http/headers';
import { jsonBody } from '../http/json-body';
import { parseQuery } from '../http/list-query';
import { COMMON_V1_PROBLEMS, jsonRequestBody, problems, route, router } from '../http/openapi';
import { Uuid } from '../http/schemas';
import { requires } from '../http/scopes';
import { ByteQuotaStanding, ChangeByteQuotas, OperatorUsageQuery, Usage, UsageQuery } from './schemas';
import { usageWindow, type UsageWindow } from './usage-window';

const standingAnswer = { description: 'Quotas, usage and what is left', content: { 'application/json': { schema: ByteQuotaStanding } } };
const usageAnswer = {
  description: 'Usage per bucket, oldest first, every bucket of the window present',
  content: { 'application/json': { schema: Usage }, 'text/csv': { schema: z.string() } },
};
const OPERATOR = [{ adminToken: [] }];

const tenantQuotasRoute = createRoute({
  method: 'get',
  path: '/quotas',
  tags: ['usage'],
  summary: "The tenant's byte quotas, its usage against them and what is left",
  security: requires('uploads:read'),
  responses: { 200: standingAnswer, ...problems(...COMMON_V1_PROBLEMS) },
});

const tenantUsageRoute = createRoute({
  method: 'get',
  path: '/usage',
  tags: ['usage'],
  summary: "The tenant's usage per day or hour: uploads, ingress, egress, stored bytes, renders",
  description:
    'Counted by the transactions that commit and erase, never from requests: a replay, a retry, a duplicate or an event delivered ' +
    'again counts nothing. `Accept: text/csv` (or `format=csv`) answers CSV.',
  security: requires('uploads:read'),
  request: { query: UsageQuery },
  responses: { 200: usageAnswer, ...problems(...COMMON_V1_PROBLEMS, 'query_invalid') },
});

const operatorQuotasRoute = createRoute({
  method: 'get',
  path: '/tenants/{tenantId}/quotas',
  tags: ['operators'],
  summary: "A tenant's byte quotas, usage and what is left",
  security: OPERATOR,
  request: { params: z.object({ tenantId: Uuid }) },
  responses: { 200: standingAnswer, ...problems('unauthorized', 'not_found', 'database_unavailable', 'internal_error') },
});

const changeQuotasRoute = createRoute({
  method: 'patch',
  path: '/tenants/{tenantId}/quotas',
  tags: ['operators'],
  summary: "Set a tenant's byte quotas (those given; null: unlimited)",
  description:
    'Applies to uploads admitted from then on: an upload admitted before keeps its reservation. Lowering a quota below the usage ' +
    'refuses new uploads until usage falls under it; nothing stored is removed.',
  security: OPERATOR,
  request: {
    params: z.object({ tenantId: Uuid }),
    body: jsonRequestBody(ChangeByteQuotas, { maxStoredBytes: 10 * 1024 ** 3, maxUploadsPerMonth: 10_000 }),
  },
  responses: {
    200: standingAnswer,
    ...problems(
      'unauthorized',
      'not_found',
      'tenant_deleted',
      'body_invalid',
      'payload_too_large',
      'database_unavailable',
      'internal_error',
    ),
  },
});

const operatorUsageRoute = createRoute({
  method: 'get',
  path: '/usage',
  tags: ['operators'],
  summary: 'Usage per day or hour of one tenant, or of every tenant summed',
  security: OPERATOR,
  request: { query: OperatorUsageQuery },
  responses: { 200: usageAnswer, ...problems('unauthorized', 'not_found', 'query_invalid', 'database_unavailable', 'internal_error') },
});

async function standing(pool: Pool, tenantId: string) {
  const [quotas, s] = await dependency('database_unavailable', () =>
    Promise.all([findByteQuotas(pool, tenantId), quotaStanding(pool, tenantId)]),
  );
  const q = quotas ?? NO_QUOTAS;
  const left = remainingUnder(q, s);
  return {
    tenantId,
    quotas: q,
    usage: s,
    remaining: {
      storedBytes: left.maxStoredBytes,
      ingressBytesThisMonth: left.maxIngressBytesPerMonth,
      uploadsThisMonth: left.maxUploadsPerMonth,
    },
  };
}

const CSV_COLUMNS: [string, keyof UsageBucket][] = [
  ['at', 'at'],
  ['uploads', 'uploads'],
  ['ingress_bytes', 'ingressBytes'],
  ['import_bytes', 'importBytes'],
  ['egress_bytes', 'egressBytes'],
  ['renders', 'renders'],
  ['stored_added', 'storedAdded'],
  ['stored_released', 'storedReleased'],
  ['stored_bytes', 'storedBytes'],
];

/** The usage as asked: JSON, or CSV (the cells are numbers and timestamps: nothing to quote). */
async function answerUsage(c: Context<AppEnv>, pool: Pool, tenantId: string | null, window: UsageWindow, format?: 'json' | 'csv') {
  const buckets = await dependency('database_unavailable', () => usageSeries(pool, { tenantId, ...window }));
  const csv = format === 'csv' || (format === undefined && /\btext\/csv\b/.test(header(c, 'accept') ?? ''));
  if (csv) {
    const cell = (b: UsageBucket, k: keyof UsageBucket) => (k === 'at' ? b.at.toISOString() : String(b[k]));
    const lines = [CSV_COLUMNS.map(([name]) => name).join(','), ...buckets.map((b) => CSV_COLUMNS.map(([, k]) => cell(b, k)).join(','))];
    return c.body(`${lines.join('\r\n')}\r\n`, 200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="usage-${window.granularity}.csv"`,
    });
  }
  return c.json(
    {
      tenantId,
      from: window.from.toISOString(),
      to: window.to.toISOString(),
      granularity: window.granularity,
      buckets: buckets.map((b) => ({ ...b, at: b.at.toISOString() })),
    },
    200,
  );
}

export function tenantQuotaRoutes(deps: { pool: Pool }) {
  const app = router();
  route(app, tenantQuotasRoute, async function getQuotas(c) {
    return c.json(await standing(deps.pool, c.get('tenantId')), 200);
  });
  route(app, tenantUsageRoute, async function getUsage(c) {
    const q = parseQuery(UsageQuery, c.req.query());
    return answerUsage(c, deps.pool, c.get('tenantId'), usageWindow(q), q.format);
  });
  return app;
}

export function operatorQuotaRoutes(deps: { pool: Pool }) {
  const { pool } = deps;
  const app = router();
  const liveTenant = async (id: string) => {
    const t = await dependency('database_unavailable', () => findTenant(pool, id));
    if (!t) throw problem('not_found', 'No such tenant.');
    return t;
  };
  route(app, operatorQuotasRoute, async function getTenantQuotas(c) {
    const tenantId = (await liveTenant(c.req.param('tenantId')!)).id;
    return c.json(await standing(pool, tenantId), 200);
  });
  route(app, changeQuotasRoute, async function changeTenantQuotas(c) {
    const tenant = await liveTenant(c.req.param('tenantId')!);
    const body = await jsonBody(c, ChangeByteQuotas);
    const set = await dependency('database_unavailable', () => setByteQuotas(pool, tenant.id, body));
    if (!set) throw problem('tenant_deleted', 'This tenant has been deleted.');
    return c.json(await standing(pool, tenant.id), 200);
  });
  route(app, operatorUsageRoute, async function getOperatorUsage(c) {
    const q = parseQuery(OperatorUsageQuery, c.req.query());
    if (q.tenantId) await liveTenant(q.tenantId);
    return answerUsage(c, pool, q.tenantId ?? null, usageWindow(q), q.format);
  });
  return app;
}
