// The upload's own record over real HTTP on both stores: metadata and tags through every
// door (fingerprinted with the request, the token's metadata merged), PATCH under If-Match
// (one winner among concurrent changes, a retry answered with the version it made, one
// upload.updated per version), versions, the list's label filters, and erasure taking it all.
import { randomBytes, randomUUID } from 'node:crypto';
import * as tus from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { dueUploads } from '../../src/db/queries/deletions';
import { getJson, postUpload, sha256 } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { startFileOrigin } from '../support/file-origin';
import { WebhookReceiver } from '../support/webhook-receiver';

const ADMIN = `admin-${randomUUID()}`;

describe.each(['local', 's3'] as const)("the upload's record on the %s store", (kind) => {
  let stack: TestStack;
  let tenant: { tenantId: string; apiKey: string };
  const receiver = new WebhookReceiver();
  beforeAll(async () => {
    stack = await startStackOnStore(kind, `record_${kind}`, {
      // Four versions per record: the PATCH test reaches the cap.
      env: { IMPORT_ALLOW_PRIVATE_NETWORKS: 'true', ADMIN_TOKEN: ADMIN, RECORD_MAX_VERSIONS: '4' },
    });
    tenant = await stack.createTenant('record');
    await receiver.start();
    const endpoint = await call('POST', '/v1/webhook-endpoints', { url: receiver.url });
    expect(endpoint.status).toBe(201);
    receiver.secret = endpoint.json.secret;
  });
  afterAll(async () => {
    await stack?.stop();
    await receiver.stop();
  });

  async function call(method: string, pathname: string, json?: unknown, headers: Record<string, string> = {}, apiKey = tenant.apiKey) {
    const res = await fetch(`${stack.url}${pathname}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: json !== undefined ? JSON.stringify(json) : undefined,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
  }
  const labelled = (door: string) => ({ metadata: { door, nested: { n: 1 } }, tags: [`door-${door}`, 'every-door'] });
  const headersOf = (door: string) => ({ 'x-metadata': JSON.stringify(labelled(door).metadata), 'x-tags': labelled(door).tags.join(',') });

  it('every door carries metadata and tags; the same key with other metadata is 422', async () => {
    const ids: Record<string, string> = {};
    // The one-request door: X-Metadata and X-Tags.
    const one = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `rec-${randomUUID()}`,
      body: Buffer.from('one'),
      headers: headersOf('upload'),
    });
    expect(one.status, one.text).toBe(201);
    ids.upload = one.json.uploadId;
    // A form: the metadata and tags fields.
    const form = new FormData();
    form.append('idempotencyKey', `rec-form-${randomUUID()}`);
    form.append('metadata', JSON.stringify(labelled('form').metadata));
    form.append('tags', labelled('form').tags.join(','));
    form.append('file', new Blob([Buffer.from('a form')], { type: 'text/plain' }), 'form.txt');
    const posted = await fetch(`${stack.url}/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}` },
      body: form,
    });
    expect(posted.status).toBe(201);
    ids.form = ((await posted.json()) as { uploadId: string }).uploadId;
    // tus: Upload-Metadata's metadata and tags; the IETF draft: the headers.
    for (const [door, endpoint, extra] of [
      ['tus', '/v1/tus', {}],
      ['rufh', '/v1/uploads', { protocol: 'ietf-draft-05' }],
    ] as const) {
      const key = `rec-${door}-${randomUUID()}`;
      await new Promise<void>((resolve, reject) =>
        new tus.Upload(randomBytes(70_000), {
          endpoint: `${stack.url}${endpoint}`,
          ...(extra as Partial<tus.UploadOptions>),
          headers: { authorization: `Bearer ${tenant.apiKey}`, 'idempotency-key': key, ...(door === 'rufh' ? headersOf(door) : {}) },
          metadata: {
            filename: `${door}.bin`,
            ...(door === 'tus' ? { metadata: JSON.stringify(labelled(door).metadata), tags: labelled(door).tags.join(',') } : {}),
          },
          onSuccess: () => resolve(),
          onError: reject,
        }).start(),
      );
      ids[door] = (await call('GET', `/v1/idempotency-keys/${key}`)).json.response.uploadId;
    }
    // A direct upload: the plan's body.
    const direct = randomBytes(50_000);
    const plan = await call(
      'POST',
      '/v1/direct-uploads',
      { bytes: direct.length, sha256: sha256(direct), ...labelled('direct') },
      {
        'idempotency-key': `rec-direct-${randomUUID()}`,
      },
    );
    expect(plan.status).toBe(201);
    const put = await fetch(new URL(plan.json.upload.url, stack.url), { method: 'PUT', headers: plan.json.upload.headers, body: direct });
    expect(put.status).toBe(200);
    const completed = await call('POST', `/v1/direct-uploads/${plan.json.id}/complete`);
    expect(completed.status).toBe(201);
    ids.direct = completed.json.uploadId;
    // Uppy's form path: the params carry them into the form's fields.
    const endpoint = (await call('POST', '/v1/uppy-endpoints')).json.companionEndpoint as string;
    const q = new URLSearchParams({
      filename: 'uppy.txt',
      'metadata[idempotencyKey]': `rec-uppy-${randomUUID()}`,
      'metadata[metadata]': JSON.stringify(labelled('uppy').metadata),
      'metadata[tags]': labelled('uppy').tags.join(','),
    });
    const params = (await call('GET', `${endpoint}/s3/params?${q}`)).json as { url: string; fields: Record<string, string> };
    const uppyForm = new FormData();
    for (const [k, v] of Object.entries(params.fields)) uppyForm.append(k, v);
    uppyForm.append('file', new Blob([Buffer.from('via uppy')], { type: 'text/plain' }), 'uppy.txt');
    const uppyPosted = await fetch(new URL(params.url, stack.url), { method: 'POST', body: uppyForm });
    expect(uppyPosted.status, await uppyPosted.clone().text()).toBeLessThan(300);
    ids.uppy = (await call('GET', `/v1/uploads?tag=door-uppy`)).json.items[0]?.uploadId;
    // An import: its body.
    const origin = await startFileOrigin(randomBytes(20_000));
    try {
      const imported = await call(
        'POST',
        '/v1/imports',
        { url: `${origin.base}/f.bin`, ...labelled('import') },
        {
          'idempotency-key': `rec-import-${randomUUID()}`,
          prefer: 'wait=60',
        },
      );
      expect(imported.status).toBe(201);
      ids.import = imported.json.uploadId;
    } finally {
      await origin.close();
    }
    for (const [door, id] of Object.entries(ids)) {
      const got = await call('GET', `/v1/uploads/${id}`);
      expect(got.status, door).toBe(200);
      expect(got.json, door).toMatchObject({ ...labelled(door), tags: [...labelled(door).tags].sort(), version: 1 });
      expect(got.headers.get('etag'), door).toBe('"1"');
    }
    expect(
      (await call('GET', '/v1/uploads?tag=every-door&limit=100')).json.items.map((u: { uploadId: string }) => u.uploadId).sort(),
    ).toEqual(Object.values(ids).sort());
    // The same key, the same bytes, other metadata: another request.
    const key = `rec-again-${randomUUID()}`;
    const first = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('same'), headers: headersOf('a') });
    expect(first.status).toBe(201);
    const reordered = { 'x-metadata': JSON.stringify({ nested: { n: 1 }, door: 'a' }), 'x-tags': 'every-door,door-a' };
    const replay = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('same'), headers: reordered });
    expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    const other = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body: Buffer.from('same'), headers: headersOf('b') });
    expect([other.status, other.json.error]).toEqual([422, 'idempotency_key_reuse']);
  });

  it("bad metadata and tags are refused at every door before a byte is kept; a token's metadata is fixed", async () => {
    const before = (await call('GET', '/v1/uploads?limit=100')).json.items.length;
    for (const [headers, fault] of [
      [{ 'x-metadata': '[1,2]' }, 'metadata must be a JSON object'],
      [{ 'x-metadata': '{"a":' }, 'not valid JSON'],
      [{ 'x-metadata': JSON.stringify({ a: { b: { c: { d: { e: 1 } } } } }) }, 'levels deep'],
      [{ 'x-metadata': JSON.stringify({ ['k'.repeat(65)]: 1 }) }, 'keys are 1-64'],
      [{ 'x-tags': 'ok,<bad>' }, 'A tag is'],
      [{ 'x-tags': Array.from({ length: 33 }, (_, i) => `t${i}`).join(',') }, 'at most 32'],
    ] as const) {
      const res = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `rec-bad-${randomUUID()}`, body: Buffer.from('x'), headers });
      expect([res.status, res.json.error]).toEqual([400, 'header_invalid']);
      expect(res.json.detail).toContain(fault);
    }
    const big = await call(
      'POST',
      '/v1/direct-uploads',
      { bytes: 1, sha256: sha256('x'), metadata: { blob: 'x'.repeat(17_000) } },
      {
        'idempotency-key': `rec-bad-${randomUUID()}`,
      },
    );
    expect([big.status, big.json.error]).toEqual([400, 'body_invalid']);
    expect((await call('GET', '/v1/uploads?limit=100')).json.items.length).toBe(before);
    // An upload token's metadata is merged over the upload's; another value for its key is 403.
    const minted = await call(
      'POST',
      '/v1/upload-tokens',
      { metadata: { album: 'fixed' } },
      { 'idempotency-key': `rec-tok-${randomUUID()}` },
    );
    expect(minted.status).toBe(201);
    const refused = await postUpload(stack.url, {
      apiKey: minted.json.token,
      key: `rec-tok-${randomUUID()}`,
      body: Buffer.from('t'),
      headers: { 'x-metadata': '{"album":"mine"}' },
    });
    expect([refused.status, refused.json.error]).toEqual([403, 'metadata_not_allowed']);
    const merged = await postUpload(stack.url, {
      apiKey: minted.json.token,
      key: `rec-tok-${randomUUID()}`,
      body: Buffer.from('t'),
      headers: { 'x-metadata': '{"album":"fixed","rating":4}', 'x-tags': 'mine' },
    });
    expect(merged.status, merged.text).toBe(201);
    expect((await call('GET', `/v1/uploads/${merged.json.uploadId}`)).json).toMatchObject({
      metadata: { album: 'fixed', rating: 4 },
      tags: ['mine'],
    });
  });

  it('PATCH under If-Match: 428 without, one winner of two, a retry answered with its version, one upload.updated per version', async () => {
    const up = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `rec-patch-${randomUUID()}`,
      body: Buffer.from('patch me'),
      headers: { 'x-metadata': '{"state":"draft"}', 'x-tags': 'draft' },
    });
    const id = up.json.uploadId as string;
    const patch = (body: unknown, ifMatch?: string, headers: Record<string, string> = {}) =>
      call('PATCH', `/v1/uploads/${id}`, body, { ...(ifMatch ? { 'if-match': ifMatch } : {}), ...headers });
    expect((await patch({ tags: ['x'] })).json.error).toBe('record_version_required');
    expect((await patch({ tags: ['x'] }, 'v1')).json.error).toBe('header_invalid');
    expect((await patch({}, '"1"')).json.error).toBe('body_invalid');
    expect((await patch({ metadata: [1] }, '"1"')).json.error).toBe('body_invalid');
    expect((await call('GET', `/v1/uploads/${id}`)).json.version).toBe(1);
    // Two changes from version 1 at once: one wins, the other is told the record moved on.
    const [a, b] = await Promise.all([patch({ metadata: { state: 'final' } }, '"1"'), patch({ tags: ['other'] }, '"1"')]);
    expect([a.status, b.status].sort()).toEqual([200, 412]);
    const [won, lost] = a.status === 200 ? [a, b] : [b, a];
    expect(won.json.version).toBe(2);
    expect(won.headers.get('etag')).toBe('"2"');
    expect(lost.json).toMatchObject({ error: 'record_version_stale', version: 2 });
    // The winner sent again (its answer lost): the version it made, replayed; no version 3.
    const again = await patch(a.status === 200 ? { metadata: { state: 'final' } } : { tags: ['other'] }, '"1"');
    expect([again.status, again.headers.get('idempotent-replayed'), again.json]).toEqual([200, 'true', won.json]);
    // With an Idempotency-Key: the stored answer, even after the record moved on.
    const key = `rec-pk-${randomUUID()}`;
    const third = await patch({ tags: ['published'] }, '"2"', { 'idempotency-key': key });
    expect(third.json).toMatchObject({ version: 3, tags: ['published'] });
    expect((await patch({ tags: ['published'] }, '"2"', { 'idempotency-key': key })).json).toEqual(third.json);
    const record = await call('GET', `/v1/uploads/${id}`);
    expect(record.headers.get('etag')).toBe('"3"');
    expect(record.json).toMatchObject({ version: 3, tags: ['published'] });
    const versions = await call('GET', `/v1/uploads/${id}/versions?limit=2`);
    expect(versions.json.items.map((v: { version: number }) => v.version)).toEqual([3, 2]);
    const rest = await call('GET', `/v1/uploads/${id}/versions?cursor=${versions.json.nextCursor}`);
    expect(rest.json).toMatchObject({
      items: [{ version: 1, changedBy: 'upload', metadata: { state: 'draft' }, tags: ['draft'] }],
      nextCursor: null,
    });
    expect(versions.json.items[0].changedBy).toMatch(/^key:/);
    // One upload.updated per version, each once, with the change.
    await eventually(
      async () => receiver.received.filter((r) => r.json?.data?.uploadId === id && r.json.type === 'upload.updated').length >= 2,
      60_000,
    );
    const updated = receiver.received.filter((r) => r.json?.data?.uploadId === id && r.json.type === 'upload.updated');
    expect(updated.map((r) => r.json.data.version).sort()).toEqual([2, 3]);
    expect(new Set(updated.map((r) => r.id)).size).toBe(2);
    expect(updated.find((r) => r.json.data.version === 3)!.json.data).toMatchObject({ tags: ['published'], previous: { version: 2 } });
    const events = await call('GET', `/v1/events?uploadId=${id}&type=upload.updated`);
    expect(events.json.items).toHaveLength(2);
    // RECORD_MAX_VERSIONS (4 here): the fourth version is made, a fifth is refused and changes nothing; the fourth's retry still replays.
    expect((await patch({ tags: ['last'] }, '"3"')).json.version).toBe(4);
    const full = await patch({ tags: ['one-too-many'] }, '"4"');
    expect([full.status, full.json.error, full.json.limit]).toEqual([409, 'quota_exceeded', 4]);
    expect((await call('GET', `/v1/uploads/${id}`)).json).toMatchObject({ version: 4, tags: ['last'] });
    expect((await patch({ tags: ['last'] }, '"3"')).headers.get('idempotent-replayed')).toBe('true');
  });

  it('the list filters by tags and metadata entries, paged; erasure removes the record, its versions and its labels', async () => {
    const album = `album-${randomUUID()}`;
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await postUpload(stack.url, {
        apiKey: tenant.apiKey,
        key: `rec-list-${randomUUID()}`,
        body: Buffer.from(`list ${i}`),
        headers: {
          'x-metadata': JSON.stringify({ album, index: i, even: i % 2 === 0 }),
          'x-tags': i % 2 === 0 ? 'even,listed' : 'odd,listed',
        },
      });
      made.push(res.json.uploadId);
    }
    const page = (q: string) => call('GET', `/v1/uploads?${q}`);
    const ids = (r: { json: { items: { uploadId: string }[] } }) => r.json.items.map((u) => u.uploadId);
    const albumQ = `metadata%5Balbum%5D=${album}`;
    const first = await page(`${albumQ}&limit=3`);
    const second = await page(`${albumQ}&limit=3&cursor=${first.json.nextCursor}`);
    expect([...ids(first), ...ids(second)]).toEqual([...made].reverse());
    expect(second.json.nextCursor).toBeNull();
    expect(ids(await page(`${albumQ}&tag=even`))).toEqual([made[4], made[2], made[0]]);
    expect(ids(await page(`${albumQ}&metadata%5Beven%5D=true&tag=listed,even`))).toEqual([made[4], made[2], made[0]]);
    expect(ids(await page(`${albumQ}&metadata%5Bindex%5D=3`))).toEqual([made[3]]);
    expect((await page('tag=<no>')).json.error).toBe('query_invalid');
    // A change moves the upload between filters at once.
    expect((await call('PATCH', `/v1/uploads/${made[0]}`, { tags: ['odd'] }, { 'if-match': '"1"' })).status).toBe(200);
    expect(ids(await page(`${albumQ}&tag=even`))).toEqual([made[4], made[2]]);
    // Erasure: nothing of the record stays.
    const deleted = await call('DELETE', `/v1/uploads/${made[0]}`, undefined, { prefer: 'wait=30' });
    expect(deleted.status).toBe(200);
    const db = stack.runtime.pool;
    const left = await db.query(
      `SELECT (SELECT count(*) FROM upload_versions WHERE upload_id = $1)::int AS versions,
              (SELECT count(*) FROM upload_labels WHERE upload_id = $1)::int AS labels,
              (SELECT metadata FROM uploads WHERE id = $1) AS metadata, (SELECT tags FROM uploads WHERE id = $1) AS tags`,
      [made[0]],
    );
    expect(left.rows[0]).toEqual({ versions: 0, labels: 0, metadata: null, tags: [] });
    expect((await call('GET', `/v1/uploads/${made[0]}/versions`)).json.error).toBe('upload_deleted');
    expect((await call('PATCH', `/v1/uploads/${made[0]}`, { tags: ['x'] }, { 'if-match': '"2"' })).json.error).toBe('upload_deleted');
    expect(ids(await page(albumQ))).not.toContain(made[0]);
    // A key without records:write may read, not change.
    const readOnly = await call('POST', '/v1/api-keys', { scopes: ['uploads:read'] }, { 'idempotency-key': `rec-key-${randomUUID()}` });
    const refused = await call('PATCH', `/v1/uploads/${made[1]}`, { tags: ['x'] }, { 'if-match': '"1"' }, readOnly.json.key);
    expect([refused.status, refused.json.error]).toEqual([403, 'insufficient_scope']);
    expect((await getJson(`${stack.url}/v1/uploads/${made[1]}/versions`, readOnly.json.key)).status).toBe(200);
  });
  it('the audit finds every record whole, and says so when its index or versions drift', async () => {
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
    const up = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `rec-audit-${randomUUID()}`,
      body: Buffer.from('audited'),
      headers: { 'x-tags': 'audited' },
    });
    const id = up.json.uploadId as string;
    expect((await call('PATCH', `/v1/uploads/${id}`, { tags: ['audited', 'twice'] }, { 'if-match': '"1"' })).status).toBe(200);
    const db = stack.runtime.pool;
    await db.query(`DELETE FROM upload_labels WHERE upload_id = $1 AND label = 't:twice'`, [id]);
    await db.query('UPDATE uploads SET record_version = 5 WHERE id = $1', [id]);
    const found = (await audit(db, stack.runtime.store)).violations.filter((v) => v.includes(id));
    expect(found).toEqual([
      `record: upload ${id} is at version 5 with 2 versions recorded, the last 2`,
      `record: upload ${id} is indexed under [t:audited], its record says [t:audited, t:twice]`,
    ]);
    await db.query(
      `INSERT INTO upload_labels (tenant_id, label, created_at, upload_id) SELECT tenant_id, 't:twice', created_at, id FROM uploads WHERE id = $1`,
      [id],
    );
    await db.query('UPDATE uploads SET record_version = 2 WHERE id = $1', [id]);
    expect((await audit(db, stack.runtime.store)).violations).toEqual([]);
    // A hold on an upload being erased (one that no path lets happen) is found.
    await db.query(`UPDATE uploads SET hold_reason = 'drift', deleted_at = now() WHERE id = $1`, [id]);
    expect((await audit(db, stack.runtime.store)).violations.filter((v) => v.startsWith('hold:'))).toEqual([
      `hold: held upload ${id} was erased or is being erased`,
    ]);
    await db.query('UPDATE uploads SET hold_reason = NULL, deleted_at = NULL WHERE id = $1', [id]);
    expect((await audit(db, stack.runtime.store)).violations).toEqual([]);
  });
  it('a legal hold: delete refused (409, batch says held), retention and expiry skip it, each change one event, release lets it go', async () => {
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const up = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `rec-hold-${randomUUID()}`,
      body: Buffer.from('held'),
      headers: { 'x-expires-at': expiresAt },
    });
    const id = up.json.uploadId as string;
    const hold = (reason: string) => call('PUT', `/v1/uploads/${id}/legal-hold`, { reason });
    expect((await call('PUT', `/v1/uploads/${id}/legal-hold`, {})).json.error).toBe('body_invalid');
    const placed = await hold('Matter 114');
    expect(placed.status).toBe(200);
    expect(placed.json).toMatchObject({ uploadId: id, legalHold: { reason: 'Matter 114', placedBy: expect.stringMatching(/^key:/) } });
    expect((await hold('Matter 114')).json).toEqual(placed.json);
    expect((await call('GET', `/v1/uploads/${id}`)).json.legalHold).toMatchObject({ reason: 'Matter 114' });
    const refused = await call('DELETE', `/v1/uploads/${id}`, undefined, { prefer: 'wait=10' });
    expect([refused.status, refused.json.error]).toEqual([409, 'legal_hold']);
    expect((await call('POST', '/v1/uploads/delete', { ids: [id] })).json.items).toEqual([{ uploadId: id, status: 'held' }]);
    // Past its own expiry, the sweep does not pick it.
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(expiresAt) - Date.now() + 200)));
    expect((await dueUploads(stack.runtime.pool, 10_000)).map((u) => u.id)).not.toContain(id);
    expect((await hold('Matter 115')).json.legalHold.reason).toBe('Matter 115');
    const released = await call('DELETE', `/v1/uploads/${id}/legal-hold`);
    expect(released.json).toEqual({ uploadId: id, legalHold: null, storeHold: 'unsupported' });
    expect((await call('DELETE', `/v1/uploads/${id}/legal-hold`)).json).toEqual({
      uploadId: id,
      legalHold: null,
      storeHold: 'unsupported',
    });
    expect((await dueUploads(stack.runtime.pool, 10_000)).map((u) => u.id)).toContain(id);
    const deleted = await call('DELETE', `/v1/uploads/${id}`, undefined, { prefer: 'wait=30' });
    expect([deleted.status, deleted.json.status]).toEqual([200, 'deleted']);
    expect((await hold('too late')).json.error).toBe('upload_deleted');
    // Placed, re-placed with another reason, released: three events, each once.
    const types = async () =>
      receiver.received.filter((r) => r.json?.data?.uploadId === id && r.json.type.startsWith('upload.hold_')).map((r) => r.json.type);
    await eventually(async () => (await types()).length >= 3, 60_000);
    expect((await types()).sort()).toEqual(['upload.hold_placed', 'upload.hold_placed', 'upload.hold_released']);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
    // The events' own wait is 60 s: the test's bound is above it, so a slow delivery is told from a lost one.
  }, 150_000);

  it('a hold raced against a delete leaves one outcome: held and whole, or deleted and never held', async () => {
    for (let i = 0; i < 6; i++) {
      const up = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `rec-race-${randomUUID()}`, body: Buffer.from(`race ${i}`) });
      const id = up.json.uploadId as string;
      const [held, deleted] = await Promise.all([
        call('PUT', `/v1/uploads/${id}/legal-hold`, { reason: 'race' }),
        call('DELETE', `/v1/uploads/${id}`, undefined, { prefer: 'wait=30' }),
      ]);
      const row = (await stack.runtime.pool.query('SELECT hold_reason, deleted_at, erased_at FROM uploads WHERE id = $1', [id])).rows[0];
      if (held.status === 200) {
        expect([deleted.status, deleted.json.error]).toEqual([409, 'legal_hold']);
        expect(row).toMatchObject({ hold_reason: 'race', deleted_at: null });
        expect(
          (await fetch(`${stack.url}/v1/uploads/${id}/content`, { headers: { authorization: `Bearer ${tenant.apiKey}` } })).status,
        ).toBe(200);
        expect((await call('DELETE', `/v1/uploads/${id}/legal-hold`)).status).toBe(200);
      } else {
        expect([held.status, held.json.error]).toEqual([410, 'upload_deleted']);
        expect(deleted.status).toBe(200);
        expect(row.hold_reason).toBeNull();
        expect(row.erased_at).not.toBeNull();
      }
    }
  });

  it('a held upload keeps its tenant: deletion refused with the count until it is released; the scope is its own', async () => {
    const doomed = await stack.createTenant('record-held-tenant');
    const up = await postUpload(stack.url, { apiKey: doomed.apiKey, key: `rec-ht-${randomUUID()}`, body: Buffer.from('kept') });
    const id = up.json.uploadId as string;
    const asDoomed = (method: string, path: string, json?: unknown) => call(method, path, json, {}, doomed.apiKey);
    const narrow = await asDoomed('POST', '/v1/api-keys', { scopes: ['uploads:read', 'uploads:delete'] });
    const noScope = await call('PUT', `/v1/uploads/${id}/legal-hold`, { reason: 'x' }, {}, narrow.json.key);
    expect([noScope.status, noScope.json.error]).toEqual([403, 'insufficient_scope']);
    expect((await asDoomed('PUT', `/v1/uploads/${id}/legal-hold`, { reason: 'audit 7' })).status).toBe(200);
    const admin = { authorization: `Bearer ${ADMIN}` };
    const refused = await fetch(`${stack.url}/admin/tenants/${doomed.tenantId}`, { method: 'DELETE', headers: admin });
    expect([refused.status, ((await refused.json()) as { error: string; heldUploads: number }).heldUploads]).toEqual([409, 1]);
    const tenants = (await (await fetch(`${stack.url}/admin/tenants?limit=100`, { headers: admin })).json()) as {
      items: { tenantId: string; status: string; usage: { heldUploads: number } }[];
    };
    expect(tenants.items.find((t) => t.tenantId === doomed.tenantId)).toMatchObject({ status: 'active', usage: { heldUploads: 1 } });
    expect((await asDoomed('DELETE', `/v1/uploads/${id}/legal-hold`)).status).toBe(200);
    const gone = await fetch(`${stack.url}/admin/tenants/${doomed.tenantId}`, {
      method: 'DELETE',
      headers: { ...admin, prefer: 'wait=120' },
    });
    expect([gone.status, ((await gone.json()) as { status: string }).status]).toEqual([200, 'deleted']);
  });
  it('a restore window: DELETE leaves it deleted_pending (bytes 410, key answers), a restore brings it back whole once; a purge erases at once', async () => {
    const owner = await stack.createTenant('record-grace');
    const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
    const set = await fetch(`${stack.url}/admin/tenants/${owner.tenantId}`, {
      method: 'PATCH',
      headers: admin,
      body: JSON.stringify({ deleteGraceHours: 1 }),
    });
    expect(((await set.json()) as { deleteGraceHours: number }).deleteGraceHours).toBe(1);
    const as = (method: string, path: string, json?: unknown, headers: Record<string, string> = {}) =>
      call(method, path, json, headers, owner.apiKey);
    const hook = await as('POST', '/v1/webhook-endpoints', { url: receiver.url });
    expect(hook.status).toBe(201);
    const key = `rec-grace-${randomUUID()}`;
    const body = Buffer.from('restorable');
    const up = await postUpload(stack.url, { apiKey: owner.apiKey, key, body, headers: { 'x-tags': 'kept' } });
    const id = up.json.uploadId as string;
    const content = () => fetch(`${stack.url}/v1/uploads/${id}/content`, { headers: { authorization: `Bearer ${owner.apiKey}` } });

    const deleted = await as('DELETE', `/v1/uploads/${id}`, undefined, { prefer: 'wait=5' });
    expect(deleted.status).toBe(202);
    expect(deleted.json).toMatchObject({ uploadId: id, status: 'deleted_pending', erasedAt: null });
    const until = Date.parse(deleted.json.restorableUntil);
    expect(until - Date.now()).toBeGreaterThan(3500 * 1000);
    expect(until - Date.now()).toBeLessThan(3700 * 1000);
    expect((await content()).status).toBe(410);
    expect((await as('GET', `/v1/uploads/${id}`)).json).toMatchObject({
      status: 'deleted_pending',
      restorableUntil: deleted.json.restorableUntil,
    });
    const listed = async (status: string) =>
      ((await as('GET', `/v1/uploads?status=${status}`)).json.items as { uploadId: string }[]).map((u) => u.uploadId);
    expect(await listed('deleted_pending')).toEqual([id]);
    expect(await listed('deleted')).toEqual([]);
    expect(await listed('committed')).toEqual([]);
    const replay = await postUpload(stack.url, { apiKey: owner.apiKey, key, body, headers: { 'x-tags': 'kept' } });
    expect([replay.status, replay.json.uploadId]).toEqual([201, id]);
    expect((await as('DELETE', `/v1/uploads/${id}`)).json).toEqual(deleted.json);

    const restored = await as('POST', `/v1/uploads/${id}/restore`);
    expect(restored.status).toBe(200);
    expect(restored.json).toMatchObject({ uploadId: id, restoredAt: expect.any(String) });
    expect((await content()).status).toBe(200);
    expect((await as('GET', `/v1/uploads/${id}`)).json).toMatchObject({
      status: restored.json.status,
      tags: ['kept'],
      restorableUntil: null,
      deletedAt: null,
    });
    expect((await as('POST', `/v1/uploads/${id}/restore`)).json).toMatchObject({ uploadId: id, restoredAt: null });
    expect(await listed('deleted_pending')).toEqual([]);
    expect(await listed(restored.json.status)).toEqual([id]);
    await eventually(async () => receiver.received.some((r) => r.json?.type === 'upload.restored' && r.json.data.uploadId === id), 60_000);

    // Deleted again: a new window. A hold within it stops a purge; released, the purge erases at once.
    expect((await as('DELETE', `/v1/uploads/${id}`)).json.status).toBe('deleted_pending');
    expect((await as('PUT', `/v1/uploads/${id}/legal-hold`, { reason: 'within the window' })).status).toBe(200);
    expect((await as('DELETE', `/v1/uploads/${id}?purge=true`)).json.error).toBe('legal_hold');
    expect((await as('DELETE', `/v1/uploads/${id}/legal-hold`)).status).toBe(200);
    const narrow = await as('POST', '/v1/api-keys', { scopes: ['uploads:delete'] });
    const noScope = await call('DELETE', `/v1/uploads/${id}?purge=true`, undefined, {}, narrow.json.key);
    expect([noScope.status, noScope.json.error]).toEqual([403, 'insufficient_scope']);
    expect((await as('DELETE', `/v1/uploads/${id}?purge=maybe`)).json.error).toBe('query_invalid');
    const purged = await as('DELETE', `/v1/uploads/${id}?purge=true`, undefined, { prefer: 'wait=30' });
    expect([purged.status, purged.json.status]).toEqual([200, 'deleted']);
    expect((await as('POST', `/v1/uploads/${id}/restore`)).json.error).toBe('upload_deleted');
    expect(receiver.received.filter((r) => r.json?.type === 'upload.restored' && r.json.data.uploadId === id)).toHaveLength(1);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
    // The tenant's deletion does not wait out a window: it purges the deletions within one.
    const pending = await postUpload(stack.url, { apiKey: owner.apiKey, key: `rec-grace-${randomUUID()}`, body: Buffer.from('pending') });
    expect((await as('DELETE', `/v1/uploads/${pending.json.uploadId}`)).json.status).toBe('deleted_pending');
    const gone = await fetch(`${stack.url}/admin/tenants/${owner.tenantId}`, {
      method: 'DELETE',
      headers: { ...admin, prefer: 'wait=120' },
    });
    expect([gone.status, ((await gone.json()) as { status: string }).status]).toEqual([200, 'deleted']);
    const row = await stack.runtime.pool.query('SELECT erased_at, restorable_until FROM uploads WHERE id = $1', [pending.json.uploadId]);
    expect(row.rows[0]).toMatchObject({ erased_at: expect.any(Date), restorable_until: null });
  });
});
