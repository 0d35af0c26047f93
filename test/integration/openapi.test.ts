// The OpenAPI document and the running API agree: /openapi.json validates as OpenAPI 3.1,
// lists exactly the routes the app serves, every request header it reads and every problem
// type in the catalogue; real answers have the documented shapes; /docs serves its page.
import SwaggerParser from '@apidevtools/swagger-parser';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUEST_HEADERS } from '../../src/api/app';
import { ApiKeyCreated, ApiKeyList, Health, IdempotencyKeyState, Readiness, UploadDetail, UploadList } from '../../src/api/schemas';
import { TenantCreated } from '../../src/api/tenant-schemas';
import { DownloadUrl } from '../../src/downloads/schemas';
import { WebhookEndpointCreated, WebhookEndpointList } from '../../src/api/webhook-schemas';
import { ProblemDetails, UploadCreated } from '../../src/http/schemas';
import { catalogue } from '../../src/errors';
import { SECRET_FIELDS, SHOWN_ONCE } from '../../src/http/redact';
import { SCOPES } from '../../src/credentials';
import { schemeOf } from '../../src/http/scopes';
import { startTestStack, type TestStack } from '../helpers/stack';
import { getJson, postUpload } from '../helpers/http';
import type { z } from 'zod';

const ADMIN_TOKEN = `admin-${randomUUID()}`;
let stack: TestStack;
let apiKey: string;
let doc: any;

beforeAll(async () => {
  stack = await startTestStack('openapi', { env: { ADMIN_TOKEN } });
  ({ apiKey } = await stack.createTenant());
  doc = (await getJson(`${stack.url}/openapi.json`)).json;
});
afterAll(() => stack?.stop());

/** The answer parses with the schema and carries no field the schema does not document. */
function conforms(schema: z.ZodObject, body: unknown) {
  const parsed = schema.safeParse(body);
  expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
  expect(Object.keys(body as object).sort()).toEqual(Object.keys(schema.shape).sort());
}

describe('the document', () => {
  it('validates as OpenAPI 3.1', async () => {
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
  });

  it('is the committed document (a change to the API rewrites test/fixtures/openapi.json with vitest -u, and shows in review)', async () => {
    await expect(`${JSON.stringify(doc, null, 1)}\n`).toMatchFileSnapshot('../fixtures/openapi.json');
  });

  it('lists exactly the routes the app serves', () => {
    // The console's pages are for people, not API clients: docs/console.md describes them.
    const served = new Set(
      stack.runtime
        .app!.routes.filter((r) => r.method !== 'ALL' && !r.path.startsWith('/console'))
        .map((r) => `${r.method} ${r.path.replaceAll(/:(\w+)/g, '{$1}')}`),
    );
    const documented = new Set(
      Object.entries(doc.paths as Record<string, object>).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`)),
    );
    // Hono answers HEAD with the GET handler: a documented HEAD is served when its GET is.
    for (const op of [...documented]) if (op.startsWith('HEAD ') && served.has(op.replace(/^HEAD/, 'GET'))) served.add(op);
    expect([...documented].sort()).toEqual([...served].sort());
    for (const must of [
      'POST /v1/uploads',
      'GET /v1/uploads/{id}',
      'GET /v1/idempotency-keys/{key}',
      'POST /v1/webhook-endpoints',
      'POST /v1/api-keys',
      'POST /admin/tenants',
      'GET /openapi.json',
      'GET /metrics',
    ]) {
      expect(served, must).toContain(must);
    }
  });

  it('documents every request header the API reads, and the bearer schemes', () => {
    const documented = new Set<string>();
    for (const ops of Object.values(doc.paths as Record<string, Record<string, any>>)) {
      for (const op of Object.values(ops)) for (const p of op.parameters ?? []) if (p.in === 'header') documented.add(p.name.toLowerCase());
    }
    for (const h of REQUEST_HEADERS) if (h !== 'Authorization') expect(documented, h).toContain(h.toLowerCase());
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['adminToken', 'uploadToken', ...SCOPES.map(schemeOf)].sort());
    expect(doc.paths['/v1/uploads'].post.security).toEqual([{ 'key.uploads.write': [] }, { uploadToken: [] }]);
    expect(doc.paths['/v1/uploads'].get.security).toEqual([{ 'key.uploads.read': [] }]);
    expect(doc.paths['/v1/uploads'].post.parameters.find((p: any) => p.name === 'idempotency-key').required).toBe(true);
  });

  it('names every problem type of the catalogue on some route', () => {
    const mentioned = new Set<string>();
    for (const ops of Object.values(doc.paths as Record<string, Record<string, any>>)) {
      for (const op of Object.values(ops)) {
        for (const [status, r] of Object.entries(op.responses as Record<string, any>)) {
          if (!r.content?.['application/problem+json']) continue;
          for (const m of String(r.description).matchAll(/`([a-z_]+)`/g)) {
            mentioned.add(m[1]!);
            expect(catalogue[m[1]! as keyof typeof catalogue]?.status, `${m[1]} under ${status}`).toBe(Number(status));
          }
        }
      }
    }
    expect([...mentioned].sort()).toEqual(Object.keys(catalogue).sort());
    expect(doc.components.schemas.Problem.properties.error.enum.sort()).toEqual(Object.keys(catalogue).sort());
  });

  it('marks every secret shown once, and the redaction list names exactly those fields', () => {
    const marked = new Set<string>();
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(walk);
      if (node === null || typeof node !== 'object') return;
      const props = (node as { properties?: Record<string, Record<string, unknown>> }).properties;
      for (const [name, schema] of Object.entries(props ?? {})) if (schema[SHOWN_ONCE] === true) marked.add(name);
      Object.values(node).forEach(walk);
    };
    walk(doc);
    expect([...marked].sort()).toEqual([...SECRET_FIELDS].sort());
  });

  it('states both key windows and describes the outgoing webhooks', () => {
    expect(doc.info.description).toMatch(/24 h/);
    expect(doc.info.description).toMatch(/168 h/);
    expect(Object.keys(doc.webhooks).sort()).toEqual([
      'storage_migration.cancelled',
      'storage_migration.completed',
      'upload.completed',
      'upload.deleted',
      'upload.hold_placed',
      'upload.hold_released',
      'upload.processed',
      'upload.rejected',
      'upload.restored',
      'upload.updated',
    ]);
  });
});

describe('real answers have the documented shapes', () => {
  it('uploads, key state, problems and health', async () => {
    const key = `openapi-${randomUUID()}`;
    const created = await postUpload(stack.url, {
      apiKey,
      key,
      body: Buffer.from('shape check'),
      contentType: 'text/plain',
      fileName: 'a.txt',
    });
    expect(created.status).toBe(201);
    conforms(UploadCreated, created.json);
    const detail = await getJson(`${stack.url}/v1/uploads/${created.json.uploadId}?wait=30`, apiKey);
    conforms(UploadDetail, detail.json);
    conforms(UploadList, (await getJson(`${stack.url}/v1/uploads?limit=2`, apiKey)).json);
    const link = await fetch(`${stack.url}/v1/uploads/${created.json.uploadId}/download-urls`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: '{}',
    });
    conforms(DownloadUrl, await link.json());
    const state = await getJson(`${stack.url}/v1/idempotency-keys/${key}`, apiKey);
    expect(IdempotencyKeyState.safeParse(state.json).success).toBe(true);
    const bad = await postUpload(stack.url, { apiKey, key: 'short', body: Buffer.from('x') });
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
    expect(ProblemDetails.safeParse(bad.json).success).toBe(true);
    conforms(Health, (await getJson(`${stack.url}/healthz`)).json);
    conforms(Readiness, (await getJson(`${stack.url}/readyz`)).json);
  });

  it('webhook endpoints, API keys and tenants', async () => {
    const post = (path: string, body: unknown, token = apiKey): Promise<any> =>
      fetch(`${stack.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((r) => r.json());
    conforms(WebhookEndpointCreated, await post('/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/hook' }));
    conforms(WebhookEndpointList, (await getJson(`${stack.url}/v1/webhook-endpoints`, apiKey)).json);
    conforms(ApiKeyCreated, await post('/v1/api-keys', { label: 'shape' }));
    conforms(ApiKeyList, (await getJson(`${stack.url}/v1/api-keys`, apiKey)).json);
    const tenant = await post('/admin/tenants', { name: 'Shape Co' }, ADMIN_TOKEN);
    conforms(TenantCreated, tenant);
    conforms(ApiKeyCreated, tenant.apiKey);
  });
});

describe('the docs page', () => {
  it('serves Swagger UI from local assets, not a CDN', async () => {
    const page = await fetch(`${stack.url}/docs`);
    const html = await page.text();
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(html).toContain('/openapi.json');
    expect(html).not.toMatch(/https?:\/\//);
    const js = await fetch(`${stack.url}/docs/assets/swagger-ui-bundle.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toContain('javascript');
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
    const missing = await fetch(`${stack.url}/docs/assets/..%2Fpackage.json`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: string }).error).toBe('not_found');
  });
});
