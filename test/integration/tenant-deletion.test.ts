// Deleting a tenant on both stores: DELETE /admin/tenants/{id} erases every upload (its
// bytes, renditions and personal metadata), ends its open sessions, refuses its API keys and
// upload tokens, destroys every data key of its runs (their histories decode to "erased"),
// scrubs what it kept, and leaves the other tenants alone. An upload whose body was still
// arriving when the tenant closed is refused and leaves nothing. Bad requests get a
// problem and change nothing.
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { createApiKey } from '../../src/tenants';
import { uploadWorkflowId } from '../../src/temporal/ids';

import { OPERATOR_TENANT_ID } from '../../src/db/queries/tenants';
import { openRequest, postUpload } from '../helpers/http';
import { eventually, listKeys, openHistory } from '../helpers/inspect';
import { loadSecretBox } from '../../src/secret-box';
import { isStepLabel, PayloadKeyring, SealingCodec } from '../../src/codec/payload-codec';
import { payloadsIn } from '../../src/codec/payloads-in';
import { png } from '../helpers/media';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { importWorkflowIds } from '../../src/imports/contract';

const ADMIN = `admin-${randomUUID()}`;

describe.each(['s3', 'local'] as const)('deleting a tenant on the %s store', (kind) => {
  let stack: TestStack;
  let silent: net.Server;
  const sockets = new Set<net.Socket>();
  beforeAll(async () => {
    // The import origin below is on 127.0.0.1.
    stack = await startStackOnStore(kind, `tenant_delete_${kind}`, { env: { ADMIN_TOKEN: ADMIN, IMPORT_ALLOW_PRIVATE_NETWORKS: 'true' } });
    // An origin that takes a connection and never answers: an import batch from it stays running.
    silent = net.createServer((socket) => sockets.add(socket.on('close', () => sockets.delete(socket))));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    silent?.close();
    await stack?.stop();
  });

  const call = async (method: string, pathname: string, token: string, o: { json?: unknown; headers?: Record<string, string> } = {}) => {
    const res = await fetch(`${stack.url}${pathname}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(o.json !== undefined ? { 'content-type': 'application/json' } : {}), ...o.headers },
      body: o.json === undefined ? undefined : JSON.stringify(o.json),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
  };
  const count = async (sql: string, tenantId: string) => Number((await stack.runtime.pool.query(sql, [tenantId])).rows[0].n);

  it('erases its uploads, sessions, credentials and data keys, and leaves other tenants alone', async () => {
    const doomed = await stack.createTenant('doomed');
    const kept = await stack.createTenant('kept');
    const keys = [`td-${randomUUID()}`, `td-${randomUUID()}`];
    // A console session of the tenant: it ends with the tenant and its row goes with the erasure.
    const signIn = await fetch(`${stack.url}/console/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.url, 'user-agent': 'doomed-browser' },
      body: new URLSearchParams({ secret: doomed.apiKey }),
      redirect: 'manual',
    });
    expect(signIn.status).toBe(303);
    const consoleCookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const picture = await postUpload(stack.url, {
      apiKey: doomed.apiKey,
      key: keys[0]!,
      body: await png(64, 48),
      contentType: 'image/png',
    });
    expect(picture.status, picture.text).toBe(201);
    const named = await postUpload(stack.url, {
      apiKey: doomed.apiKey,
      key: keys[1]!,
      body: Buffer.from('a letter\n'),
      contentType: 'text/plain',
      fileName: 'letter-to-alice.txt',
    });
    expect(named.status, named.text).toBe(201);
    const minted = await call('POST', '/v1/upload-tokens', doomed.apiKey, {
      json: { expiresInSeconds: 900, subject: 'alice@example.com', metadata: { album: 'holidays' } },
      headers: { 'idempotency-key': `td-${randomUUID()}` },
    });
    expect(minted.status, minted.text).toBe(201);
    // A tus session with half its bytes: open when the tenant goes.
    const sessionKey = `td-${randomUUID()}`;
    const tus = { authorization: `Bearer ${doomed.apiKey}`, 'tus-resumable': '1.0.0' };
    const created = await fetch(`${stack.url}/v1/tus`, {
      method: 'POST',
      headers: { ...tus, 'upload-length': '10', 'idempotency-key': sessionKey },
    });
    expect(created.status).toBe(201);
    const patched = await fetch(`${stack.url}${created.headers.get('location')}`, {
      method: 'PATCH',
      headers: { ...tus, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: 'half!',
    });
    expect(patched.status).toBe(204);
    // An import batch whose one item waits on an origin that never answers: running when the tenant goes.
    const { port } = silent.address() as net.AddressInfo;
    const batch = await call('POST', '/v1/import-batches', doomed.apiKey, {
      json: { items: [{ url: `http://127.0.0.1:${port}/never` }], concurrency: 1 },
      headers: { 'idempotency-key': `td-${randomUUID()}` },
    });
    expect(batch.status, batch.text).toBe(202);
    await eventually(async () => sockets.size > 0, 30_000);
    const other = await postUpload(stack.url, {
      apiKey: kept.apiKey,
      key: `td-${randomUUID()}`,
      body: Buffer.from('kept\n'),
      contentType: 'text/plain',
    });
    expect(other.status).toBe(201);
    await eventually(
      async () => (await call('GET', `/v1/uploads/${picture.json.uploadId}`, doomed.apiKey)).json.status === 'processed',
      60_000,
    );
    expect((await listKeys(stack.runtime.store, `tenants/${doomed.tenantId}/`)).length).toBeGreaterThan(2);

    const deleted = await call('DELETE', `/admin/tenants/${doomed.tenantId}`, ADMIN, { headers: { prefer: 'wait=120' } });
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.json).toMatchObject({ tenantId: doomed.tenantId, status: 'deleted', uploadsErased: 2, sessionsEnded: 1 });
    expect(deleted.json.dataKeysDestroyed).toBeGreaterThan(0);

    // Its credentials are refused; nothing of it is left in the store.
    expect((await call('GET', '/v1/uploads', doomed.apiKey)).status).toBe(401);
    expect(
      (
        await postUpload(stack.url, {
          apiKey: minted.json.token,
          key: `td-${randomUUID()}`,
          body: Buffer.from('x'),
          contentType: 'text/plain',
        })
      ).status,
    ).toBe(401);
    expect(await listKeys(stack.runtime.store, `tenants/${doomed.tenantId}/`)).toEqual([]);
    // Its rows: every upload tombstoned and erased, no session, no live data key, nothing personal kept.
    expect(
      await count(
        'SELECT count(*) AS n FROM uploads WHERE tenant_id = $1 AND (erased_at IS NULL OR file_name IS NOT NULL)',
        doomed.tenantId,
      ),
    ).toBe(0);
    expect(await count('SELECT count(*) AS n FROM resumable_sessions WHERE tenant_id = $1', doomed.tenantId)).toBe(0);
    expect(await count('SELECT count(*) AS n FROM console_sessions WHERE tenant_id = $1', doomed.tenantId)).toBe(0);
    const consolePage = await fetch(`${stack.url}/console/uploads`, { headers: { cookie: consoleCookie }, redirect: 'manual' });
    expect(consolePage.status).toBe(303);
    expect(consolePage.headers.get('location')).toMatch(/^\/console\/sign-in/);
    expect(await count('SELECT count(*) AS n FROM payload_keys WHERE tenant_id = $1 AND destroyed_at IS NULL', doomed.tenantId)).toBe(0);
    expect(
      await count(
        'SELECT count(*) AS n FROM upload_tokens WHERE tenant_id = $1 AND (subject IS NOT NULL OR revoked_at IS NULL)',
        doomed.tenantId,
      ),
    ).toBe(0);
    expect(
      await count(
        `SELECT count(*) AS n FROM tenants WHERE id = $1 AND name = '' AND closed_at IS NOT NULL AND erased_at IS NOT NULL`,
        doomed.tenantId,
      ),
    ).toBe(1);
    // The histories of its runs hold only ciphertext nobody can open: a client with a fresh
    // keyring (the stack's own may hold a key for its cache's minute) reads the marker.
    const box = await loadSecretBox(stack.config.SECRETS_KEY, stack.config.DATA_DIR);
    const codec = new SealingCodec(new PayloadKeyring(stack.runtime.pool, box));
    const fresh = new Client({ connection: stack.temporal.connection, dataConverter: { payloadCodecs: [codec] } });
    for (const key of keys) {
      const run = fresh.workflow.getHandle(uploadWorkflowId(doomed.tenantId, key));
      expect(await run.result()).toBe('erased');
      const opened = await openHistory(await run.fetchHistory(), codec);
      // Every payload but the steps' fixed labels (in clear: they carry no data).
      const texts = payloadsIn(opened)
        .filter((p) => !isStepLabel(p))
        .map((p) => Buffer.from(p.data ?? new Uint8Array()).toString());
      expect(new Set(texts)).toEqual(new Set(['"erased"']));
    }
    // A late write for it is refused by the database itself.
    await expect(createApiKey(stack.runtime.pool, doomed.tenantId, 'late')).rejects.toMatchObject({ code: 'ONC01' });

    // Its running batch was ended: its run terminated, its row closed.
    const batchRun = await stack.temporal.workflow.getHandle(importWorkflowIds.importBatch(batch.json.id)).describe();
    expect(batchRun.status.name).toBe('TERMINATED');
    expect((await stack.runtime.pool.query('SELECT state FROM import_batches WHERE id = $1', [batch.json.id])).rows[0].state).toBe(
      'cancelled',
    );

    // Read, deleted again, changed: it answers as deleted.
    const read = await call('GET', `/admin/tenants/${doomed.tenantId}`, ADMIN);
    expect(read.json).toMatchObject({ tenantId: doomed.tenantId, status: 'deleted', name: '' });
    expect((await call('DELETE', `/admin/tenants/${doomed.tenantId}`, ADMIN)).json).toMatchObject({ status: 'deleted' });
    const patch = await call('PATCH', `/admin/tenants/${doomed.tenantId}`, ADMIN, { json: { retentionDays: 3 } });
    expect([patch.status, patch.json.error]).toEqual([410, 'tenant_deleted']);

    // The other tenant is untouched; the invariants hold.
    const content = await fetch(`${stack.url}/v1/uploads/${other.json.uploadId}/content`, {
      headers: { authorization: `Bearer ${kept.apiKey}` },
    });
    expect([content.status, await content.text()]).toEqual([200, 'kept\n']);
    expect((await call('GET', `/admin/tenants/${kept.tenantId}`, ADMIN)).json).toMatchObject({ status: 'active', closedAt: null });
    const report = await audit(stack.runtime.pool, stack.runtime.store);
    expect(report.violations).toEqual([]);
  });

  it('refuses an upload whose body was still arriving when the tenant closed, and keeps none of it', async () => {
    const doomed = await stack.createTenant('late');
    const key = `td-late-${randomUUID()}`;
    const body = Buffer.from('late bytes, sent after the tenant closed\n');
    const req = openRequest(
      stack.url,
      `POST /v1/uploads HTTP/1.1\nHost: x\nAuthorization: Bearer ${doomed.apiKey}\nIdempotency-Key: ${key}\nContent-Type: text/plain\nContent-Length: ${body.length}\n\n`,
    );
    await req.send(body.subarray(0, 10));
    // The request is being received (authenticated, its body streaming to its copy).
    const inFlight = async () => Number(/^oncely_uploads_in_flight (\S+)$/m.exec(await (await fetch(`${stack.url}/metrics`)).text())?.[1]);
    await eventually(async () => (await inFlight()) === 1, 30_000);
    const deleted = await call('DELETE', `/admin/tenants/${doomed.tenantId}`, ADMIN, { headers: { prefer: 'wait=120' } });
    expect(deleted.json).toMatchObject({ status: 'deleted', uploadsErased: 0 });
    await req.send(body.subarray(10));
    const answer = await req.response;
    expect([answer?.status, JSON.parse(answer?.body ?? '{}').error]).toEqual([410, 'tenant_deleted']);
    expect(await count('SELECT count(*) AS n FROM uploads WHERE tenant_id = $1', doomed.tenantId)).toBe(0);
    expect(await count('SELECT count(*) AS n FROM idempotency_keys WHERE tenant_id = $1', doomed.tenantId)).toBe(0);
    await eventually(async () => (await listKeys(stack.runtime.store, `tenants/${doomed.tenantId}/`)).length === 0, 30_000);
  });

  it('answers a problem for every bad request and deletes nothing', async () => {
    const t = await stack.createTenant('bystander');
    for (const [pathname, token, status, error] of [
      [`/admin/tenants/${randomUUID()}`, ADMIN, 404, 'not_found'],
      ['/admin/tenants/not-a-uuid', ADMIN, 404, 'not_found'],
      [`/admin/tenants/${OPERATOR_TENANT_ID}`, ADMIN, 404, 'not_found'],
      [`/admin/tenants/${t.tenantId}`, 'wrong-token-wrong-token-wrong', 401, 'unauthorized'],
      [`/admin/tenants/${t.tenantId}`, t.apiKey, 401, 'unauthorized'],
    ] as const) {
      for (const method of ['DELETE', 'GET']) {
        const res = await call(method, pathname, token);
        expect([method, pathname, res.status, res.json?.error, res.headers.get('content-type')]).toEqual([
          method,
          pathname,
          status,
          error,
          'application/problem+json',
        ]);
      }
    }
    // Unknown settings fields are refused, the tenant unchanged.
    const unknown = await call('PATCH', `/admin/tenants/${t.tenantId}`, ADMIN, { json: { retentionDays: 3, owner: 'x' } });
    expect([unknown.status, unknown.json.error]).toEqual([400, 'body_invalid']);
    expect((await call('GET', `/admin/tenants/${t.tenantId}`, ADMIN)).json).toMatchObject({ retentionDays: null });
    expect((await call('GET', '/v1/uploads', t.apiKey)).status).toBe(200);
    expect((await call('GET', `/admin/tenants/${t.tenantId}`, ADMIN)).json).toMatchObject({ status: 'active' });
  });
});
