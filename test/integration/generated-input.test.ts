// Requests generated from /openapi.json, as a careless or hostile client sends them: every
// JSON body with an unknown field (at the top and inside each nested object) answers 400
// naming the field; out-of-range and malformed values in every path, query and body
// parameter answer 4xx problem+json, never 5xx (a 503 would be retried forever and page an
// operator); and no refused request changes a row.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../helpers/stack';
import { getJson } from '../helpers/http';
import pg from 'pg';
import { dependency, Problem } from '../../src/errors';

const ADMIN_TOKEN = `admin-${randomUUID()}`;
let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };
let doc: any;
/** A companion endpoint of the tenant's key: its routes check it before anything else. */
let companionToken: string;

beforeAll(async () => {
  stack = await startTestStack('generated', { env: { ADMIN_TOKEN, TENANT_MAX_PIPELINES: '6', PIPELINE_MAX_VERSIONS: '3' } });
  tenant = await stack.createTenant('generated');
  // The pipeline the generated paths name, so a request gets past "no such pipeline".
  const declared = await fetch(`${stack.url}/v1/pipelines`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'photos', steps: [] }),
  });
  expect(declared.status).toBe(201);
  const minted = await fetch(`${stack.url}/v1/uppy-endpoints`, { method: 'POST', headers: { authorization: `Bearer ${tenant.apiKey}` } });
  companionToken = ((await minted.json()) as { companionEndpoint: string }).companionEndpoint.split('/').at(-1)!;
  doc = (await getJson(`${stack.url}/openapi.json`)).json;
});
afterAll(() => stack?.stop());

interface Operation {
  method: string;
  path: string;
  params: { name: string; in: 'path' | 'query' | 'header'; schema: any }[];
  /** The documented example of a JSON body, when the route takes one (the schema's own, else the route's). */
  jsonExample?: unknown;
  jsonSchema?: any;
  /** The route takes the operator token (its documented security). */
  operator: boolean;
}

const deref = (s: any): any => {
  while (s?.$ref) s = doc.components.schemas[String(s.$ref).split('/').pop()!];
  return s ?? {};
};

/** The shapes a schema may take: allOf merged into one, oneOf/anyOf listed. */
function shapes(schema: any): any[] {
  const s = deref(schema);
  if (s.oneOf || s.anyOf) return (s.oneOf ?? s.anyOf).flatMap(shapes);
  if (!s.allOf) return [s];
  const parts = s.allOf.flatMap(shapes);
  return [
    {
      ...Object.assign({}, ...parts),
      properties: Object.assign({}, ...parts.map((p: any) => p.properties ?? {})),
      additionalProperties: parts.some((p: any) => p.additionalProperties === false)
        ? false
        : parts.find((p: any) => p.additionalProperties)?.additionalProperties,
    },
  ];
}

/** The shape `value` takes under `schema` (for a union: the member that names all its fields and its type). */
function shapeOf(schema: any, value: unknown): any {
  const all = shapes(schema);
  if (all.length === 1 || value === null || typeof value !== 'object') return all[0];
  const keys = Object.keys(value);
  const type = (value as { type?: unknown }).type;
  return (
    all.find(
      (s) =>
        keys.every((k) => s.properties?.[k]) &&
        (type === undefined || s.properties?.type?.const === type || s.properties?.type?.enum?.includes(type)),
    ) ?? all[0]
  );
}

/** The schema of the value at `path` inside `root` (whose value is `example`). */
function schemaAt(root: any, example: unknown, path: (string | number)[]): any {
  let s = shapeOf(root, example);
  let v: any = example;
  for (const key of path) {
    v = v?.[key];
    const next =
      typeof key === 'number'
        ? s.items
        : (s.properties?.[key] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : {}));
    s = shapeOf(next, v);
  }
  return s;
}

function operations(): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete', 'head', 'options']) {
      const op = item[method];
      if (!op) continue;
      const json = op.requestBody?.content?.['application/json'];
      const own = json ? deref(json.schema).example : undefined;
      ops.push({
        method: method.toUpperCase(),
        path,
        params: op.parameters ?? [],
        jsonExample: json ? (own ?? json.example ?? {}) : undefined,
        jsonSchema: json?.schema,
        operator: (op.security ?? []).some((s: Record<string, unknown>) => 'adminToken' in s),
      });
    }
  }
  return ops;
}

/** A value of the documented shape for a path parameter, so a request reaches the part under test. */
function samplePathValue(p: { name: string; schema: any }): string {
  const s = p.schema ?? {};
  if (s.enum) return String(s.enum[0]);
  if (s.format === 'uuid') return randomUUID();
  if (s.example !== undefined) return String(s.example);
  const byName: Record<string, string> = {
    key: `gen-${randomUUID()}`,
    name: 'photos',
    version: '1',
    step: '0',
    n: '1',
    token: companionToken,
  };
  return byName[p.name] ?? 'x';
}

function urlOf(op: Operation, path: Record<string, string>, query: [string, string][] = []): string {
  const pathname = op.path.replaceAll(
    /\{(\w+)\}/g,
    (_, name: string) => path[name] ?? encodeURIComponent(samplePathValue({ name, schema: {} })),
  );
  const qs = query.map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join('&');
  return `${stack.url}${pathname}${qs ? `?${qs}` : ''}`;
}

function samplePath(op: Operation): Record<string, string> {
  return Object.fromEntries(op.params.filter((p) => p.in === 'path').map((p) => [p.name, encodeURIComponent(samplePathValue(p))]));
}

const authFor = (op: Operation) => ({ authorization: `Bearer ${op.operator ? ADMIN_TOKEN : tenant.apiKey}` });

async function send(op: Operation, url: string, body?: unknown) {
  const res = await fetch(url, {
    method: op.method,
    headers: { ...authFor(op), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text };
}

/** A digest of every table's rows: equal before and after a request that changed nothing. */
async function databaseDigest(): Promise<string> {
  const { pool } = stack.runtime;
  // payload_keys is left out: a data key's used_at moves whenever any run (a housekeeping
  // Schedule's, say) is about to seal with it, whatever request is in flight. So are the key
  // request logs: each API process writes them a second after the answers, so an earlier
  // request's entries may land during any later one. And an API key's last_used_at: the
  // credential check writes it once a minute per key, so any request past the first minute
  // may move it, refused or not.
  const tables = (
    await pool.query<{ t: string }>(
      `SELECT tablename AS t FROM pg_tables
        WHERE schemaname = 'public' AND tablename NOT IN ('payload_keys', 'key_requests', 'key_request_tallies') ORDER BY 1`,
    )
  ).rows;
  // Each table's digest under its name, so a failure names the table that changed.
  const parts = tables.map(
    ({ t }) =>
      `'${t}=' || (SELECT md5(coalesce(string_agg((to_jsonb(x) - 'last_used_at')::text, ',' ORDER BY (to_jsonb(x) - 'last_used_at')::text), '')) FROM "${t}" x)`,
  );
  const res = await pool.query<{ d: string }>(`SELECT concat_ws('|', ${parts.join(', ')}) AS d`);
  return res.rows[0]!.d;
}

/** Sends the request; a refusal (4xx) must be problem+json and leave every row as it was; nothing may be a 5xx. */
async function expectRefusedOrServed(op: Operation, url: string, body?: unknown) {
  const before = await databaseDigest();
  const res = await send(op, url, body);
  const what = `${op.method} ${url.slice(stack.url.length)} ${body === undefined ? '' : JSON.stringify(body).slice(0, 300)} → ${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, what).toBeLessThan(500);
  if (res.status >= 400) {
    if (op.method !== 'HEAD') expect(res.contentType, what).toContain('application/problem+json');
    const after = await databaseDigest();
    const changed = after.split('|').filter((part) => !before.split('|').includes(part));
    expect(changed, `changed rows: ${what}`).toEqual([]);
  }
  return res;
}

/** Paths inside a JSON value that hold an object, the body itself first. */
function objectPaths(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => objectPaths(v, [...at, i]));
  if (value === null || typeof value !== 'object') return [];
  return [at, ...Object.entries(value).flatMap(([k, v]) => objectPaths(v, [...at, k]))];
}

/** Paths to the leaves (numbers, strings, booleans, nulls) and arrays of a JSON value. */
function leafPaths(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return [at, ...value.flatMap((v, i) => leafPaths(v, [...at, i]))];
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => leafPaths(v, [...at, k]));
  return [at];
}

/** Every field of the body: those of the example and every documented property of each object in it. */
function bodyFields(op: Operation): { at: (string | number)[]; sample: unknown }[] {
  const fields = leafPaths(op.jsonExample).map((at) => ({ at, sample: valueAt(op.jsonExample, at) }));
  for (const at of objectPaths(op.jsonExample)) {
    const shape = schemaAt(op.jsonSchema, op.jsonExample, at);
    const present = valueAt(op.jsonExample, at) as Record<string, unknown>;
    for (const [name, prop] of Object.entries<any>(shape.properties ?? {})) {
      if (name in present) continue;
      const type = shapes(prop)[0]?.type;
      fields.push({ at: [...at, name], sample: type === 'integer' || type === 'number' ? 1 : type === 'array' ? [] : 'x' });
    }
  }
  return fields;
}

function withValueAt(value: unknown, path: (string | number)[], set: (old: unknown) => unknown): unknown {
  if (path.length === 0) return set(value);
  const copy: any = Array.isArray(value) ? [...value] : { ...(value as object) };
  copy[path[0]!] = withValueAt(copy[path[0]!], path.slice(1), set);
  return copy;
}

const valueAt = (value: unknown, path: (string | number)[]): unknown => path.reduce<any>((v, k) => v?.[k], value);

const b64 = (s: string) => Buffer.from(s).toString('base64url');

/** What a hostile client puts in a path segment (already URL-encoded as sent). */
const HOSTILE_SEGMENTS = [
  '%25',
  '%E0%A4%A',
  '%C0%AF',
  '2147483648',
  '9'.repeat(25),
  '-1',
  'x'.repeat(400),
  'a%2Fb',
  '%2e%2e',
  encodeURIComponent('0000-01-01T00:00:00Z'),
];

/** What a hostile client puts in a query value (already URL-encoded as sent). */
const HOSTILE_QUERY = [
  ...HOSTILE_SEGMENTS,
  '',
  encodeURIComponent('+275760-09-13T00:00:00Z'),
  encodeURIComponent('9999-12-31T23:59:59-14:00'),
  '1e400',
  '3000000000',
  b64(`9999999999999999999.${randomUUID()}`),
  b64('9999999999999999999.evt_x'),
  b64(`-1.${randomUUID()}`),
];

/** What a hostile client puts in a body field in place of `old`. */
function hostileBodyValues(old: unknown): unknown[] {
  const common = [null, {}, [], true];
  if (Array.isArray(old)) return [...common, Array.from({ length: 5000 }, () => old[0] ?? 'x'), 'x'];
  if (typeof old === 'number')
    return [...common, 3_000_000_000, 2_147_483_648, -1, 0, 1.5, 1e308, 9_007_199_254_740_993, '1', -2_147_483_649];
  return [
    ...common,
    '',
    '0000-01-01T00:00:00Z',
    '0001-01-01T00:00:00+14:00',
    '9999-12-31T23:59:59-14:00',
    '+275760-09-13T00:00:00.000Z',
    'x'.repeat(5000),
    '%',
    '\u202e\u0301',
    3_000_000_000,
    -1,
  ];
}

describe('requests generated from /openapi.json', () => {
  it('every JSON body refuses an unknown field, at the top and in each nested object, with 400 naming it and nothing changed', async () => {
    const ops = operations().filter((op) => op.jsonExample !== undefined);
    expect(ops.length).toBeGreaterThanOrEqual(15);
    let sent = 0;
    let freeForm = 0;
    for (const op of ops) {
      const url = urlOf(op, samplePath(op));
      for (const at of objectPaths(op.jsonExample)) {
        // A map the client names the keys of (metadata) takes any field; every other object is strict.
        const shape = schemaAt(op.jsonSchema, op.jsonExample, at);
        if (!shape.properties && shape.additionalProperties !== false) {
          freeForm++;
          continue;
        }
        const field = `unknownField_${sent}`;
        const body = withValueAt(op.jsonExample, at, (o) => ({ ...(o as object), [field]: 1 }));
        const res = await expectRefusedOrServed(op, url, body);
        expect(res.status, `${op.method} ${op.path} ${JSON.stringify(body)}`).toBe(400);
        expect(JSON.parse(res.text), `${op.method} ${op.path}`).toMatchObject({ error: 'body_invalid' });
        expect(JSON.parse(res.text).detail, `${op.method} ${op.path}`).toContain(field);
        sent++;
      }
    }
    console.log(`generated input: ${ops.length} JSON routes, ${sent} bodies with an unknown field (${freeForm} free-form maps left out)`);
  }, 300_000);

  it('out-of-range and malformed path, query and body values answer 4xx, never 5xx, and a refusal changes nothing', async () => {
    const ops = operations();
    let routes = 0;
    let parameters = 0;
    let requests = 0;
    for (const op of ops) {
      routes++;
      const path = samplePath(op);
      for (const p of op.params.filter((x) => x.in === 'path')) {
        parameters++;
        for (const v of HOSTILE_SEGMENTS) {
          await expectRefusedOrServed(op, urlOf(op, { ...path, [p.name]: v }), op.jsonExample);
          requests++;
        }
      }
      for (const p of op.params.filter((x) => x.in === 'query')) {
        parameters++;
        for (const v of HOSTILE_QUERY) {
          await expectRefusedOrServed(op, urlOf(op, path, [[p.name, v]]), op.jsonExample);
          requests++;
        }
        // The parameter twice.
        await expectRefusedOrServed(
          op,
          urlOf(op, path, [
            [p.name, '1'],
            [p.name, '2'],
          ]),
          op.jsonExample,
        );
        requests++;
      }
      if (op.jsonExample === undefined) continue;
      for (const { at, sample } of bodyFields(op)) {
        parameters++;
        for (const v of hostileBodyValues(sample)) {
          await expectRefusedOrServed(
            op,
            urlOf(op, path),
            withValueAt(op.jsonExample, at, () => v),
          );
          requests++;
        }
      }
    }
    console.log(`generated input: ${routes} routes, ${parameters} path, query and body parameters, ${requests} requests`);
    expect(routes).toBeGreaterThanOrEqual(60);
  }, 900_000);

  it('the database refusing a value is bad input (400); the database failing is an outage (503)', async () => {
    const { pool } = stack.runtime;
    for (const [sql, params] of [
      ['SELECT $1::int', ['3000000000']],
      ['SELECT $1::timestamptz', ['0000-01-01T00:00:00Z']],
      ["SELECT timestamptz 'epoch' + $1::bigint * interval '1 microsecond'", ['9223372036854775807']],
      ['SELECT $1::uuid', ['not-a-uuid']],
    ] as const) {
      const err = await dependency('database_unavailable', () => pool.query(sql, [...params])).catch((e: unknown) => e);
      expect(err, sql).toBeInstanceOf(Problem);
      expect((err as Problem).code, sql).toBe('value_out_of_range');
      expect((err as Problem).status).toBe(400);
    }
    const down = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none', connectionTimeoutMillis: 2000 });
    const err = await dependency('database_unavailable', () => down.query('SELECT 1')).catch((e: unknown) => e);
    await down.end();
    expect((err as Problem).code).toBe('database_unavailable');
    expect((err as Problem).status).toBe(503);
  });

  it('every list route pages: limit and cursor documented, pages that repeat and skip nothing, a forged cursor refused', async () => {
    const lister = await stack.createTenant('lister');
    const as = { authorization: `Bearer ${lister.apiKey}`, 'content-type': 'application/json' };
    const create = async (path: string, body: unknown) => {
      const res = await fetch(`${stack.url}${path}`, { method: 'POST', headers: as, body: JSON.stringify(body) });
      expect(res.status, await res.clone().text()).toBe(201);
    };
    for (let i = 0; i < 4; i++) {
      await create('/v1/pipelines', { name: `p${i}`, steps: [] });
      await create('/v1/api-keys', { label: `k${i}` });
      await create('/v1/webhook-endpoints', { url: `http://127.0.0.1:9/hook${i}` });
      await create('/v1/image-presets', { name: `i${i}`, spec: `w_${10 + i}` });
      await create('/v1/upload-tokens', { expiresInSeconds: 600, subject: `s${i}` });
    }
    const arrays = Object.entries<any>(doc.paths)
      .filter(([path, item]) => path.startsWith('/v1/') && !path.includes('{') && item.get)
      .filter(([, item]) => {
        const schema = deref(item.get.responses['200']?.content?.['application/json']?.schema);
        return Object.values<any>(schema.properties ?? {}).some((p) => deref(p).type === 'array');
      });
    // A series over a bounded window (`from`, `to`: at most its maximum of buckets) is not a list to page.
    const windowed = ([, item]: [string, any]) =>
      ['from', 'to'].every((q) => (item.get.parameters ?? []).some((p: any) => p.in === 'query' && p.name === q));
    expect(arrays.filter(windowed).map(([path]) => path)).toEqual(['/v1/usage']);
    const lists = arrays.filter((entry) => !windowed(entry));
    expect(lists.map(([path]) => path).sort()).toEqual([
      '/v1/api-keys',
      '/v1/events',
      '/v1/image-presets',
      '/v1/import-batches',
      '/v1/pipelines',
      '/v1/reprocess-jobs',
      '/v1/storage-migrations',
      '/v1/storage-targets',
      '/v1/upload-tokens',
      '/v1/uploads',
      '/v1/webhook-endpoints',
    ]);
    for (const [path, item] of lists) {
      const query = (item.get.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name);
      expect(query, path).toEqual(expect.arrayContaining(['limit', 'cursor']));
      const schema = deref(item.get.responses['200'].content['application/json'].schema);
      expect(Object.keys(schema.properties), path).toContain('nextCursor');
      const field = Object.keys(schema.properties).find((k) => deref(schema.properties[k]).type === 'array')!;
      const idOf = (x: any) => x.id ?? x.name;
      const whole = (await getJson(`${stack.url}${path}?limit=100`, lister.apiKey)).json;
      expect(whole.nextCursor, path).toBeNull();
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: any = (await getJson(`${stack.url}${path}?limit=2${cursor ? `&cursor=${cursor}` : ''}`, lister.apiKey)).json;
        expect(page[field].length, path).toBeLessThanOrEqual(2);
        seen.push(...page[field].map(idOf));
        cursor = page.nextCursor;
        pages++;
      } while (cursor && pages < 50);
      expect(seen, path).toEqual(whole[field].map(idOf));
      const forged = await getJson(`${stack.url}${path}?cursor=${Buffer.from('Not A Cursor!').toString('base64url')}`, lister.apiKey);
      expect(forged.status, path).toBe(400);
      expect(forged.json.error).toBe('query_invalid');
    }
  });

  it('pipelines are capped per tenant (names and versions of a name): one more answers 409 and stores nothing', async () => {
    const capped = await stack.createTenant('capped');
    const declare = async (body: unknown) => {
      const res = await fetch(`${stack.url}/v1/pipelines`, {
        method: 'POST',
        headers: { authorization: `Bearer ${capped.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as any };
    };
    const rows = async () =>
      (await stack.runtime.pool.query('SELECT count(*)::int AS n FROM pipeline_versions WHERE tenant_id = $1', [capped.tenantId])).rows[0]
        .n;
    const fast = (width: number) => [{ type: 'image.variants', variants: [{ name: 'a', width, format: 'png' }] }];
    for (let v = 1; v <= 3; v++) expect((await declare({ name: 'grows', steps: fast(10 + v) })).json.version).toBe(v);
    const fourth = await declare({ name: 'grows', steps: fast(99) });
    expect(fourth.status).toBe(409);
    expect(fourth.json).toMatchObject({ error: 'quota_exceeded', limit: 3 });
    // The same steps as the latest version are that version, even at the cap.
    expect((await declare({ name: 'grows', steps: fast(13) })).status).toBe(200);
    for (let i = 1; i < 6; i++) expect((await declare({ name: `n${i}`, steps: [] })).status).toBe(201);
    const before = await rows();
    const seventh = await declare({ name: 'n6', steps: [] });
    expect(seventh.status).toBe(409);
    expect(seventh.json).toMatchObject({ error: 'quota_exceeded', limit: 6 });
    expect(await rows()).toBe(before);
    expect(
      (await stack.runtime.pool.query('SELECT 1 FROM pipeline_secrets WHERE tenant_id = $1 AND name = $2', [capped.tenantId, 'n6']))
        .rowCount,
    ).toBe(0);
  });
});
