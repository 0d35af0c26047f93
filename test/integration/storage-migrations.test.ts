// Storage migrations over real HTTP on both default stores, with a second versitygw as the
// tenant's target: every upload moved once, whole (original, renditions, variants), reads
// following the row throughout, sources released, a second migration refused while one runs,
// pause and resume, cancel, a target away during a migration, a deleted upload left alone,
// the move back, the event each migration's end sends (once, redeliverable), a deduping
// tenant's shared objects moved with their counts, and a page whose activity failed for good
// recorded as each upload is (what a lost attempt moved is moved, and its source released).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStorageMoveActivities } from '../../activities/targets/storage-move-activities';
import { audit } from '../../src/audit';
import { switchUploadAddress } from '../../src/targets/migration-queries';
import { S3Store } from '../../src/storage/s3-store';
import { keyStoragePrefix } from '../../src/temporal/ids';
import { postUpload, sha256 } from '../helpers/http';
import { eventually, listKeys } from '../helpers/inspect';
import { png } from '../helpers/media';
import { startStackOnStore, type TestStack } from '../helpers/stack';
import { serverPort } from '../support/ports';
import { startVersity, versityBucket, type Versity } from '../support/versitygw';
import { WebhookReceiver } from '../support/webhook-receiver';

const CREDS = { accessKeyId: 'migration-owner', secretAccessKey: `migration-secret-${randomUUID()}` };

describe.each(['local', 's3'] as const)('storage migrations beside the %s store', (kind) => {
  let stack: TestStack;
  let tenant: { tenantId: string; apiKey: string };
  let versity: Versity;
  let versityPort: number;
  const dir = mkdtempSync(path.join(os.tmpdir(), `oncely-migrations-${kind}-`));
  const bucket = `migrations-${kind}`;
  let bucketStore: S3Store;
  let targetId: string;
  const receiver = new WebhookReceiver();

  beforeAll(async () => {
    versityPort = await serverPort();
    versity = await startVersity({ port: versityPort, dir, ...CREDS });
    bucketStore = await versityBucket({ endpoint: versity.endpoint, ...CREDS }, bucket);
    stack = await startStackOnStore(kind, `migrations_${kind}`, {
      env: { STORAGE_TARGET_ALLOW_PRIVATE_NETWORKS: 'true', STORAGE_MIGRATION_SOURCE_GRACE_SECONDS: '0' },
    });
    tenant = await stack.createTenant('migrations');
    const created = await call(
      'POST',
      '/v1/storage-targets',
      { name: 'archive', endpoint: versity.endpoint, bucket, prefix: 'm/', ...CREDS },
      { 'idempotency-key': randomUUID() },
    );
    expect(created.status, created.text).toBe(201);
    targetId = created.json.id;
    await receiver.start();
    const endpoint = await call('POST', '/v1/webhook-endpoints', { url: receiver.url });
    expect(endpoint.status).toBe(201);
    receiver.secret = endpoint.json.secret;
  });
  afterAll(async () => {
    await receiver.stop();
    bucketStore?.destroy();
    await stack?.stop();
    await versity?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function call(method: string, pathname: string, json?: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${stack.url}${pathname}`, {
      method,
      headers: {
        authorization: `Bearer ${tenant.apiKey}`,
        ...(json !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: json !== undefined ? JSON.stringify(json) : undefined,
    });
    const text = await res.text();
    return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
  }
  const migrate = (body: Record<string, unknown>) => call('POST', '/v1/storage-migrations', body, { 'idempotency-key': randomUUID() });
  const finished = (id: string) =>
    eventually(async () => {
      const m = (await call('GET', `/v1/storage-migrations/${id}`)).json;
      return m.state === 'completed' || m.state === 'cancelled' ? m : undefined;
    }, 120_000);
  /** The event a migration's end sent, once delivered. */
  const endEvent = (migrationId: string) =>
    eventually(async () => receiver.received.find((r) => r.json?.data?.migrationId === migrationId && r.answered === 200), 60_000);
  const content = async (id: string) => {
    const res = await fetch(`${stack.url}/v1/uploads/${id}/content`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
  };
  async function uploadMany(n: number, prefix: string, headers: Record<string, string> = {}) {
    const made: { id: string; key: string; body: Buffer }[] = [];
    for (let i = 0; i < n; i++) {
      const key = `${prefix}-${i}-${randomUUID()}`;
      const body = randomBytes(1000 + i * 97);
      const res = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body, headers });
      expect(res.status, res.text).toBe(201);
      made.push({ id: res.json.uploadId, key, body });
    }
    return made;
  }

  it('moves every upload once, whole; reads follow the row throughout; the sources are released; and back again', async () => {
    const plain = await uploadMany(12, 'mig');
    const image = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `mig-png-${randomUUID()}`,
      body: await png(200, 120),
      contentType: 'image/png',
    });
    expect(image.status).toBe(201);
    const imageId = image.json.uploadId as string;
    const renditions = await eventually(async () => {
      const d = (await call('GET', `/v1/uploads/${imageId}`)).json;
      return d.status === 'processed' && d.renditions?.length ? (d.renditions as { name: string }[]) : undefined;
    }, 60_000);
    const gone = await uploadMany(1, 'mig-deleted');
    expect((await call('DELETE', `/v1/uploads/${gone[0]!.id}`, undefined, { prefer: 'wait=30' })).status).toBe(200);

    // Reads go on while it moves: each answer is the upload's bytes, never a 404.
    let reading = true;
    const reads = (async () => {
      let n = 0;
      while (reading) {
        const u = plain[n++ % plain.length]!;
        const got = await content(u.id);
        expect(got.status).toBe(200);
        expect(got.body.equals(u.body)).toBe(true);
      }
      return n;
    })();
    const started = await migrate({ from: 'default', to: 'archive', concurrency: 3 });
    expect(started.status, started.text).toBe(201);
    expect(started.json).toMatchObject({ from: null, to: targetId, state: 'running', total: plain.length + 1 });
    const done = await finished(started.json.id);
    reading = false;
    expect(await reads).toBeGreaterThan(0);
    expect(done).toMatchObject({ state: 'completed', moved: plain.length + 1, skipped: 0, failed: 0 });
    expect(done.bytesMoved).toBeGreaterThan(plain.reduce((s, u) => s + u.body.length, 0));

    // Its end is announced once, signed, with the counts GET answers; kept in the event log with no upload.
    const ended = await endEvent(started.json.id);
    expect(ended.verified).toBe(true);
    expect(ended.json.type).toBe('storage_migration.completed');
    const { id: migrationId, ...view } = (await call('GET', `/v1/storage-migrations/${started.json.id}`)).json;
    expect(ended.json.data).toEqual({ migrationId, ...view });
    const logged = (await call('GET', '/v1/events?type=storage_migration.completed')).json.items;
    expect(logged).toEqual([expect.objectContaining({ id: ended.id, uploadId: null })]);
    expect((await call('GET', `/v1/events/${ended.id}`)).json.payload).toEqual(JSON.parse(ended.body));
    // Sent again on request: the same webhook-id and bytes.
    const again = await call('POST', `/v1/events/${ended.id}/redeliver`, {}, { prefer: 'wait=30' });
    expect([again.status, Object.values(again.json.outcomes)]).toEqual([200, ['delivered']]);
    const copies = receiver.received.filter((r) => r.id === ended.id);
    expect(copies.map((r) => r.body)).toEqual([ended.body, ended.body]);
    // Its end retried after the commit (the answer lost with a worker): the event as first recorded, still one.
    const { pool, store } = stack.runtime;
    const retried = await createStorageMoveActivities({ pool, store }).finishMigration({
      migrationId: started.json.id,
      tenantId: tenant.tenantId,
      cancelled: false,
    });
    const sent = JSON.parse(ended.body);
    expect(retried).toEqual({
      id: ended.id,
      type: sent.type,
      tenantId: tenant.tenantId,
      uploadId: null,
      timestamp: sent.timestamp,
      data: sent.data,
    });
    expect((await call('GET', '/v1/events?type=storage_migration.completed')).json.items).toHaveLength(1);

    for (const u of plain) {
      const got = (await call('GET', `/v1/uploads/${u.id}`)).json;
      expect(got.storageTarget).toBe(targetId);
      expect((await content(u.id)).body.equals(u.body)).toBe(true);
      expect(await listKeys(bucketStore, `m/${keyStoragePrefix(tenant.tenantId, u.key)}`)).toHaveLength(1);
      // The source goes once its release runs (no grace here).
      await eventually(async () => (await listKeys(stack.runtime.store, keyStoragePrefix(tenant.tenantId, u.key))).length === 0);
    }
    const moved = (await call('GET', `/v1/uploads/${imageId}`)).json;
    for (const r of moved.renditions as { name: string; storageKey: string }[]) {
      expect(r.storageKey.startsWith(`targets/${targetId}/`)).toBe(true);
      const res = await fetch(`${stack.url}/v1/uploads/${imageId}/renditions/${r.name}`, {
        headers: { authorization: `Bearer ${tenant.apiKey}` },
      });
      expect(res.status).toBe(200);
    }
    expect(moved.renditions).toHaveLength(renditions.length);
    await eventually(async () => (await listKeys(stack.runtime.store, `tenants/${tenant.tenantId}/renditions/${imageId}/`)).length === 0);
    // The deleted upload stayed erased; nothing else is left anywhere.
    expect((await call('GET', `/v1/uploads/${gone[0]!.id}`)).json.storageTarget).toBe(null);
    const report = await audit(stack.runtime.pool, stack.runtime.store, { keyRetentionSeconds: 3600 });
    expect(report.violations).toEqual([]);
    expect(report.unreferencedObjects).toBe(0);

    // The same request again is its replay; a migration with nothing left to take moves nothing.
    const empty = await migrate({ from: 'default', to: 'archive' });
    expect((await finished(empty.json.id)).moved).toBe(0);
    // And back, but for a held upload: it stays where it is.
    const held = plain[0]!;
    expect((await call('PUT', `/v1/uploads/${held.id}/legal-hold`, { reason: 'stays put' })).status).toBe(200);
    const back = await migrate({ from: targetId, to: 'default', filter: { contentType: 'application/*' } });
    expect(back.status, back.text).toBe(201);
    expect(await finished(back.json.id)).toMatchObject({ state: 'completed', moved: plain.length - 1, skipped: 1, failed: 0 });
    for (const u of plain) {
      expect((await call('GET', `/v1/uploads/${u.id}`)).json.storageTarget).toBe(u === held ? targetId : null);
      expect((await content(u.id)).body.equals(u.body)).toBe(true);
    }
    expect((await call('DELETE', `/v1/uploads/${held.id}/legal-hold`)).status).toBe(200);
    expect((await call('GET', `/v1/uploads/${imageId}`)).json.storageTarget).toBe(targetId);
    await eventually(async () => (await listKeys(bucketStore, `m/tenants/${tenant.tenantId}/keys/`)).length === 2);
    const list = (await call('GET', '/v1/storage-migrations')).json.data as { id: string }[];
    expect(list.map((m) => m.id)).toEqual([started.json.id, empty.json.id, back.json.id]);
  });

  it('one migration from a source at a time; pause holds it, resume finishes it, cancel ends it with what moved kept', async () => {
    await uploadMany(6, 'pause');
    const first = await migrate({ from: 'default', to: 'archive', concurrency: 1 });
    expect(first.status).toBe(201);
    const paused = await call('POST', `/v1/storage-migrations/${first.json.id}/pause`);
    expect([paused.status, paused.json.state]).toEqual([200, 'paused']);
    const second = await migrate({ from: 'default', to: 'archive' });
    expect([second.status, second.json.error]).toEqual([409, 'storage_migration_running']);
    const same = await migrate({ from: 'archive', to: 'archive' });
    expect([same.status, same.json.error]).toEqual([400, 'body_invalid']);
    const unknown = await migrate({ from: 'default', to: 'nowhere' });
    expect([unknown.status, unknown.json.error]).toEqual([422, 'storage_target_unknown']);
    const onTarget = async () =>
      (await stack.runtime.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM uploads WHERE storage_target = $1', [targetId]))
        .rows[0]!.n;
    const heldAt = await onTarget();
    await new Promise((r) => setTimeout(r, 1500));
    // Paused: at most the move under way when it was paused has finished since.
    expect(await onTarget()).toBeLessThanOrEqual(heldAt + 1);
    expect((await call('GET', `/v1/storage-migrations/${first.json.id}`)).json.state).toBe('paused');
    expect((await call('POST', `/v1/storage-migrations/${first.json.id}/resume`)).json.state).toBe('running');
    const done = await finished(first.json.id);
    expect(done.total).toBeGreaterThanOrEqual(6);
    expect(done).toMatchObject({ state: 'completed', moved: done.total, failed: 0 });
    const ended = await call('POST', `/v1/storage-migrations/${first.json.id}/cancel`);
    expect([ended.status, ended.json.error]).toEqual([409, 'storage_migration_ended']);

    const back = await migrate({ from: 'archive', to: 'default', concurrency: 1 });
    await call('POST', `/v1/storage-migrations/${back.json.id}/pause`);
    expect((await call('POST', `/v1/storage-migrations/${back.json.id}/cancel`)).status).toBe(200);
    const cancelled = await finished(back.json.id);
    expect(cancelled.state).toBe('cancelled');
    expect(cancelled.moved).toBeLessThan(cancelled.total);
    const cancelledEvent = await endEvent(back.json.id);
    expect(cancelledEvent.json).toMatchObject({
      type: 'storage_migration.cancelled',
      data: { state: 'cancelled', moved: cancelled.moved },
    });
    expect((await endEvent(first.json.id)).json).toMatchObject({ type: 'storage_migration.completed', data: { moved: done.total } });
    const report = await audit(stack.runtime.pool, stack.runtime.store, { keyRetentionSeconds: 3600 });
    expect(report.violations).toEqual([]);
  });

  it('a target away during a migration is waited out; nothing is lost', async () => {
    const made = await uploadMany(4, 'away');
    await versity.stop();
    const started = await migrate({ from: 'default', to: 'archive', concurrency: 2 });
    expect(started.status).toBe(201);
    await new Promise((r) => setTimeout(r, 3000));
    // Reads are served from the source meanwhile.
    for (const u of made) expect((await content(u.id)).body.equals(u.body)).toBe(true);
    versity = await startVersity({ port: versityPort, dir, ...CREDS });
    const done = await finished(started.json.id);
    expect(done).toMatchObject({ state: 'completed', failed: 0 });
    for (const u of made) {
      expect((await call('GET', `/v1/uploads/${u.id}`)).json.storageTarget).toBe(targetId);
      expect((await content(u.id)).body.equals(u.body)).toBe(true);
    }
  });

  it("a deduping tenant's shared objects move with every upload that counts them, onto bytes the target already holds", async () => {
    const own = await stack.createTenant('migrations-dedupe');
    await stack.runtime.pool.query(`UPDATE tenants SET dedupe = 'sha256' WHERE id = $1`, [own.tenantId]);
    const as = (method: string, pathname: string, json?: unknown) =>
      fetch(`${stack.url}${pathname}`, {
        method,
        headers: { authorization: `Bearer ${own.apiKey}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: json === undefined ? undefined : JSON.stringify(json),
      }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }));
    const registered = await as('POST', '/v1/storage-targets', {
      name: 'dd-archive',
      endpoint: versity.endpoint,
      bucket,
      prefix: 'dd/',
      ...CREDS,
    });
    expect(registered.status).toBe(201);
    const upload = async (body: Buffer, headers: Record<string, string> = {}) => {
      const res = await postUpload(stack.url, { apiKey: own.apiKey, key: `dd-${randomUUID()}`, body, headers });
      expect(res.status, res.text).toBe(201);
      return res.json.uploadId as string;
    };
    const [x, y] = [randomBytes(4000), randomBytes(5000)];
    // x twice (one object counted twice), y once here and once already in the target.
    const [a1, a2, b] = [await upload(x), await upload(x), await upload(y)];
    const c = await upload(y, { 'x-storage-target': 'dd-archive' });
    const counts = async () =>
      (
        await stack.runtime.pool.query<{ sha256: string; refs: number; storage_target: string | null }>(
          'SELECT sha256, refs, storage_target FROM stored_objects WHERE tenant_id = $1 ORDER BY sha256, storage_target',
          [own.tenantId],
        )
      ).rows;
    expect((await counts()).map((r) => r.refs).sort()).toEqual([1, 1, 2]);

    // One at a time, so whichever of a1 and a2 goes first copies x and the other finds it there.
    const started = await as('POST', '/v1/storage-migrations', { from: 'default', to: 'dd-archive', concurrency: 1 });
    expect(started.status).toBe(201);
    const done = await eventually(async () => {
      const m = (await as('GET', `/v1/storage-migrations/${started.json.id}`)).json;
      return m.state === 'completed' ? m : undefined;
    }, 120_000);
    expect(done).toMatchObject({ total: 3, moved: 3, skipped: 0, failed: 0 });
    // x copied once, y not at all: the target held it already.
    expect(done.bytesMoved).toBe(x.length);
    const keyOf = async (id: string) =>
      (await stack.runtime.pool.query('SELECT storage_key FROM uploads WHERE id = $1', [id])).rows[0].storage_key;
    expect(await keyOf(a1)).toBe(await keyOf(a2));
    expect(await keyOf(b)).toBe(await keyOf(c));
    const registeredId = registered.json.id as string;
    expect(await counts()).toEqual(
      [
        { sha256: sha256(x), refs: 2, storage_target: registeredId },
        { sha256: sha256(y), refs: 2, storage_target: registeredId },
      ].sort((p, q) => p.sha256.localeCompare(q.sha256)),
    );
    for (const [id, body] of [
      [a1, x],
      [a2, x],
      [b, y],
      [c, y],
    ] as const) {
      const read = await fetch(`${stack.url}/v1/uploads/${id}/content`, { headers: { authorization: `Bearer ${own.apiKey}` } });
      expect(Buffer.from(await read.arrayBuffer()).equals(body)).toBe(true);
    }
    // The sources go (no row names them); the target keeps one object per content.
    await eventually(async () => (await listKeys(stack.runtime.store, `tenants/${own.tenantId}/`)).length === 0);
    expect(await listKeys(bucketStore, `dd/tenants/${own.tenantId}/`)).toHaveLength(2);
    const report = await audit(stack.runtime.pool, stack.runtime.store, { keyRetentionSeconds: 3600 });
    expect(report.violations).toEqual([]);
    expect(report.unreferencedObjects).toBe(0);

    // A switch that relied on the destination's bytes finds them gone: nothing switches, the move copies again.
    const d = await upload(randomBytes(3000));
    const from = await keyOf(d);
    const to = `targets/${registeredId}/${from}`;
    const prefixes = {
      fromPrefix: `tenants/${own.tenantId}/renditions/${d}/`,
      toPrefix: `targets/${registeredId}/tenants/${own.tenantId}/renditions/${d}/`,
    };
    expect(await switchUploadAddress(stack.runtime.pool, { uploadId: d, from, to, ...prefixes, copied: [], originalCopied: false })).toBe(
      'destination_changed',
    );
    expect(await keyOf(d)).toBe(from);
  });

  it('a switch refuses an upload deleted or moved while it was copied, and a rendition recorded meanwhile', async () => {
    const [u] = await uploadMany(1, 'switch');
    const row = (await stack.runtime.pool.query<{ storage_key: string }>('SELECT storage_key FROM uploads WHERE id = $1', [u!.id]))
      .rows[0]!;
    const to = `targets/${targetId}/${row.storage_key}`;
    const prefixes = {
      fromPrefix: `tenants/${tenant.tenantId}/renditions/${u!.id}/`,
      toPrefix: `targets/${targetId}/tenants/${tenant.tenantId}/renditions/${u!.id}/`,
    };
    const pool = stack.runtime.pool;
    expect(await switchUploadAddress(pool, { uploadId: u!.id, from: 'elsewhere', to, ...prefixes, copied: [], originalCopied: true })).toBe(
      'changed',
    );
    await pool.query("INSERT INTO renditions (upload_id, name, storage_key, content_type, bytes) VALUES ($1, 'late', $2, 'image/png', 1)", [
      u!.id,
      `${prefixes.fromPrefix}late.png`,
    ]);
    expect(
      await switchUploadAddress(pool, { uploadId: u!.id, from: row.storage_key, to, ...prefixes, copied: [], originalCopied: true }),
    ).toBe('renditions_changed');
    await pool.query("DELETE FROM renditions WHERE upload_id = $1 AND name = 'late'", [u!.id]);
    expect((await call('DELETE', `/v1/uploads/${u!.id}`, undefined, { prefer: 'wait=30' })).status).toBe(200);
    expect(
      await switchUploadAddress(pool, { uploadId: u!.id, from: row.storage_key, to, ...prefixes, copied: [], originalCopied: true }),
    ).toBe('deleted');
    expect((await pool.query('SELECT storage_key FROM uploads WHERE id = $1', [u!.id])).rows[0].storage_key).toBe(row.storage_key);
  });

  it('a page that failed for good records what a lost attempt switched as moved (its source then released), the rest failed, once', async () => {
    const [switched, stuck] = await uploadMany(2, 'unfinished');
    const { pool, store } = stack.runtime;
    const keyOf = async (id: string) =>
      (await pool.query<{ storage_key: string }>('SELECT storage_key FROM uploads WHERE id = $1', [id])).rows[0]!.storage_key;
    const [switchedKey, stuckKey] = [await keyOf(switched!.id), await keyOf(stuck!.id)];
    // A migration whose page it is: one from the target back (whatever it holds), ended.
    const started = await migrate({ from: 'archive', to: 'default' });
    expect(started.status, started.text).toBe(201);
    await finished(started.json.id);
    const moves = createStorageMoveActivities({ pool, store });
    // An attempt of the page's activity switched one upload, then its worker was lost before writing the outcome.
    const move = { tenantId: tenant.tenantId, from: null, to: targetId };
    expect(await new MockActivityEnvironment().run(moves.moveUpload, { ...move, uploadId: switched!.id })).toMatchObject({
      outcome: 'moved',
    });
    const page = { ...move, migrationId: started.json.id, uploadIds: [switched!.id, stuck!.id], concurrency: 2 };
    await moves.recordUnfinishedMoves({ ...page, reason: 'the target answered 403 AccessDenied' });
    const outcomes = async () =>
      (
        await pool.query<{ upload_id: string; outcome: string; reason: string | null; source: string | null }>(
          'SELECT upload_id, outcome, reason, source FROM storage_migration_items WHERE migration_id = $1 AND upload_id = ANY($2) ORDER BY outcome',
          [started.json.id, page.uploadIds],
        )
      ).rows;
    expect(await outcomes()).toEqual([
      { upload_id: stuck!.id, outcome: 'failed', reason: 'the target answered 403 AccessDenied', source: null },
      { upload_id: switched!.id, outcome: 'moved', reason: null, source: switchedKey },
    ]);
    // Recorded once: the same failure again changes nothing.
    await moves.recordUnfinishedMoves({ ...page, reason: 'another reason' });
    expect((await outcomes()).map((o) => o.reason)).toEqual(['the target answered 403 AccessDenied', null]);
    // The moved one's source is released like any moved upload's; the failed one's stays its only copy.
    await new MockActivityEnvironment().run(moves.releaseMovedSources, { migrationId: started.json.id, after: null, limit: 100 });
    expect(await listKeys(store, switchedKey)).toEqual([]);
    expect(await listKeys(store, stuckKey)).toHaveLength(1);
    expect((await content(switched!.id)).body.equals(switched!.body)).toBe(true);
    expect((await content(stuck!.id)).body.equals(stuck!.body)).toBe(true);
  });
});
