// Payload encryption on both stores: what Oncely hands to Temporal is sealed under data keys
// kept in PostgreSQL; the raw histories (read without the codec) hold no file name, token
// subject or metadata value; the codec server opens them for an operator; an upload's
// deletion destroys its keys, after which its payloads decode to "erased" and another
// upload's still open. Bad codec requests get a problem and change nothing.
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uploadWorkflowId } from '../../src/temporal/ids';
import { ENCRYPTED_ENCODING, isStepLabel, PayloadKeyring, SealingCodec } from '../../src/codec/payload-codec';
import { payloadsIn } from '../../src/codec/payloads-in';
import { loadSecretBox, SecretBox } from '../../src/secret-box';
import { patches } from '../../src/temporal/names';
import { stepLabels } from '../../src/temporal/step-labels';
import { postUpload } from '../helpers/http';
import { bytesIn, openHistory } from '../helpers/inspect';
import { png } from '../helpers/media';
import { startStackOnStore, type TestStack } from '../helpers/stack';

const ADMIN = randomBytes(24).toString('hex');

interface WirePayload {
  metadata?: Record<string, string>;
  data?: string;
}

describe.each(['s3', 'local'] as const)('payload encryption on the %s store', (kind) => {
  let stack: TestStack;
  let raw: Client;
  let tenant: { tenantId: string; apiKey: string };
  beforeAll(async () => {
    stack = await startStackOnStore(kind, `sealed_${kind}`, { env: { ADMIN_TOKEN: ADMIN } });
    // A client without the codec: what anyone with the Temporal UI or CLI reads.
    raw = new Client({ connection: stack.temporal.connection });
    tenant = await stack.createTenant('sealed');
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const call = async (method: string, pathname: string, token: string, json?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${stack.url}${pathname}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: json === undefined ? undefined : typeof json === 'string' ? json : JSON.stringify(json),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
  };
  const codec = (action: 'decode' | 'encode', payloads: WirePayload[], token = ADMIN) =>
    call('POST', `/codec/${action}`, token, { payloads });

  /** The payloads of a run's history as the wire carries them (base64), in event order. */
  async function wirePayloads(workflowId: string): Promise<WirePayload[]> {
    return payloadsIn(await raw.workflow.getHandle(workflowId).fetchHistory()).map((p) => ({
      metadata: Object.fromEntries(
        Object.entries(p.metadata ?? {}).map(([k, b]) => [k, Buffer.from(b ?? new Uint8Array()).toString('base64')]),
      ),
      data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
    }));
  }
  const encodingOf = (p: WirePayload) => Buffer.from(p.metadata?.encoding ?? '', 'base64').toString();
  const textOf = (p: WirePayload) => Buffer.from(p.data ?? '', 'base64').toString();
  /** One of the steps' fixed labels, which the codec leaves in clear. */
  const isLabel = (p: WirePayload) =>
    isStepLabel({
      metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
      data: Buffer.from(p.data ?? '', 'base64'),
    });
  /** The details of a `patched()` marker: `{"id": <one of our patches>, "deprecated": …}`, written by the SDK. */
  const isPatchMarker = (p: WirePayload) => {
    try {
      const id = (JSON.parse(Buffer.from(p.data ?? '', 'base64').toString()) as { id?: unknown }).id;
      return Object.values(patches).includes(id as never);
    } catch {
      return false;
    }
  };
  const decodedText = async (payloads: WirePayload[]) => {
    const res = await codec('decode', payloads);
    expect(res.status, res.text).toBe(200);
    return (res.json.payloads as WirePayload[]).map((p) => Buffer.from(p.data ?? '', 'base64').toString());
  };

  async function tokenUpload(mark: string) {
    const minted = await call('POST', '/v1/upload-tokens', tenant.apiKey, {
      expiresInSeconds: 900,
      subject: `subject-${mark}`,
      metadata: { album: `album-${mark}` },
    });
    expect(minted.status, minted.text).toBe(201);
    const key = `sealed-${randomUUID()}`;
    const up = await postUpload(stack.url, {
      apiKey: minted.json.token,
      key,
      body: await png(64, 48),
      contentType: 'image/png',
      fileName: `name-${mark}.png`,
    });
    expect(up.status, up.text).toBe(201);
    const id = up.json.uploadId as string;
    const processed = await call('GET', `/v1/uploads/${id}?wait=30`, tenant.apiKey);
    expect(processed.json.status, processed.text).toBe('processed');
    return { id, key, runs: [uploadWorkflowId(tenant.tenantId, key), `downstream/${id}`] };
  }

  it('keeps names, subjects and metadata out of every raw history; the codec server opens them until the upload is deleted', async () => {
    const mine = randomBytes(6).toString('hex');
    const other = randomBytes(6).toString('hex');
    const first = await tokenUpload(mine);
    const second = await tokenUpload(other);
    const personal = [`name-${mine}`, `subject-${mine}`, `album-${mine}`];

    for (const run of first.runs) {
      const payloads = await wirePayloads(run);
      expect(payloads.length, run).toBeGreaterThan(0);
      // In clear: the steps' fixed labels only (the commit's among them), nothing of the upload's.
      const clear = payloads.filter((p) => encodingOf(p) !== ENCRYPTED_ENCODING);
      expect(clear.filter((p) => !isLabel(p)).map(textOf), run).toEqual([]);
      if (run === first.runs[0]) expect(clear.map(textOf)).toContain(JSON.stringify(stepLabels.commitUpload));
      const history = await raw.workflow.getHandle(run).fetchHistory();
      for (const value of personal)
        expect(
          bytesIn(history).some((b) => b.includes(value)),
          `${value} in ${run}`,
        ).toBe(false);
    }
    // The operator's view: the run's payloads open, its input with the name in it.
    expect((await decodedText(await wirePayloads(first.runs[0]!))).some((t) => t.includes(`"name-${mine}.png"`))).toBe(true);
    const otherPayloads = await wirePayloads(second.runs[0]!);

    const deleted = await call('DELETE', `/v1/uploads/${first.id}`, tenant.apiKey);
    // Answered once the erasure is done (within the default wait).
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.json.erasedAt).toBeTruthy();

    // Every payload of the deleted upload's runs is now sealed for good; the other upload's still opens.
    for (const run of first.runs) {
      const texts = await decodedText((await wirePayloads(run)).filter((p) => !isLabel(p)));
      expect(texts.length).toBeGreaterThan(0);
      expect(new Set(texts), run).toEqual(new Set(['"erased"']));
    }
    expect((await decodedText(otherPayloads)).some((t) => t.includes(`"name-${other}.png"`))).toBe(true);
    // Another process's client (the stack's own may hold the key for its cache's minute) lists
    // the erased run — no memo (an offer's run carries none), no error — and reads its result as the marker.
    const box = await loadSecretBox(stack.config.SECRETS_KEY, stack.config.DATA_DIR);
    const another = new Client({
      connection: stack.temporal.connection,
      dataConverter: { payloadCodecs: [new SealingCodec(new PayloadKeyring(stack.runtime.pool, box))] },
    });
    const listed: unknown[] = [];
    for await (const w of another.workflow.list({ query: `WorkflowId = '${first.runs[0]}'` })) listed.push(w.memo);
    expect(listed).toEqual([{}]);
    expect(await another.workflow.getHandle(first.runs[0]!).result()).toBe('erased');
    const keys = await stack.runtime.pool.query<{ scope: string; wrapped: string | null }>(
      `SELECT scope, wrapped FROM payload_keys WHERE scope IN ($1, $2)`,
      [`upload:${first.id}`, `run:${first.runs[0]}`],
    );
    expect(keys.rows.map((r) => r.scope).sort()).toEqual([`run:${first.runs[0]}`, `upload:${first.id}`]);
    expect(keys.rows.every((r) => r.wrapped === null)).toBe(true);
    // The deletion's own run stays readable: it is sealed under the tenant's key, which outlives
    // the upload, and it holds nothing personal.
    const deletion = await wirePayloads(`delete/${first.id}`);
    // In clear: the steps' labels, and the patch marker the SDK records for a changed branch (a fixed id).
    expect(deletion.filter((p) => encodingOf(p) !== ENCRYPTED_ENCODING).every((p) => isLabel(p) || isPatchMarker(p))).toBe(true);
    const deletionTexts = await decodedText(deletion);
    expect(deletionTexts.some((t) => t.includes(first.id))).toBe(true);
    for (const value of personal)
      expect(
        deletionTexts.some((t) => t.includes(value)),
        value,
      ).toBe(false);
    const tenantKey = await stack.runtime.pool.query('SELECT tenant_id FROM payload_keys WHERE scope = $1 AND destroyed_at IS NULL', [
      `tenant:${tenant.tenantId}`,
    ]);
    expect(tenantKey.rows).toEqual([{ tenant_id: tenant.tenantId }]);
    // A replay of the erased upload's key still answers (410) from the database.
    const replay = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: first.key,
      body: await png(64, 48),
      contentType: 'image/png',
    });
    expect(replay.status).not.toBe(500);
  });

  it("lists an erased session's run with its memo (which only a session's or an import's run keeps) decoded to the marker", async () => {
    const key = `sealed-tus-${randomUUID()}`;
    const tus = { authorization: `Bearer ${tenant.apiKey}`, 'tus-resumable': '1.0.0' };
    const created = await fetch(`${stack.url}/v1/tus`, {
      method: 'POST',
      headers: {
        ...tus,
        'upload-length': '5',
        'idempotency-key': key,
        'upload-metadata': `filename ${Buffer.from('tus-name.txt').toString('base64')}`,
      },
    });
    expect(created.status).toBe(201);
    const patched = await fetch(`${stack.url}${created.headers.get('location')}`, {
      method: 'PATCH',
      headers: { ...tus, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: 'whole',
    });
    expect(patched.status).toBe(204);
    const answer = await call('GET', `/v1/idempotency-keys/${key}`, tenant.apiKey);
    const uploadId = answer.json.response.uploadId as string;
    const runId = uploadWorkflowId(tenant.tenantId, key);
    // A process that never held the run's key (the stack's own may cache it for a minute).
    const box = await loadSecretBox(stack.config.SECRETS_KEY, stack.config.DATA_DIR);
    const listMemo = async () => {
      const another = new Client({
        connection: stack.temporal.connection,
        dataConverter: { payloadCodecs: [new SealingCodec(new PayloadKeyring(stack.runtime.pool, box, 0))] },
      });
      const memos: Record<string, unknown>[] = [];
      for await (const w of another.workflow.list({ query: `WorkflowId = '${runId}'` })) memos.push(w.memo ?? {});
      expect(memos).toHaveLength(1);
      return memos[0]!;
    };
    const before = await listMemo();
    expect(before.sessionId).toEqual(expect.any(String));
    expect(before.sessionId).not.toBe('erased');

    const deleted = await call('DELETE', `/v1/uploads/${uploadId}`, tenant.apiKey);
    expect(deleted.status, deleted.text).toBe(200);
    const after = await listMemo();
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    expect(new Set(Object.values(after))).toEqual(new Set(['erased']));
  });

  it('refuses codec requests without the operator token, with bad bodies or changed bytes, and passes unsealed payloads through', async () => {
    const plain = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('"hello"').toString('base64') };
    expect((await codec('decode', [plain], 'not-the-token')).status).toBe(401);
    expect((await codec('decode', [plain], tenant.apiKey)).status).toBe(401);
    const through = await codec('decode', [plain]);
    expect(through.status, through.text).toBe(200);
    expect(through.json.payloads).toEqual([plain]);

    const sealed = await codec('encode', [plain]);
    expect(sealed.status, sealed.text).toBe(200);
    const [s] = sealed.json.payloads as WirePayload[];
    expect(encodingOf(s!)).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(s!.data!, 'base64').toString()).not.toContain('hello');
    expect(await decodedText([s!])).toEqual(['"hello"']);

    const changed = Buffer.from(s!.data!, 'base64');
    changed[changed.length - 1]! ^= 1;
    const bad = [
      { payloads: [{ ...s, data: changed.toString('base64') }] },
      { payloads: [{ ...s, metadata: { ...s!.metadata, 'encryption-key-id': Buffer.from('nope').toString('base64') } }] },
      { payloads: [{ data: 'not base64!' }] },
      { payloads: [plain], extra: true },
      { nothing: [] },
    ];
    for (const body of bad) {
      const res = await call('POST', '/codec/decode', ADMIN, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.json.error).toBe('body_invalid');
    }
    const notJson = await call('POST', '/codec/decode', ADMIN, 'not json');
    expect(notJson.status).toBe(400);
    // The Temporal UI's preflight from its own origin.
    const preflight = await fetch(`${stack.url}/codec/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://127.0.0.1:8233',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace,authorization',
      },
    });
    expect(preflight.status).toBeLessThan(300);
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-namespace');
  });

  // Last: it moves the stack's data keys to a key the stack itself does not hold.
  it('oncely secrets-key rotate re-wraps every live data key under the new SECRETS_KEY; sealed history still opens', async () => {
    const { id, runs } = await tokenUpload(randomBytes(6).toString('hex'));
    const sealed = await raw.workflow.getHandle(runs[0]!).fetchHistory();
    const oldKey = stack.config.SECRETS_KEY ?? readFileSync(path.join(stack.config.DATA_DIR, 'secrets-key'), 'utf8').trim();
    const newKey = randomBytes(32).toString('base64');
    const live = async () =>
      (await stack.runtime.pool.query<{ id: string; wrapped: string }>('SELECT id, wrapped FROM payload_keys WHERE destroyed_at IS NULL'))
        .rows;
    const before = await live();
    expect(before.length).toBeGreaterThan(0);
    const cli = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'secrets-key', 'rotate'], {
      env: { ...process.env, DATABASE_URL: stack.dbUrl, SECRETS_KEY: newKey, SECRETS_KEY_PREVIOUS: oldKey, LOG_LEVEL: 'silent' },
    });
    expect(cli.stdout).toContain(`re-wrapped under SECRETS_KEY: ${before.length}`);
    const after = await live();
    expect(after.map((r) => r.id).sort()).toEqual(before.map((r) => r.id).sort());
    for (const row of after) expect(row.wrapped).not.toBe(before.find((b) => b.id === row.id)!.wrapped);

    // Only the new key is needed now, and the history written before opens unchanged.
    const opener = (key: string) => new SealingCodec(new PayloadKeyring(stack.runtime.pool, new SecretBox(Buffer.from(key, 'base64')), 0));
    const withNew = await openHistory(structuredClone(sealed), opener(newKey));
    expect(bytesIn(withNew).some((b) => b.includes(`upload ${id}`) || b.includes(id))).toBe(true);
    await expect(openHistory(structuredClone(sealed), opener(oldKey))).rejects.toThrow();
  });
});
