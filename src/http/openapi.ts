// Routes are declared once: `route()` registers the handler and its OpenAPI description from
// the same definition (whose request schemas are the ones the handlers validate with), and
// `/openapi.json` is generated from the merged registry. Handlers validate through the
// schemas themselves (so every failure gets its catalogue problem), not a generic hook.
import { OpenAPIHono, z, type RouteConfig } from '@hono/zod-openapi';
import type { Handler, MiddlewareHandler } from 'hono';
import { catalogue, problem, type ErrorCode } from '../errors';
import { jsonBody } from './json-body';
import type { AppEnv } from './env';
import { SCOPES } from '../credentials';
import { accessOf, assertAccess, schemeOf, UPLOAD_TOKEN_SCHEME } from './scopes';
import { EVENT_TYPES, IdempotencyKey, PageQuery, ProblemDetails, UploadCreated, UploadProcessing, WebhookEvent } from './schemas';

export function router(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>();
}

/** Mounts `def` on `app` (`{param}` becomes `:param`) and records it for the document. */
export function route(app: OpenAPIHono<AppEnv>, def: RouteConfig, ...handlers: (Handler<AppEnv> | MiddlewareHandler<AppEnv>)[]): void {
  app.openAPIRegistry.registerPath(def);
  const access = accessOf(def.security);
  const guard: MiddlewareHandler<AppEnv>[] = access
    ? [
        async function scopeGuard(c, next) {
          assertAccess(c, access);
          await next();
        },
      ]
    : [];
  app.on(
    def.method.toUpperCase(),
    def.path.replaceAll(/\{(\w+)\}/g, ':$1'),
    ...(guard as [Handler<AppEnv>]),
    ...(requestGuards(def) as [Handler<AppEnv>]),
    ...(handlers as [Handler<AppEnv>]),
  );
}

/**
 * The request as documented, checked before the handler runs: path parameters (a value the
 * pattern cannot name is no resource: 404) and the JSON body (400 naming the field).
 */
function requestGuards(def: RouteConfig): MiddlewareHandler<AppEnv>[] {
  const guards: MiddlewareHandler<AppEnv>[] = [];
  const params = def.request?.params;
  if (params instanceof z.ZodType)
    guards.push(async function pathGuard(c, next) {
      const parsed = params.safeParse(c.req.param());
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw problem('not_found', `No such resource: path parameter ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}.`);
      }
      await next();
    });
  const json = def.request?.body?.content['application/json'];
  const media = json && 'schema' in json ? json : undefined;
  const schema = media?.schema;
  if (schema instanceof z.ZodType)
    guards.push(async function bodyGuard(c, next) {
      await jsonBody(c, schema, media?.example);
      await next();
    });
  return guards;
}

/** Problem answers a route may give, grouped by status, each listing its catalogue codes. */
export function problems(...codes: ErrorCode[]): RouteConfig['responses'] {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = catalogue[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      String(status),
      {
        description: list.map((c) => `\`${c}\`: ${catalogue[c].title}`).join('. '),
        headers: list.some((c) => 'retryAfter' in catalogue[c] || c === 'idempotency_in_progress')
          ? { 'Retry-After': retryAfterHeader }
          : undefined,
        content: { 'application/problem+json': { schema: ProblemDetails } },
      },
    ]),
  );
}

export const retryAfterHeader = {
  description: 'Seconds to wait before retrying with the same key.',
  schema: { type: 'string' as const, example: '2' },
};
export const replayedHeader = {
  description: '`true` when this is the stored answer of an earlier request with the same key.',
  schema: { type: 'string' as const, enum: ['true'] },
};
export const locationHeader = {
  description: 'Where the resource (or, for 202, the key to poll) lives.',
  schema: { type: 'string' as const },
};

/** What a JSON POST route answers under the shared Idempotency-Key rule (idempotentRoute). */
/** What a route reading an Idempotency-Key may answer about the key itself. */
export const KEY_PROBLEMS: ErrorCode[] = [
  'idempotency_key_required',
  'idempotency_key_invalid',
  'idempotency_key_reuse',
  'idempotency_key_expired',
];
export const IDEMPOTENT_PROBLEMS: ErrorCode[] = [
  'idempotency_key_invalid',
  'idempotency_key_reuse',
  'idempotency_key_expired',
  'idempotency_in_progress',
  'body_invalid',
  'payload_too_large',
];

/** The request of a JSON POST route: an optional Idempotency-Key and a body `schema` (`example`: shown in the docs and in a bad body's problem). */
export function idempotentJsonRequest(schema: z.ZodType, example: unknown) {
  return {
    headers: z.object({ 'idempotency-key': IdempotencyKey.optional() }),
    body: jsonRequestBody(schema, example),
  };
}

/** A required JSON request body. */
export function jsonRequestBody(schema: z.ZodType, example: unknown) {
  return { required: true, content: { 'application/json': { schema, example } } };
}

/** A 201 answer (and its replays, marked Idempotent-Replayed), with or without Location. */
export function createdResponse(description: string, schema: z.ZodType, opts: { location: boolean }) {
  return {
    description,
    headers: { ...(opts.location ? { Location: locationHeader } : {}), 'Idempotent-Replayed': replayedHeader },
    content: { 'application/json': { schema } },
  };
}

/** Every /v1 route can answer these. */
export const COMMON_V1_PROBLEMS: ErrorCode[] = [
  'unauthorized',
  'insufficient_scope',
  'malformed_request',
  'value_out_of_range',
  'database_unavailable',
  // On an old keep-alive connection once the instance's drain has ended (src/http/drain.ts).
  'shutting_down',
  'internal_error',
];

export function openApiDocument(app: OpenAPIHono<AppEnv>, opts: { keyTtlHours: number; tombstoneTtlHours: number }) {
  const registry = app.openAPIRegistry;
  for (const scope of SCOPES) {
    registry.registerComponent('securitySchemes', schemeOf(scope), {
      type: 'http',
      scheme: 'bearer',
      description: `A tenant API key (\`onc_…\`) holding the scope \`${scope}\` (a key made without a scope list holds every scope).`,
    });
  }
  registry.registerComponent('securitySchemes', UPLOAD_TOKEN_SCHEME, {
    type: 'http',
    scheme: 'bearer',
    description: 'An upload token (`oup_…`, POST /v1/upload-tokens): uploads within its limits, and reads the uploads it made.',
  });
  registry.registerComponent('securitySchemes', 'adminToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'The operator token (ADMIN_TOKEN).',
  });
  for (const type of EVENT_TYPES) {
    registry.registerWebhook({
      method: 'post',
      path: type,
      summary: `${type}, signed per Standard Webhooks`,
      description:
        'Delivered once per event with a stable `webhook-id` (retries reuse it), `webhook-timestamp` and `webhook-signature` (v1, HMAC-SHA256 with the endpoint secret). ' +
        'Answer 2xx to acknowledge; 410 disables the endpoint; other answers are retried with backoff (Retry-After honoured).',
      request: { body: { content: { 'application/json': { schema: WebhookEvent } } } },
      responses: { 200: { description: 'Acknowledged' } },
    });
  }
  return withRequestTraceHeaders(
    app.getOpenAPI31Document({
      openapi: '3.1.0',
      info: {
        title: 'Oncely',
        version: '0.1.0',
        description:
          'Exactly-once file uploads. Every mutating request carries an `Idempotency-Key`; retries with the same key get the original answer back ' +
          `(\`Idempotent-Replayed: true\`). Stored answers are kept for ${opts.keyTtlHours} h (IDEMPOTENCY_TTL_HOURS); after that, for ${opts.tombstoneTtlHours} h ` +
          '(TOMBSTONE_TTL_HOURS), reusing the key answers `idempotency_key_expired` instead of creating anything. Errors are RFC 9457 problem+json with a stable `error` code.',
      },
    }),
  );
}

/** Every operation reads X-Request-Id and the W3C trace context, and answers X-Request-Id (src/telemetry/request-trace.ts). */
function withRequestTraceHeaders<D extends { paths?: object }>(doc: D): D {
  const parameters = [
    {
      name: 'x-request-id',
      in: 'header',
      required: false,
      description: 'Your id for this request (1 to 128 of A-Z a-z 0-9 . _ : / + = @ -), answered and logged; otherwise one is made.',
      schema: { type: 'string', maxLength: 128 },
    },
    {
      name: 'traceparent',
      in: 'header',
      required: false,
      description: "W3C Trace Context: the request's span continues your trace (when tracing is on).",
      schema: { type: 'string' },
    },
    {
      name: 'tracestate',
      in: 'header',
      required: false,
      description: 'W3C Trace Context, with `traceparent`.',
      schema: { type: 'string' },
    },
  ];
  const header = { description: "The request's id (yours, or the one made for it).", schema: { type: 'string' } };
  for (const ops of Object.values((doc.paths ?? {}) as Record<string, object>)) {
    for (const op of Object.values(ops) as {
      parameters?: unknown[];
      responses?: Record<string, { headers?: Record<string, unknown> }>;
    }[]) {
      if (!op || typeof op !== 'object' || !op.responses) continue;
      op.parameters = [...(op.parameters ?? []), ...parameters];
      for (const res of Object.values(op.responses)) res.headers = { ...res.headers, 'X-Request-Id': header };
    }
  }
  return doc;
}

/** The answers of a route that commits an upload: 201 with the upload (or its replay), 202 while it commits. */
export function uploadAnswers(created: string, processing: string) {
  return {
    201: {
      description: created,
      headers: { Location: locationHeader, 'Idempotent-Replayed': replayedHeader },
      content: { 'application/json': { schema: UploadCreated } },
    },
    202: {
      description: processing,
      headers: { Location: locationHeader, 'Retry-After': retryAfterHeader },
      content: { 'application/json': { schema: UploadProcessing } },
    },
  };
}

/**
 * A GET list in creation order (src/http/list-query.ts, creationOrderPage): `limit` and
 * `cursor` in the query, one page of `item` under `field` with `nextCursor`, named `name`.
 */
export function pagedListRoute(p: {
  path: string;
  tags: string[];
  summary: string;
  description?: string;
  security: RouteConfig['security'];
  item: z.ZodType;
  field: 'items' | 'data';
  name: string;
  problems: ErrorCode[];
}): RouteConfig {
  return {
    method: 'get',
    path: p.path,
    tags: p.tags,
    summary: p.summary,
    ...(p.description ? { description: p.description } : {}),
    security: p.security,
    request: { query: PageQuery },
    responses: {
      200: {
        description: 'One page',
        content: {
          'application/json': { schema: z.object({ [p.field]: z.array(p.item), nextCursor: z.string().nullable() }).openapi(p.name) },
        },
      },
      ...problems(...p.problems, 'query_invalid'),
    },
  };
}
