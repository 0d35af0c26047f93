// Form posts: POST /v1/uploads with multipart/form-data from `curl -F`, from fetch's
// FormData (key in a hidden field) and from a plain HTML form in Chromium, on both stores.
// The file part is the upload; retries with another boundary replay the answer; a bad form
// (two files, none, no boundary, a wrong sha256) is a 400 problem and leaves nothing.
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import { sha256 } from '../helpers/http';
import { readObject } from '../helpers/inspect';
import { startTestStack, type TestStack } from '../helpers/stack';
import { launchChromium } from '../helpers/browser';

const run = promisify(execFile);

describe.each(['s3', 'local'] as const)('form posts on the %s store', (kind) => {
  let stack: TestStack;
  let tenant: { tenantId: string; apiKey: string };
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-form-'));
    stack = await startTestStack(`form_${kind}`, { env: kind === 'local' ? { S3_ENDPOINT: '', DATA_DIR: dir } : {} });
    tenant = await stack.createTenant('forms');
  });
  afterAll(async () => {
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const curl = async (key: string | undefined, ...form: string[]) => {
    const args = [
      '-sS',
      '-o',
      '-',
      '-w',
      '\n%{http_code}',
      '-H',
      `authorization: Bearer ${tenant.apiKey}`,
      ...(key ? ['-H', `idempotency-key: ${key}`] : []),
      ...form.flatMap((f) => ['-F', f]),
      `${stack.url}/v1/uploads`,
    ];
    const { stdout } = await run('curl', args);
    const i = stdout.lastIndexOf('\n');
    return { status: Number(stdout.slice(i + 1)), text: stdout.slice(0, i), json: JSON.parse(stdout.slice(0, i)) };
  };
  const uploadsOf = async (key: string) =>
    (await stack.runtime.pool.query('SELECT count(*)::int AS n FROM uploads WHERE idempotency_key = $1', [key])).rows[0].n as number;

  it('curl -F file=@x: the file part is stored with its own type and name, once; a retry (another boundary) replays the answer', async () => {
    const bytes = randomBytes(300_000);
    const file = path.join(dir, 'photo.bin');
    writeFileSync(file, bytes);
    const key = `form-${randomUUID()}`;
    const first = await curl(key, `file=@${file};type=application/x-test`);
    expect(first.status).toBe(201);
    expect(first.json).toMatchObject({
      bytes: bytes.length,
      sha256: sha256(bytes),
      contentType: 'application/x-test',
      fileName: 'photo.bin',
    });
    expect(sha256(await readObject(stack.runtime.store, first.json.storageKey))).toBe(sha256(bytes));
    const again = await curl(key, `file=@${file};type=application/x-test`);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    // The fileName field names it; the same key with another file (or name) is 422.
    expect((await curl(key, `file=@${file};type=application/x-test`, 'fileName=other.bin')).status).toBe(422);
    writeFileSync(file, randomBytes(10));
    expect((await curl(key, `file=@${file};type=application/x-test`)).status).toBe(422);
    expect(await uploadsOf(key)).toBe(1);
    // A key used by a one-request upload is not a form's, and the other way round.
    const raw = await fetch(`${stack.url}/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'idempotency-key': key, 'content-type': 'application/x-test' },
      body: bytes,
    });
    expect(raw.status).toBe(422);
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
  });

  it('FormData with the key in a hidden field (before the file) and a sha256 field', async () => {
    const bytes = randomBytes(5000);
    const key = `form-field-${randomUUID()}`;
    const post = (sha: string) => {
      const form = new FormData();
      form.append('idempotencyKey', key);
      form.append('sha256', sha);
      form.append('file', new Blob([bytes], { type: 'text/plain' }), 'notes.txt');
      return fetch(`${stack.url}/v1/uploads`, { method: 'POST', headers: { authorization: `Bearer ${tenant.apiKey}` }, body: form });
    };
    const wrong = await post(sha256('other'));
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { error: string }).error).toBe('checksum_mismatch');
    expect(await uploadsOf(key)).toBe(0);
    const ok = await post(sha256(bytes));
    expect(ok.status).toBe(201);
    const body = (await ok.json()) as { uploadId: string };
    expect(body).toMatchObject({ fileName: 'notes.txt', contentType: 'text/plain', sha256: sha256(bytes) });
    // Recorded under the field's key.
    expect((await stack.runtime.pool.query('SELECT id FROM uploads WHERE idempotency_key = $1', [key])).rows[0]?.id).toBe(body.uploadId);
  });

  it('bad forms are 400 problems and leave nothing: two files, no file, no boundary, no key, the key after the file', async () => {
    const key = `form-bad-${randomUUID()}`;
    const a = path.join(dir, 'a.bin');
    writeFileSync(a, randomBytes(70_000));
    const two = await curl(key, `one=@${a}`, `two=@${a}`);
    expect(two.status).toBe(400);
    expect(two.json.error).toBe('form_invalid');
    expect((await curl(key, 'fileName=x.bin')).json.error).toBe('form_invalid');
    const noBoundary = await fetch(`${stack.url}/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'idempotency-key': key, 'content-type': 'multipart/form-data' },
      body: 'x',
    });
    expect(noBoundary.status).toBe(400);
    expect(noBoundary.headers.get('content-type')).toContain('application/problem+json');
    expect((await curl(undefined, `file=@${a}`)).json.error).toBe('idempotency_key_required');
    const late = new FormData();
    late.append('file', new Blob([Buffer.from('x')]), 'x');
    late.append('idempotencyKey', key);
    const lateRes = await fetch(`${stack.url}/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}` },
      body: late,
    });
    expect(lateRes.status).toBe(400);
    // Nothing recorded under the key, nothing left in the store: the key still works.
    expect(await uploadsOf(key)).toBe(0);
    await expect.poll(async () => (await audit(stack.runtime.pool, stack.runtime.store)).violations, { timeout: 10_000 }).toEqual([]);
    const prefix = `tenants/${tenant.tenantId}/keys/`;
    const objects: string[] = [];
    for await (const o of stack.runtime.store.list(prefix)) objects.push(o.key);
    const committed = (await stack.runtime.pool.query('SELECT storage_key FROM uploads WHERE tenant_id = $1', [tenant.tenantId])).rows.map(
      (r) => r.storage_key,
    );
    expect(objects.filter((k) => !committed.includes(k))).toEqual([]);
    expect((await curl(key, `file=@${a}`)).status).toBe(201);
  });
});

describe('a plain HTML form in Chromium', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack('form_browser');
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('posts the file (key in a hidden field) and gets the upload JSON; posting again replays it', async () => {
    const tenant = await stack.createTenant('browser-form');
    const key = `browser-form-${randomUUID()}`;
    const bytes = randomBytes(40_000);
    const browser = await launchChromium();
    try {
      // No script on the page: the Authorization header stands in for what a proxy in front would add.
      const context = await browser.newContext({ extraHTTPHeaders: { authorization: `Bearer ${tenant.apiKey}` } });
      const page = await context.newPage();
      const html = `<form method="post" enctype="multipart/form-data" action="${stack.url}/v1/uploads">
        <input type="hidden" name="idempotencyKey" value="${key}"><input type="file" name="file"><button>Upload</button></form>`;
      const answers: string[] = [];
      for (let i = 0; i < 2; i++) {
        await page.setContent(html);
        await page.setInputFiles('input[type=file]', { name: 'clip.bin', mimeType: 'application/octet-stream', buffer: bytes });
        const [response] = await Promise.all([page.waitForNavigation(), page.click('button')]);
        expect(response?.status()).toBe(201);
        answers.push(await response!.text());
      }
      expect(answers[1]).toBe(answers[0]);
      const body = JSON.parse(answers[0]!) as { uploadId: string };
      expect(body).toMatchObject({ fileName: 'clip.bin', bytes: bytes.length, sha256: sha256(bytes) });
      expect((await stack.runtime.pool.query('SELECT id FROM uploads WHERE idempotency_key = $1', [key])).rows.map((r) => r.id)).toEqual([
        body.uploadId,
      ]);
    } finally {
      await browser.close();
    }
  });
});
