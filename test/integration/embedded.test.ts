// The embedded default as a user runs it: `tsx src/main.ts` with a fresh data directory
// (own Temporal dev server, PGlite, local-directory store). Serves the walk-through,
// the CLI audits it while it runs, and its data survives a restart.
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import * as tus from 'tus-js-client';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { serverPort } from '../support/ports';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { nodeTs, startProcess, waitUntil, type ManagedProcess } from '../../src/devstack/process';
import { getJson, postUpload, sha256, writeAllThenRead } from '../helpers/http';
import { launchChromium } from '../helpers/browser';
import { png } from '../helpers/media';
import { startFileOrigin } from '../support/file-origin';
import { eventually } from '../helpers/inspect';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const tsx = path.join(root, 'node_modules/.bin/tsx');
let dataDir: string;
let env: NodeJS.ProcessEnv;
let proc: ManagedProcess | undefined;
let url: string;

async function screenshotTemporalUi(key: string): Promise<void> {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
    const query = encodeURIComponent(`OncelyIdempotencyKey="${key}"`);
    await page.goto(`http://127.0.0.1:${env.TEMPORAL_UI_PORT}/namespaces/default/workflows?query=${query}`);
    await page.getByText(`upload/`, { exact: false }).first().waitFor({ timeout: 30_000 });
    const artifacts = path.join(root, 'test-artifacts');
    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: path.join(artifacts, 'temporal-ui-by-idempotency-key.png'), fullPage: true });
    expect(await page.content()).toContain(key);
    // The run's page: its input is sealed in Temporal, and the UI opens it through Oncely's
    // codec server (npm start wires the dev server's UI to /codec): the decoded JSON shows.
    await page.getByText(`upload/`, { exact: false }).first().click();
    // A field of the run's input JSON, which the page can only show decoded.
    const text = () => page.locator('body').innerText();
    await waitUntil('the decoded input in the Temporal UI', async () => (await text()).includes('receiveTimeoutSeconds'), {
      timeoutMs: 30_000,
    });
    expect(await text()).not.toContain('binary/encrypted');
    await page.screenshot({ path: path.join(artifacts, 'temporal-ui-decoded-input.png'), fullPage: true });
  } finally {
    await browser.close();
  }
}

async function start(): Promise<string> {
  proc = startProcess(...nodeTs(path.join(root, 'src/main.ts')), { logFile: path.join(dataDir, 'main.log'), env, cwd: root });
  await waitUntil('embedded Oncely', async () => (await fetch(`${url}/readyz`)).ok, { proc, timeoutMs: 90_000 });
  // The dev tenant is made once the API is up: its key file appears (whole) after /readyz.
  const keyFile = path.join(dataDir, 'dev-tenant-key');
  await waitUntil(
    'the dev tenant key',
    async () => (await fetch(`${url}/v1/uploads`, { headers: { authorization: `Bearer ${readFileSync(keyFile, 'utf8').trim()}` } })).ok,
    { proc, timeoutMs: 60_000 },
  );
  return readFileSync(keyFile, 'utf8').trim();
}

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'oncely-embedded-'));
  const port = await serverPort();
  url = `http://127.0.0.1:${port}`;
  env = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    TEMPORAL_UI_PORT: String(await serverPort()),
    LOG_LEVEL: 'warn',
    DATABASE_URL: '',
    S3_ENDPOINT: '',
    TEMPORAL_ADDRESS: '',
    // The import origin below is on 127.0.0.1.
    IMPORT_ALLOW_PRIVATE_NETWORKS: 'true',
  };
});

afterAll(async () => {
  await proc?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

it('serves the walk-through, audits clean, and keeps its data across a restart', async () => {
  let apiKey = await start();
  const key = `embedded-${randomUUID()}`;
  const file = Buffer.from('embedded default file\n');
  const first = await postUpload(url, { apiKey, key, body: file, contentType: 'text/plain' });
  expect(first.status, `${first.text}\n${readFileSync(path.join(dataDir, 'main.log'), 'utf8').slice(-3000)}`).toBe(201);
  const second = await postUpload(url, { apiKey, key, body: file, contentType: 'text/plain' });
  expect(second.status).toBe(201);
  expect(second.text).toBe(first.text);
  expect(second.headers.get('idempotent-replayed')).toBe('true');
  const reuse = await postUpload(url, { apiKey, key, body: Buffer.from('other'), contentType: 'text/plain' });
  expect(reuse.status).toBe(422);
  // The key's request log is written over the one session too.
  const logged = await eventually(async () => {
    const r = await getJson(`${url}/v1/idempotency-keys/${key}/requests`, apiKey);
    return r.status === 200 && r.json.total === 3 ? r.json : undefined;
  }, 30_000);
  expect(logged.items.map((r: { outcome: string }) => r.outcome)).toEqual(['created', 'replayed', 'reuse']);
  // Where its memory sits, as /metrics reports it: PGlite's WebAssembly memory at its
  // 128 MiB floor (16 MB of shared buffers; Postgres's default 128 MB grew it to 189 MiB),
  // libvips' operation cache empty (turned off).
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const part = (name: string) => Number(new RegExp(`^oncely_memory_bytes\\{part="${name}"\\} (\\S+)$`, 'm').exec(metrics)?.[1]);
  expect(part('pglite_wasm')).toBe(128 * 1024 * 1024);
  expect(part('libvips_cache')).toBe(0);
  expect(part('v8_heap')).toBeGreaterThan(0);
  // A client that writes a too-large body in full before reading still reads its 413
  // (the server drains before it closes; a reset would have discarded the answer).
  const tooLarge = await writeAllThenRead(
    url,
    `POST /v1/api-keys HTTP/1.1\nHost: x\nAuthorization: Bearer ${apiKey}\nContent-Type: application/json\nTransfer-Encoding: chunked\n\n`,
    Buffer.alloc(1024 * 1024, 0x20),
    64,
  );
  expect(tooLarge.written).toBe(64 * 1024 * 1024);
  expect(tooLarge.response?.status).toBe(413);
  expect(JSON.parse(tooLarge.response!.body).error).toBe('payload_too_large');
  // Concurrent requests over the embedded database's shared session.
  const many = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      postUpload(url, { apiKey, key: `${key}-${i}`, body: Buffer.from(`file ${i}`), contentType: 'text/plain' }),
    ),
  );
  expect(
    many.map((r) => r.status),
    many
      .filter((r) => r.status !== 201)
      .map((r) => r.text)
      .join('\n'),
  ).toEqual(Array(12).fill(201));
  // Images on request: one render however many ask at once, over the one PGlite session.
  const variantSource = await postUpload(url, { apiKey, key: `${key}-png`, body: await png(40, 30), contentType: 'image/png' });
  expect(variantSource.status).toBe(201);
  const preset = await fetch(`${url}/v1/image-presets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': `${key}-preset` },
    body: JSON.stringify({ name: 'small', spec: 'w_20,f_webp' }),
  });
  expect(preset.status).toBe(201);
  const variants = await Promise.all(
    Array.from({ length: 10 }, () =>
      fetch(`${url}/v1/uploads/${variantSource.json.uploadId}/images/small`, { headers: { authorization: `Bearer ${apiKey}` } }).then(
        async (r) => ({ status: r.status, type: r.headers.get('content-type'), body: Buffer.from(await r.arrayBuffer()) }),
      ),
    ),
  );
  expect(variants.map((v) => [v.status, v.type])).toEqual(Array(10).fill([200, 'image/webp']));
  expect(new Set(variants.map((v) => sha256(v.body))).size).toBe(1);
  // Resumable uploads work on the embedded default too (PGlite, local-directory parts).
  const tusFile = randomBytes(9 * 1024 * 1024 + 17);
  const tusKey = `embedded-tus-${randomUUID()}`;
  await new Promise<void>((resolve, reject) =>
    new tus.Upload(tusFile, {
      endpoint: `${url}/v1/tus`,
      headers: { authorization: `Bearer ${apiKey}`, 'idempotency-key': tusKey },
      metadata: { filename: 'embedded.bin', filetype: 'application/octet-stream' },
      chunkSize: 4 * 1024 * 1024,
      onSuccess: () => resolve(),
      onError: reject,
    }).start(),
  );
  const tusAnswer = await getJson(`${url}/v1/idempotency-keys/${tusKey}`, apiKey);
  expect(tusAnswer.json).toMatchObject({ state: 'completed', status: 201, response: { bytes: tusFile.length, sha256: sha256(tusFile) } });
  expect(sha256(readFileSync(path.join(dataDir, 'objects', tusAnswer.json.response.storageKey)))).toBe(sha256(tusFile));
  // And through the IETF draft (tus-js-client's interop 6), on POST /v1/uploads itself.
  const draftKey = `embedded-rufh-${randomUUID()}`;
  await new Promise<void>((resolve, reject) =>
    new tus.Upload(tusFile, {
      endpoint: `${url}/v1/uploads`,
      // `protocol` is in tus-js-client 4 but not in its type declarations.
      ...({ protocol: 'ietf-draft-05' } as Partial<tus.UploadOptions>),
      headers: { authorization: `Bearer ${apiKey}`, 'idempotency-key': draftKey },
      metadata: { filename: 'embedded-draft.bin', filetype: 'application/octet-stream' },
      chunkSize: 4 * 1024 * 1024,
      onSuccess: () => resolve(),
      onError: reject,
    }).start(),
  );
  const draftAnswer = await getJson(`${url}/v1/idempotency-keys/${draftKey}`, apiKey);
  expect(draftAnswer.json).toMatchObject({ state: 'completed', status: 201, response: { bytes: tusFile.length, sha256: sha256(tusFile) } });
  expect(sha256(readFileSync(path.join(dataDir, 'objects', draftAnswer.json.response.storageKey)))).toBe(sha256(tusFile));
  // A direct upload on the embedded default: the plan's URL is the API's own signed PUT.
  const direct = randomBytes(300_000);
  const plan = await fetch(`${url}/v1/direct-uploads`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'idempotency-key': `embedded-direct-${randomUUID()}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ bytes: direct.length, sha256: sha256(direct), fileName: 'direct.bin' }),
  });
  const planned = (await plan.json()) as { id: string; upload: { url: string; headers: Record<string, string> } };
  expect(planned.upload.url.startsWith(`${url}/v1/direct-uploads/`)).toBe(true);
  const put = await fetch(planned.upload.url, {
    method: 'PUT',
    headers: { 'content-type': planned.upload.headers['content-type']! },
    body: direct,
  });
  expect(put.status).toBe(200);
  const completed = await fetch(`${url}/v1/direct-uploads/${planned.id}/complete`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}` },
  });
  expect(completed.status).toBe(201);
  expect(((await completed.json()) as { sha256: string }).sha256).toBe(sha256(direct));
  // A form post on the embedded default.
  const form = new FormData();
  form.append('idempotencyKey', `embedded-form-${randomUUID()}`);
  form.append('file', new Blob([Buffer.from('a form post')], { type: 'text/plain' }), 'form.txt');
  expect((await fetch(`${url}/v1/uploads`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form })).status).toBe(
    201,
  );
  // An import and a batch of three on the embedded default (PGlite's one session, parts on disk).
  const origin = await startFileOrigin(randomBytes(200_000), { contentType: 'application/octet-stream' });
  try {
    const call = (path: string, body: unknown, extra: Record<string, string> = {}) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': randomUUID(), ...extra },
        body: JSON.stringify(body),
      });
    const imported = await call('/v1/imports', { url: `${origin.base}/embedded.bin` }, { prefer: 'wait=60' });
    expect(imported.status, await imported.clone().text()).toBe(201);
    const batch = await call('/v1/import-batches', { items: ['a', 'b', 'c'].map((n) => ({ url: `${origin.base}/${n}.bin` })) });
    expect(batch.status).toBe(202);
    const { id } = (await batch.json()) as { id: string };
    let ended: { state: string; done: number } | undefined;
    await waitUntil(
      'the import batch',
      async () => {
        ended = (await getJson(`${url}/v1/import-batches/${id}`, apiKey)).json as { state: string; done: number };
        return ended.state === 'completed';
      },
      { proc, timeoutMs: 60_000 },
    );
    expect(ended).toMatchObject({ done: 3 });
  } finally {
    await origin.close();
  }
  // The upload's record on the embedded default: metadata at upload, a change under If-Match, the label filter.
  const labelled = await postUpload(url, {
    apiKey,
    key: `${key}-record`,
    body: Buffer.from('a record'),
    headers: { 'x-metadata': '{"album":"embedded"}', 'x-tags': 'embedded' },
  });
  expect(labelled.status).toBe(201);
  const changed = await fetch(`${url}/v1/uploads/${labelled.json.uploadId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'if-match': '"1"' },
    body: JSON.stringify({ tags: ['embedded', 'changed'] }),
  });
  expect(changed.status).toBe(200);
  const filtered = await getJson(`${url}/v1/uploads?tag=changed&metadata%5Balbum%5D=embedded`, apiKey);
  expect(filtered.json.items.map((u: { uploadId: string }) => u.uploadId)).toEqual([labelled.json.uploadId]);
  const asKey = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const held = await fetch(`${url}/v1/uploads/${labelled.json.uploadId}/legal-hold`, {
    method: 'PUT',
    headers: asKey,
    body: '{"reason":"kept"}',
  });
  expect(held.status).toBe(200);
  expect((await fetch(`${url}/v1/uploads/${labelled.json.uploadId}`, { method: 'DELETE', headers: asKey })).status).toBe(409);
  // Each upload records the door it came through.
  const doors = (await getJson(`${url}/v1/uploads?limit=100`, apiKey)).json.items.map((u: { arrival: string | null }) => u.arrival);
  expect(new Set(doors)).toEqual(new Set(['upload', 'tus', 'rufh', 'direct', 'form', 'import']));
  // The Temporal UI (served by the embedded dev server) finds the run by its key.
  await screenshotTemporalUi(key);
  const stored = path.join(dataDir, 'objects', first.json.storageKey);
  expect(sha256(readFileSync(stored))).toBe(sha256(file));

  // The CLI reaches the running server's embedded database.
  const auditOut = await run(tsx, [path.join(root, 'src/cli.ts'), 'audit', '--json'], { env, cwd: root });
  const report = JSON.parse(auditOut.stdout);
  // 23 uploads' key rows, the batch's and the image preset's (their creation is keyed); the variant with the renditions.
  expect(report).toMatchObject({ uploads: 23, keyRows: 25, objectsVerified: 23, violations: [] });
  expect(report.renditions).toBeGreaterThanOrEqual(1);
  // The console on the embedded default: signed in with the dev key, its uploads and one upload's page with its run's link.
  const signIn = await fetch(`${url}/console/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: url },
    body: new URLSearchParams({ secret: apiKey }),
    redirect: 'manual',
  });
  expect(signIn.status).toBe(303);
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
  const list = await fetch(`${url}/console/uploads`, { headers: { cookie } });
  expect(list.status).toBe(200);
  expect(await list.text()).toContain(`/console/uploads/${first.json.uploadId}`);
  const detail = await (await fetch(`${url}/console/uploads/${first.json.uploadId}`, { headers: { cookie } })).text();
  expect(detail).toContain(key);
  expect(detail).toMatch(/href="http:\/\/127\.0\.0\.1:\d+\/namespaces\/default\/workflows\?query=WorkflowId%3D%22upload%2F/);
  const created = await run(tsx, [path.join(root, 'src/cli.ts'), 'tenant', 'create', 'cli-made', '--json'], { env, cwd: root });
  const cliTenant = JSON.parse(created.stdout);
  expect(cliTenant.apiKey).toMatch(/^onc_/);
  const cliUpload = await postUpload(url, { apiKey: cliTenant.apiKey, key, body: file, contentType: 'text/plain' });
  expect(cliUpload.status, `${cliUpload.text}\n${readFileSync(path.join(dataDir, 'main.log'), 'utf8').slice(-2500)}`).toBe(201);
  // A tenant made with --dedupe sha256 stores identical bytes once.
  const deduping = JSON.parse(
    (await run(tsx, [path.join(root, 'src/cli.ts'), 'tenant', 'create', 'cli-dedupe', '--dedupe', 'sha256', '--json'], { env, cwd: root }))
      .stdout,
  );
  const d1 = await postUpload(url, { apiKey: deduping.apiKey, key: `${key}-d1`, body: file, contentType: 'text/plain' });
  const d2 = await postUpload(url, { apiKey: deduping.apiKey, key: `${key}-d2`, body: file, contentType: 'text/plain' });
  expect([d1.status, d2.status]).toEqual([201, 201]);
  expect(d2.json.storageKey).toBe(d1.json.storageKey);

  // A declared pipeline on the embedded default: no clamd here, so the scan says not_scanned.
  const declared = await fetch(`${url}/v1/pipelines`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'embedded',
      steps: [{ type: 'scan.clamav' }, { type: 'image.variants', variants: [{ name: 'small', width: 32, format: 'webp' }] }],
    }),
  });
  expect(declared.status).toBe(201);
  const picture = await postUpload(url, {
    apiKey,
    key: `${key}-pipeline`,
    body: await png(64, 48),
    contentType: 'image/png',
    pipeline: 'embedded',
  });
  expect(picture.status, picture.text).toBe(201);
  const processed = await getJson(`${url}/v1/uploads/${picture.json.uploadId}?wait=60`, apiKey);
  expect(processed.json).toMatchObject({ status: 'processed', availability: 'available', pipeline: { name: 'embedded', version: 1 } });
  expect(processed.json.pipeline.steps[0].scan).toMatchObject({ verdict: 'not_scanned', reason: expect.stringContaining('CLAMD_ADDRESS') });
  expect(processed.json.renditions.map((r: { name: string }) => r.name)).toEqual(['small']);

  await proc!.stop();
  expect(existsSync(path.join(dataDir, 'temporal.db'))).toBe(true);
  apiKey = await start();
  const afterRestart = await postUpload(url, { apiKey, key, body: file, contentType: 'text/plain' });
  expect(afterRestart.status).toBe(201);
  expect(afterRestart.text).toBe(first.text);
  const upload = await getJson(`${url}/v1/uploads/${first.json.uploadId}`, apiKey);
  expect(upload.json).toMatchObject({ uploadId: first.json.uploadId, sha256: sha256(file) });
}, 240_000);

it('a SIGKILLed embedded process leaves no Temporal dev server behind, and one left by an older version is reaped', async () => {
  const pidFile = path.join(dataDir, 'temporal.pid');
  const alive = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]!.endsWith('temporal-dev');
    } catch {
      return false;
    }
  };
  const until = async (what: string, ok: () => boolean) => waitUntil(what, async () => ok(), { timeoutMs: 30_000 });

  await proc?.stop(); // the previous test's process
  await start();
  const devPid = Number(readFileSync(pidFile, 'utf8'));
  expect(alive(devPid)).toBe(true);
  process.kill(proc!.child.pid!, 'SIGKILL'); // the main process alone, as the OOM killer would
  await until('the dev server to die with its parent', () => !alive(devPid));

  // Started again on the same data directory and ports: it comes up and serves.
  let apiKey = await start();
  const again = await postUpload(url, {
    apiKey,
    key: `after-kill-${randomUUID()}`,
    body: Buffer.from('after a kill'),
    contentType: 'text/plain',
  });
  expect(again.status, again.text).toBe(201);
  await proc!.stop();

  // A dev server left running by an older version (no parent-death signal) holds the UI
  // port and the database file, with its pid on record: the next start stops it first.
  const { startTemporalDevServer } = await import('../../src/devstack/temporal-dev-server');
  const orphan = await startTemporalDevServer({
    port: await serverPort(),
    uiPort: Number(env.TEMPORAL_UI_PORT),
    dbFile: path.join(dataDir, 'temporal.db'),
  });
  const { writeFileSync } = await import('node:fs');
  writeFileSync(pidFile, String(orphan.process.child.pid));
  expect(alive(orphan.process.child.pid!)).toBe(true);
  apiKey = await start();
  expect(alive(orphan.process.child.pid!)).toBe(false);
  const served = await postUpload(url, {
    apiKey,
    key: `after-orphan-${randomUUID()}`,
    body: Buffer.from('after an orphan'),
    contentType: 'text/plain',
  });
  expect(served.status, served.text).toBe(201);
}, 240_000);
