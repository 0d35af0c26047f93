// The upload page in Debian's Chromium (playwright-core, headless): upload a file; then go
// offline mid-upload, reload, come back online — the IndexedDB outbox finishes the upload
// with its original key, exactly once. Screenshots land in test-artifacts/.
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { png } from '../helpers/media';
import { TcpProxy } from '../support/tcp-proxy';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually, rowsForKey } from '../helpers/inspect';
import { launchChromium, signInToConsole } from '../helpers/browser';
import { startFileOrigin } from '../support/file-origin';

const artifacts = path.resolve(import.meta.dirname, '../../test-artifacts');
let stack: TestStack;
let proxy: TcpProxy;
let browser: Browser;
let tenant: { tenantId: string; apiKey: string };
let origin: string;

beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true });
  stack = await startTestStack('browser');
  tenant = await stack.createTenant();
  proxy = await new TcpProxy({ host: '127.0.0.1', port: Number(new URL(stack.url).port) }).start();
  origin = `http://127.0.0.1:${proxy.port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await proxy?.stop();
  await stack?.stop();
});

async function openPage(): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${origin}/outbox`);
  await page.fill('#token', tenant.apiKey);
  await page.dispatchEvent('#token', 'change');
  return page;
}

it('uploads a picked file and shows it done', async () => {
  const page = await openPage();
  await page.setInputFiles('#files', { name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('hello from the browser') });
  await page.waitForSelector('.status[data-state=done]', { timeout: 30_000 });
  const key = await page.getAttribute('#uploads li', 'data-key');
  expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key!)).uploads).toHaveLength(1);
  await page.screenshot({ path: path.join(artifacts, 'upload-page-done.png'), fullPage: true });
  await page.context().close();
});

it('finishes an upload interrupted by going offline and a reload, once, with the same key', async () => {
  // Throttled before the page opens: the proxy picks a connection's mode when it accepts it,
  // and the upload may reuse the connection the page was loaded over.
  proxy.setMode('throttle');
  proxy.bytesPerSecond = 128 * 1024; // 4 MiB take ~30 s: the upload is surely mid-way when the network goes
  const page = await openPage();
  await page.setInputFiles('#files', { name: 'big.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(4 * 1024 * 1024, 7) });
  const key = (await eventually(async () => page.getAttribute('#uploads li', 'data-key'), 20_000))!;
  await eventually(async () => (await page.$eval('#uploads li progress', (p) => (p as unknown as { value: number }).value)) > 0, 20_000);

  await page.context().setOffline(true);
  proxy.setMode('refuse'); // the connection in flight dies too
  let lastStatus = '';
  await eventually(async () => /retry/.test((lastStatus = (await page.textContent('#uploads li .status')) ?? '')), 45_000).catch((err) => {
    throw new Error(`${(err as Error).message}; last status: ${lastStatus}`);
  });
  proxy.mode = 'forward';
  await page.context().setOffline(false);
  await page.reload();
  await page.fill('#token', tenant.apiKey);
  await page.dispatchEvent('#token', 'change');

  await page.waitForSelector('.status[data-state=done]', { timeout: 90_000 }).catch(async (err) => {
    throw new Error(
      `${(err as Error).message}; statuses: ${JSON.stringify(await page.$$eval('#uploads li', (lis) => lis.map((li) => li.textContent)))}`,
    );
  });
  expect(await page.getAttribute('#uploads li', 'data-key')).toBe(key);
  const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
  expect(rows.uploads).toHaveLength(1);
  expect(Number(rows.uploads[0].bytes)).toBe(4 * 1024 * 1024);
  await page.screenshot({ path: path.join(artifacts, 'upload-page-after-offline.png'), fullPage: true });
  await page.context().close();
}, 180_000);

describe('the Uppy page at /', () => {
  const MiB = 1024 * 1024;
  async function openUppy(pagePath = '/', importHosts?: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await context.newPage();
    if (process.env.UPPY_DEBUG) page.on('console', (m) => console.log('PAGE', m.text().slice(0, 300)));
    // The operator signs in to the console once; the upload page holds only an upload token
    // minted through that session.
    await signInToConsole(page, origin, tenant.apiKey);
    await page.goto(`${origin}/setup`);
    await page.waitForSelector('#state[data-signed-in=yes]');
    if (importHosts) {
      await page.fill('#import-hosts', importHosts);
      await page.dispatchEvent('#import-hosts', 'change');
    }
    if (process.env.UPPY_DEBUG) await page.evaluate(() => localStorage.setItem('oncely.debug', '1'));
    page.on('request', (r) => {
      if (r.headers().authorization?.includes(tenant.apiKey)) keyRequests.push(`${r.method()} ${new URL(r.url()).pathname}`);
    });
    await page.goto(`${origin}${pagePath}`);
    await page.waitForSelector('#who[data-token-id]:not([data-token-id=""])');
    return page;
  }
  const keyRequests: string[] = [];

  it('uploads a picture over tus and shows it committed with its thumbnail', async () => {
    proxy.mode = 'forward';
    const page = await openUppy();
    await page
      .locator('input.uppy-Dashboard-input')
      .first()
      .setInputFiles({ name: 'picture.png', mimeType: 'image/png', buffer: await png(800, 600) });
    await page.waitForSelector('#done li[data-status=processed] img[src^="blob:"]', { timeout: 60_000 });
    const key = (await page.getAttribute('#done li', 'data-key'))!;
    const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
    expect(rows.uploads).toHaveLength(1);
    expect(rows.uploads[0].content_type).toBe('image/png');
    expect(rows.uploads[0].token_id).toBe(await page.getAttribute('#who', 'data-token-id'));
    // The API key never went out from the page: the token was minted through the console session.
    expect(keyRequests).toEqual([]);
    // The console's page of the upload: a download, then a delete that erases it.
    const uploadId = rows.uploads[0].id as string;
    await page.screenshot({ path: path.join(artifacts, 'uppy-page.png'), fullPage: true });
    await page.goto(`${origin}/console/uploads/${uploadId}`);
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: 30_000 }), page.click('a:has-text("Download")')]);
    expect(download.suggestedFilename()).toBe('picture.png');
    await page.click('button:has-text("Delete")');
    await page.waitForURL(/notice=deleted/);
    await eventually(async () => (await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads[0]?.status === 'deleted', 60_000);
    expect((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads[0]).toMatchObject({ status: 'deleted', file_name: null });
    await page.context().close();
  }, 120_000);

  it("imports a file by link (Uppy's Link source): read by Oncely under the file's key, committed once, shown like any upload", async () => {
    proxy.mode = 'forward';
    const picture = await png(640, 480);
    const files = await startFileOrigin(picture, { contentType: 'image/png' });
    try {
      const page = await openUppy('/', '127.0.0.1');
      await page.click('[data-uppy-acquirer-id="Url"] button');
      await page.fill('.uppy-Url-input', `${files.base}/holiday/link.png`);
      await page.click('.uppy-Url-importButton');
      await page.waitForSelector('#done li[data-status=processed] img[src^="blob:"]', { timeout: 60_000 });
      await page.screenshot({ path: path.join(artifacts, 'uppy-link.png'), fullPage: true });
      const key = (await page.getAttribute('#done li', 'data-key'))!;
      const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
      expect(rows.uploads).toHaveLength(1);
      expect(rows.uploads[0]).toMatchObject({ content_type: 'image/png', file_name: 'link.png', bytes: String(picture.length) });
      expect(rows.uploads[0].token_id).toBe(await page.getAttribute('#who', 'data-token-id'));
      // The origin was read once, by Oncely (the page's credential never went there).
      expect(files.lastAuthorization).toBeUndefined();
      await page.context().close();
    } finally {
      await files.close();
    }
  }, 120_000);

  it('with ?protocol=ietf-draft-05 uploads over the IETF resumable-upload draft to POST /v1/uploads, committed once', async () => {
    proxy.mode = 'forward';
    const page = await openUppy('/?protocol=ietf-draft-05');
    const seen: string[] = [];
    page.on('response', (r) => {
      const p = new URL(r.url()).pathname;
      if (p === '/v1/uploads' || p.startsWith('/v1/resumable-uploads/') || p.startsWith('/v1/tus'))
        seen.push(`${r.request().method()} ${p.replace(/[0-9a-f-]{36}$/, '{id}')} ${r.status()}`);
    });
    const file = randomBytes(9 * MiB + 3);
    await page
      .locator('input.uppy-Dashboard-input')
      .first()
      .setInputFiles({ name: 'draft.bin', mimeType: 'application/octet-stream', buffer: file });
    await page.waitForSelector('#done li[data-key]', { timeout: 60_000 });
    const key = (await page.getAttribute('#done li', 'data-key'))!;
    const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
    expect(rows.uploads).toHaveLength(1);
    expect(rows.uploads[0].sha256).toBe(createHash('sha256').update(file).digest('hex'));
    expect(seen[0]).toBe('POST /v1/uploads 201');
    expect(seen.slice(1).every((s) => s.startsWith('PATCH /v1/resumable-uploads/{id}'))).toBe(true);
    expect(seen.at(-1)).toBe('PATCH /v1/resumable-uploads/{id} 201');
    await page.context().close();
  }, 120_000);

  it('a 40 MiB upload cut by going offline and a reload finishes once, with its original key, from where it stopped', async () => {
    proxy.setMode('throttle');
    proxy.bytesPerSecond = 2 * MiB; // ~20 s in all: surely mid-way when the network goes
    const page = await openUppy();
    const file = randomBytes(40 * MiB);
    // Picked from disk, as a user does, not pushed through the DevTools protocol as 53 MB of base64.
    const picked = path.join(mkdtempSync(path.join(os.tmpdir(), 'oncely-browser-')), 'big.bin');
    writeFileSync(picked, file);
    await page.locator('input.uppy-Dashboard-input').first().setInputFiles(picked);
    // A part is acknowledged server-side: the session is mid-way.
    const session = await eventually(async () => {
      const r = await stack.runtime.pool.query(
        'SELECT idempotency_key, upload_offset FROM resumable_sessions WHERE tenant_id = $1 AND upload_length = $2',
        [tenant.tenantId, file.length],
      );
      return r.rows[0] && Number(r.rows[0].upload_offset) > 0
        ? (r.rows[0] as { idempotency_key: string; upload_offset: string })
        : undefined;
    }, 60_000);
    expect(Number(session.upload_offset)).toBeLessThan(file.length);

    await page.context().setOffline(true);
    proxy.setMode('refuse'); // the connection in flight dies too
    await new Promise((r) => setTimeout(r, 1000));
    proxy.mode = 'forward';
    await page.context().setOffline(false);
    await page.reload();

    const key = session.idempotency_key;
    // What the page did after the reload, for the failure message.
    const seen: string[] = [];
    page.on('response', (r) => r.url().includes('/v1/tus') && seen.push(`${r.request().method()} ${r.status()}`));
    page.on('requestfailed', (r) => seen.push(`${r.method()} ${new URL(r.url()).pathname} failed: ${r.failure()?.errorText}`));
    page.on('console', (m) => m.type() === 'error' && seen.push(`console: ${m.text().slice(0, 200)}`));
    await eventually(
      async () => ((await rowsForKey(stack.runtime.pool, tenant.tenantId, key)).uploads.length === 1 ? true : undefined),
      120_000,
    ).catch(async (err) => {
      const row = await stack.runtime.pool.query(
        'SELECT upload_offset, lease_owner, lease_until FROM resumable_sessions WHERE idempotency_key = $1',
        [key],
      );
      const files = await page.$$eval('.uppy-Dashboard-Item', (items) => items.map((i) => `${i.className}: ${i.textContent}`));
      throw new Error(
        `${(err as Error).message}; session ${JSON.stringify(row.rows[0])}; files ${JSON.stringify(files)}; page: ${seen.slice(-30).join(' | ')}`,
      );
    });
    const rows = await rowsForKey(stack.runtime.pool, tenant.tenantId, key);
    expect(rows.uploads).toHaveLength(1);
    expect(Number(rows.uploads[0].bytes)).toBe(file.length);
    expect(rows.uploads[0].sha256).toBe(createHash('sha256').update(file).digest('hex'));
    const sessions = await stack.runtime.pool.query(
      'SELECT count(*)::int AS n FROM resumable_sessions WHERE tenant_id = $1 AND upload_length = $2',
      [tenant.tenantId, file.length],
    );
    expect(sessions.rows[0].n).toBe(1);
    await page.waitForSelector(`#done li[data-key="${key}"]`, { timeout: 30_000 });
    await page.screenshot({ path: path.join(artifacts, 'uppy-page-after-offline.png'), fullPage: true });
    await page.context().close();
  }, 240_000);
});

it('renders the API reference at /docs from the OpenAPI document, offline', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const external: string[] = [];
  page.on('request', (r) => !r.url().startsWith(origin) && external.push(r.url()));
  await page.goto(`${origin}/docs`);
  await page.waitForSelector('.opblock', { timeout: 30_000 });
  const doc = (await (await fetch(`${stack.url}/openapi.json`)).json()) as {
    paths: Record<string, object>;
    webhooks: Record<string, object>;
  };
  // One block per operation, and one per outgoing webhook.
  const operations = [...Object.values(doc.paths), ...Object.values(doc.webhooks)].reduce((n, ops) => n + Object.keys(ops).length, 0);
  await expect.poll(() => page.locator('.opblock').count(), { timeout: 10_000 }).toBe(operations);
  expect(await page.locator('.opblock-summary-path', { hasText: '/v1/uploads' }).count()).toBeGreaterThan(0);
  expect(external).toEqual([]);
  await page.screenshot({ path: path.join(artifacts, 'api-docs.png'), fullPage: true });
  await context.close();
});
