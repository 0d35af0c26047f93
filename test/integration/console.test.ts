// The console in Debian's Chromium, as a person uses it: sign in with a key, find an upload by
// name, open it, redeliver an event with a double click (one redelivery), reprocess, delete,
// sign out. A revoked key's session ends; a read-only key sees no write buttons and is refused
// if it posts anyway; another tenant sees nothing. Every page passes axe-core with no serious
// or critical violation. Screenshots land in test-artifacts/console/ (and docs/console/ with
// ONCELY_DOCS_SCREENSHOTS=1).
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchChromium, signInToConsole } from '../helpers/browser';
import { jsonCaller, postUpload } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { png } from '../helpers/media';
import { sharedS3Client, startStackOnStore, type TestStack } from '../helpers/stack';
import { WebhookReceiver } from '../support/webhook-receiver';

const artifacts = path.resolve(import.meta.dirname, '../../test-artifacts/console');
const docs = path.resolve(import.meta.dirname, '../../docs/console');
const ADMIN_TOKEN = `admin-${randomUUID()}`;
const axeSource = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

describe.each(['local', 's3'] as const)('the console on the %s store', (kind) => {
  let stack: TestStack;
  let browser: Browser;
  let receiver: WebhookReceiver;
  let owner: { tenantId: string; apiKey: string };
  let other: { tenantId: string; apiKey: string };
  let pictureId: string;
  let notesId: string;
  const api = jsonCaller(() => ({ base: stack.url, apiKey: owner.apiKey }));

  beforeAll(async () => {
    mkdirSync(artifacts, { recursive: true });
    stack = await startStackOnStore(kind, `console_${kind}`, {
      env: {
        WEBHOOK_RETRY_MAX_ATTEMPTS: '2',
        WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: '1',
        ADMIN_TOKEN,
        STORAGE_TARGET_ALLOW_PRIVATE_NETWORKS: 'true',
        STORAGE_MIGRATION_SOURCE_GRACE_SECONDS: '0',
      },
    });
    owner = await stack.createTenant('console-owner');
    other = await stack.createTenant('console-other');
    receiver = await new WebhookReceiver().start();
    const endpoint = await api('POST', '/v1/webhook-endpoints', { url: receiver.url }, randomUUID());
    expect(endpoint.status).toBe(201);
    receiver.secret = endpoint.json.secret;
    const picture = await postUpload(stack.url, {
      apiKey: owner.apiKey,
      key: `console-pic-${randomUUID()}`,
      body: await png(64, 48),
      contentType: 'image/png',
      fileName: 'sunset-beach.png',
      prefer: 'wait=60',
    });
    expect(picture.status).toBe(201);
    pictureId = picture.json.uploadId;
    const notes = await postUpload(stack.url, {
      apiKey: owner.apiKey,
      key: `console-notes-${randomUUID()}`,
      body: Buffer.from('meeting notes'),
      contentType: 'text/plain',
      fileName: 'notes.txt',
    });
    notesId = notes.json.uploadId;
    await eventually(async () => (await api('GET', `/v1/uploads/${pictureId}`)).json.processing.status === 'ready', 60_000);
    await eventually(async () => receiver.received.some((r) => r.id === `evt_${pictureId.replaceAll('-', '')}_processed`), 60_000);
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await receiver?.stop();
    await stack?.stop();
  });

  /** A fresh browser profile; axe needs its script injected, which the console's CSP would refuse. */
  async function profile(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ bypassCSP: true });
    return { context, page: await context.newPage() };
  }

  async function signIn(page: Page, key: string): Promise<void> {
    await page.goto(`${stack.url}/console`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await signInToConsole(page, stack.url, key);
  }

  /** Sends the form as drawn `times` at once (a double click's submissions); each answer's status (0: a redirect). */
  async function submitDrawnForm(form: Locator, times: number): Promise<number[]> {
    return form.evaluate(async (f, n) => {
      const g = globalThis as unknown as { FormData: new (f: unknown) => Iterable<[string, string]> };
      const send = () =>
        fetch((f as unknown as { action: string }).action, {
          method: 'POST',
          body: new URLSearchParams([...new g.FormData(f)]),
          redirect: 'manual',
        });
      return (await Promise.all(Array.from({ length: n }, send))).map((r) => r.status);
    }, times);
  }

  async function accessible(page: Page, name: string): Promise<void> {
    await page.addScriptTag({ path: axeSource });
    const result = (await page.evaluate(async () => {
      const axe = (globalThis as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<unknown> } }).axe;
      return axe.run((globalThis as unknown as { document: unknown }).document, { resultTypes: ['violations'] });
    })) as { violations: { id: string; impact: string; nodes: { target: string[] }[] }[] };
    const serious = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(serious.map((v) => `${name}: ${v.id} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
    const file = path.join(artifacts, kind === 'local' ? `${name}.png` : `${name}-${kind}.png`);
    await page.screenshot({ path: file, fullPage: true });
    if (process.env.ONCELY_DOCS_SCREENSHOTS === '1' && kind === 'local') {
      mkdirSync(docs, { recursive: true });
      copyFileSync(file, path.join(docs, `${name}.png`));
    }
  }

  it('signs in with a key into an HttpOnly, SameSite=Strict session cookie and keeps no key in the page', async () => {
    const { context, page } = await profile();
    await accessible(await (async () => (await page.goto(`${stack.url}/console/sign-in`), page))(), 'sign-in');
    await signIn(page, owner.apiKey);
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ name: 'oncely_console', httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(cookie!.value).not.toContain(owner.apiKey);
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }))).not.toContain(
      owner.apiKey,
    );
    expect(await page.content()).not.toContain(owner.apiKey);
    const res = await page.request.get(`${stack.url}/console/uploads`);
    expect(res.headers()['content-security-policy']).toMatch(/script-src 'self'/);
    expect(res.headers()['content-security-policy']).not.toMatch(/unsafe-inline/);
    await context.close();
  });

  it("sends a sign-in only to a console path, and mints upload tokens for a script only with the session's CSRF header", async () => {
    const signIn = (next: string) =>
      fetch(`${stack.url}/console/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.url },
        body: new URLSearchParams({ secret: owner.apiKey, next }),
        redirect: 'manual',
      });
    for (const next of ['//evil.example/console', 'https://evil.example/', '/console/../v1/uploads'])
      expect((await signIn(next)).headers.get('location'), next).toBe('/console');
    const ok = await signIn('/console/events');
    expect(ok.headers.get('location')).toBe('/console/events');
    const cookie = ok.headers.get('set-cookie')!.split(';')[0]!;
    const mint = (headers: Record<string, string>) =>
      fetch(`${stack.url}/console/upload-tokens`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json', ...headers },
        body: '{}',
      });
    const before = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM upload_tokens WHERE tenant_id = $1', [owner.tenantId]);
    expect((await mint({})).status).toBe(403);
    expect((await mint({ 'x-csrf-token': 'not-the-token' })).status).toBe(403);
    const after = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM upload_tokens WHERE tenant_id = $1', [owner.tenantId]);
    expect(after.rows[0].n).toBe(before.rows[0].n);
    const session = (await (await fetch(`${stack.url}/console/session`, { headers: { cookie } })).json()) as { csrfToken: string };
    const minted = await mint({ 'x-csrf-token': session.csrfToken });
    expect(minted.status).toBe(201);
    expect(((await minted.json()) as { token: string }).token).toMatch(/^[A-Za-z0-9_.-]+$/);
  });

  it('a wrong key is refused with the sign-in page again (401), and no session is made', async () => {
    const res = await fetch(`${stack.url}/console/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.url },
      body: 'secret=onc_not-a-real-key-at-all',
      redirect: 'manual',
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(await res.text()).toContain('not valid');
  });

  it('finds an upload by name, opens it, redelivers an event once on a double click, deletes it, signs out', async () => {
    const { context, page } = await profile();
    await signIn(page, owner.apiKey);
    await expect.poll(() => page.locator('table.uploads tbody tr').count()).toBe(2);
    await accessible(page, 'uploads');

    await page.fill('input[name=name]', 'SUNSET');
    await page.click('button:has-text("Filter")');
    await page.waitForURL(/name=SUNSET/);
    expect(await page.locator('table.uploads tbody tr').count()).toBe(1);
    // A variant made through a preset (the tenant serves option strings only through signed URLs): shown with its preview.
    expect((await api('POST', '/v1/image-presets', { name: 'console-small', spec: 'w_16,f_png' }, randomUUID())).status).toBe(201);
    const rendered = await fetch(`${stack.url}/v1/uploads/${pictureId}/images/console-small`, {
      headers: { authorization: `Bearer ${owner.apiKey}` },
    });
    expect([rendered.status, (await rendered.arrayBuffer()).byteLength > 0]).toEqual([200, true]);
    await page.click('a:has-text("sunset-beach.png")');
    await page.waitForURL(new RegExp(`/console/uploads/${pictureId}$`));
    expect(await page.textContent('h1')).toBe('sunset-beach.png');
    expect(await page.textContent('.facts')).toContain('one request (POST /v1/uploads)');
    // Every request that came with its key (written about a second after its answer): here its one POST.
    await expect
      .poll(
        async () => {
          if ((await page.locator('#requests-h').count()) === 0) await page.reload();
          return page.locator('#requests-h + table').textContent();
        },
        { timeout: 30_000 },
      )
      .toMatch(/1 request\b[\s\S]*POST \/v1\/uploads[\s\S]*201\s*created/);
    expect(await page.locator('.timeline li').count()).toBeGreaterThan(0);
    const variant = page.locator('#variants-h ~ ul img');
    expect(await variant.count()).toBe(1);
    await expect
      .poll(() =>
        variant.evaluate((img) => {
          const loaded = img as unknown as { complete: boolean; naturalWidth: number };
          return loaded.complete && loaded.naturalWidth;
        }),
      )
      .toBe(16);
    const preview = await page.request.get(`${stack.url}/console/uploads/${pictureId}/thumbnail`);
    expect(preview.status()).toBe(200);
    expect(preview.headers()['content-type']).toMatch(/^image\//);
    await accessible(page, 'upload');

    const processed = `evt_${pictureId.replaceAll('-', '')}_processed`;
    const before = receiver.received.filter((r) => r.id === processed).length;
    const form = page.locator(`article:has(a[href="/console/events/${processed}"]) form.action`);
    // Two submissions of the same drawn form, as a double click sends them: one redelivery.
    const statuses = await submitDrawnForm(form, 2);
    expect(statuses).toEqual([0, 0]); // both answered with a redirect (opaque to fetch): no problem page
    await eventually(async () => receiver.received.filter((r) => r.id === processed).length === before + 1, 30_000);
    // The same drawn form sent again is the same action: replayed, nothing sent.
    await form.locator('button').click();
    await page.waitForURL(/notice=redelivered/);
    await new Promise((r) => setTimeout(r, 2000));
    expect(receiver.received.filter((r) => r.id === processed).length).toBe(before + 1);
    // A page drawn afresh is a new action; a real double click on it redelivers once.
    await page.goto(`${stack.url}/console/uploads/${pictureId}`);
    await form.locator('button').dblclick();
    await page.waitForURL(/notice=redelivered/);
    await accessible(page, 'event');
    await eventually(async () => receiver.received.filter((r) => r.id === processed).length >= before + 2, 30_000);
    await new Promise((r) => setTimeout(r, 2000));
    expect(receiver.received.filter((r) => r.id === processed).length).toBe(before + 2);

    await page.goto(`${stack.url}/console/uploads/${pictureId}`);
    await page.click('button:has-text("Delete")');
    await page.waitForURL(/notice=deleted/);
    await eventually(async () => (await api('GET', `/v1/uploads/${pictureId}`)).json.status === 'deleted', 60_000);

    await page.click('button:has-text("Sign out")');
    await page.waitForURL(/\/console\/sign-in/);
    await page.goto(`${stack.url}/console/uploads`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await context.close();
  });

  it("reprocesses one upload with its pipeline's latest version, once however often the button is sent", async () => {
    const gallery = (variant: string) => ({
      name: 'console-gallery',
      steps: [{ type: 'image.variants', variants: [{ name: variant, width: 8, format: 'png' }] }],
    });
    expect((await api('POST', '/v1/pipelines', gallery('old'), randomUUID())).status).toBe(201);
    const poster = await postUpload(stack.url, {
      apiKey: owner.apiKey,
      key: `console-poster-${randomUUID()}`,
      body: await png(32, 32),
      contentType: 'image/png',
      fileName: 'poster.png',
      pipeline: 'console-gallery',
    });
    expect(poster.status).toBe(201);
    const id = poster.json.uploadId as string;
    await eventually(async () => (await api('GET', `/v1/uploads/${id}`)).json.processing.status === 'ready', 60_000);
    expect((await api('POST', '/v1/pipelines', gallery('new'), randomUUID())).status).toBe(201);

    const { context, page } = await profile();
    await signIn(page, owner.apiKey);
    await page.goto(`${stack.url}/console/uploads/${id}`);
    const form = page.locator('form.action:has(button:has-text("Reprocess"))');
    const statuses = await submitDrawnForm(form, 3);
    expect(statuses).toEqual([0, 0, 0]);
    await eventually(async () => (await api('GET', `/v1/uploads/${id}`)).json.pipeline.version === 2, 60_000);
    const jobs = await stack.runtime.pool.query('SELECT count(*)::int AS n FROM reprocess_jobs WHERE tenant_id = $1', [owner.tenantId]);
    expect(jobs.rows[0].n).toBe(1);
    // The job, listed by the API and shown on the processing page with the pipeline's versions.
    const listed = await api('GET', '/v1/reprocess-jobs');
    expect(listed.json.items).toHaveLength(1);
    expect(listed.json.items[0]).toMatchObject({ pipeline: 'console-gallery', version: 2, total: 1 });
    await page.goto(`${stack.url}/console/processing`);
    expect(await page.textContent('#pipelines-h + table')).toContain('console-gallery');
    expect(await page.locator('.jobs li').count()).toBe(1);
    await accessible(page, 'processing');
    await context.close();
  });

  it("shows an upload's metadata, tags and versions, and places and releases its legal hold", async () => {
    const up = await postUpload(stack.url, {
      apiKey: owner.apiKey,
      key: `console-record-${randomUUID()}`,
      body: Buffer.from('a record'),
      fileName: 'record.txt',
      headers: { 'x-metadata': '{"album":"console"}', 'x-tags': 'first' },
    });
    const id = up.json.uploadId as string;
    const patched = await fetch(`${stack.url}/v1/uploads/${id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${owner.apiKey}`, 'content-type': 'application/json', 'if-match': '"1"' },
      body: JSON.stringify({ tags: ['second', 'final'] }),
    });
    expect(patched.status).toBe(200);
    const { context, page } = await profile();
    await signIn(page, owner.apiKey);
    await page.goto(`${stack.url}/console/uploads/${id}`);
    const facts = await page.textContent('.facts');
    expect(facts).toContain('"album": "console"');
    expect(facts).toContain('final');
    expect(await page.locator('section[aria-labelledby=versions-h] li').count()).toBe(2);
    await page.fill('input[name=reason]', 'Matter 42');
    await page.click('button:has-text("Place a legal hold")');
    await page.waitForURL(/notice=held/);
    expect(await page.textContent('.facts')).toContain('Matter 42');
    expect(await page.locator('button:has-text("Delete")').count()).toBe(0);
    await accessible(page, 'upload-held');
    expect((await api('DELETE', `/v1/uploads/${id}`)).json.error).toBe('legal_hold');
    await page.click('button:has-text("Release the legal hold")');
    await page.waitForURL(/notice=released/);
    expect((await api('GET', `/v1/uploads/${id}`)).json.legalHold).toBeNull();
    // With a restore window, Delete leaves it restorable, and Restore brings it back.
    const grace = (hours: number) =>
      fetch(`${stack.url}/admin/tenants/${owner.tenantId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ deleteGraceHours: hours }),
      });
    expect((await grace(1)).status).toBe(200);
    try {
      await page.click('button:has-text("Delete")');
      await page.waitForURL(/notice=deleted/);
      await eventually(async () => (await api('GET', `/v1/uploads/${id}`)).json.status === 'deleted_pending', 30_000);
      await page.goto(`${stack.url}/console/uploads/${id}`);
      expect(await page.textContent('.facts')).toContain('Restorable until');
      await accessible(page, 'upload-restorable');
      await page.click('button:has-text("Restore")');
      await page.waitForURL(/notice=restored/);
      expect((await api('GET', `/v1/uploads/${id}`)).json).toMatchObject({ deletedAt: null, restorableUntil: null });
    } finally {
      await grace(0);
    }
    await context.close();
  });

  it('the event log lists failed deliveries first; credentials and sessions pages list keys and sign-ins', async () => {
    const { context, page } = await profile();
    await signIn(page, owner.apiKey);
    await page.goto(`${stack.url}/console/events`);
    expect(await page.locator('h2:has-text("Failed deliveries") + *').count()).toBe(1);
    await accessible(page, 'events');
    // Recovering an endpoint's failed events: its own page shows the counts, refreshed until it is done.
    await page.locator('.endpoints button:has-text("Redeliver failed events")').first().click();
    await page.waitForURL(/\/console\/endpoints\/[0-9a-f-]+\/recovery\?id=recover%2F.*notice=recovering/);
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.textContent('.facts');
        },
        { timeout: 30_000 },
      )
      .toMatch(/completed[\s\S]*Found/);
    await accessible(page, 'recovery');
    // A recovery id the endpoint never had (or none) is a 404 page, not a crash.
    const recoveryPath = new URL(page.url()).pathname;
    const unknown = await page.goto(
      `${stack.url}${recoveryPath}?id=${encodeURIComponent('recover/00000000-0000-4000-8000-000000000000/2026-01-01/2026-01-02')}`,
    );
    expect(unknown?.status()).toBe(404);
    expect(await page.textContent('main')).toContain('No such recovery');
    expect((await page.goto(`${stack.url}${recoveryPath}`))?.status()).toBe(404);
    const minted = await api('POST', '/v1/upload-tokens', { expiresInSeconds: 600, subject: 'user-42', maxUploads: 3 }, randomUUID());
    expect(minted.status).toBe(201);
    const tokens = await api('GET', '/v1/upload-tokens?limit=100');
    expect(tokens.json.data.map((t: { id: string }) => t.id)).toContain(minted.json.id);
    expect(tokens.json.data.find((t: { id: string }) => t.id === minted.json.id)).toMatchObject({
      subject: 'user-42',
      uploadsUsed: 0,
      maxUploads: 3,
    });
    await page.goto(`${stack.url}/console/credentials`);
    expect(await page.locator('#keys-h ~ table tbody tr').count()).toBeGreaterThan(0);
    // The signed-in key has been used (this session's requests): its last use is shown, not "never".
    const ownKey = page.locator('#keys-h ~ table tbody tr', { hasText: "(this session's)" });
    expect(await ownKey.locator('td').nth(3).textContent()).not.toContain('never');
    const tokenRow = page.locator('#tokens-h ~ table tr', { hasText: minted.json.id });
    expect(await tokenRow.textContent()).toMatch(/user-42[\s\S]*0 of 3[\s\S]*active/);
    await accessible(page, 'credentials');
    await tokenRow.locator('button:has-text("Revoke token")').click();
    await page.waitForURL(/notice=revoked/);
    expect((await api('GET', `/v1/upload-tokens/${minted.json.id}`)).json.revokedAt).not.toBeNull();
    await page.goto(`${stack.url}/console/sessions`);
    expect(await page.locator('.badge-this_session').count()).toBe(1);
    await accessible(page, 'sessions');

    // Usage: the quotas the operator set, what is used and left, and the days as on /v1/usage.
    const set = await fetch(`${stack.url}/admin/tenants/${owner.tenantId}/quotas`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ maxUploadsPerMonth: 1000 }),
    });
    expect(set.status).toBe(200);
    const usage = (await api('GET', '/v1/usage?granularity=day')).json;
    await page.goto(`${stack.url}/console/usage`);
    const uploadsRow = page.locator('#quotas-h ~ table tr', { hasText: 'Uploads this month' });
    const committed = usage.buckets.reduce((n: number, b: { uploads: number }) => n + b.uploads, 0);
    expect((await uploadsRow.textContent())!.replace(/\s+/g, ' ')).toContain(
      `1,000 ${committed.toLocaleString('en')} ${(1000 - committed).toLocaleString('en')}`,
    );
    expect(await page.locator('#usage-h ~ table tbody tr').count()).toBe(30);
    await accessible(page, 'usage');
    const csv = await page.evaluate(async () => {
      const res = await fetch('/console/usage.csv');
      return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
    });
    expect(csv.status).toBe(200);
    expect(csv.type).toContain('text/csv');
    expect(csv.text.split('\r\n')[0]).toMatch(/^at,uploads,ingress_bytes/);
    await context.close();
  });

  it("a revoked key's session ends at its next request", async () => {
    const made = await api('POST', '/v1/api-keys', { label: 'short-lived' }, randomUUID());
    expect(made.status).toBe(201);
    const { context, page } = await profile();
    await signIn(page, made.json.key);
    expect(await page.locator('table.uploads').count()).toBe(1);
    expect((await api('DELETE', `/v1/api-keys/${made.json.id}`, undefined, randomUUID())).status).toBeLessThan(300);
    await page.goto(`${stack.url}/console/uploads`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await context.close();
  });

  it('a read-only key sees no write buttons, and a forged post is refused with 403 and changes nothing', async () => {
    const made = await api('POST', '/v1/api-keys', { label: 'reader', scopes: ['uploads:read'] }, randomUUID());
    const { context, page } = await profile();
    await signIn(page, made.json.key);
    await page.goto(`${stack.url}/console/uploads/${notesId}`);
    expect(await page.locator('main button').count()).toBe(0);
    const csrf = await page.getAttribute('input[name=csrf]', 'value');
    const res = await page.request.post(`${stack.url}/console/uploads/${notesId}/delete`, {
      form: { csrf: csrf!, once: randomUUID() },
      headers: { origin: stack.url },
    });
    expect(res.status()).toBe(403);
    expect((await api('GET', `/v1/uploads/${notesId}`)).json.deletedAt).toBeNull();
    // Without the form's token the post is refused before anything runs.
    const forged = await page.request.post(`${stack.url}/console/sign-out`, { form: { csrf: 'wrong' }, headers: { origin: stack.url } });
    expect(forged.status()).toBe(403);
    // Its nav offers only the pages its key may read; one asked for anyway answers the API's refusal, in words.
    expect(await page.locator('header nav a').allTextContents()).toEqual(['Uploads', 'Processing', 'Credentials', 'Usage', 'Sessions']);
    const storage = await page.goto(`${stack.url}/console/storage`);
    expect(storage!.status()).toBe(403);
    expect(await page.textContent('main')).toContain('This API key does not hold the scope storage:manage.');
    await context.close();
  });

  it('another tenant sees none of the first one: not in its list, 404 on its page and its preview', async () => {
    const { context, page } = await profile();
    await signIn(page, other.apiKey);
    expect(await page.locator('table.uploads').count()).toBe(0);
    expect(await page.textContent('main')).toContain('No uploads match');
    const res = await page.goto(`${stack.url}/console/uploads/${notesId}`);
    expect(res!.status()).toBe(404);
    expect((await page.request.get(`${stack.url}/console/uploads/${notesId}/content`)).status()).toBe(404);
    await context.close();
  });

  it('the operator sees every tenant with its usage and the task queues with their workers, and deletes a tenant once', async () => {
    const doomed = await stack.createTenant('console-doomed');
    const { context, page } = await profile();
    await signIn(page, ADMIN_TOKEN);
    expect(new URL(page.url()).pathname).toBe('/console/operator');
    const row = page.locator('tr', { hasText: 'console-owner' });
    expect(await row.textContent()).toMatch(/active/);
    expect(Number((await row.locator('td').nth(3).textContent())!.replace(/\D/g, ''))).toBeGreaterThanOrEqual(2);
    // The stack's worker polls both queues.
    const queues = page.locator('#queues-h + table tbody tr');
    expect(await queues.count()).toBe(4);
    expect(await queues.first().textContent()).toMatch(/workflow\s*[1-9]/);
    expect(await page.locator('#usage-h ~ table tbody tr').count()).toBe(30);
    await accessible(page, 'operator');
    // No tenant data in an operator session.
    expect((await page.goto(`${stack.url}/console/uploads`))!.status()).toBe(403);
    await page.goto(`${stack.url}/console/operator`);
    const form = page.locator(`form[action="/console/operator/tenants/${doomed.tenantId}/delete"]`);
    const statuses = await submitDrawnForm(form, 2);
    expect(statuses).toEqual([0, 0]);
    await eventually(async () => {
      const t = await fetch(`${stack.url}/admin/tenants/${doomed.tenantId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      return ((await t.json()) as { status: string }).status === 'deleted';
    }, 60_000);
    let runs = 0;
    for await (const _ of stack.temporal.workflow.list({ query: `WorkflowId = 'tenant-delete/${doomed.tenantId}'` })) runs++;
    expect(runs).toBe(1);
    // A tenant key cannot reach the operator's page.
    const other = await profile();
    await signIn(other.page, owner.apiKey);
    expect((await other.page.goto(`${stack.url}/console/operator`))!.status()).toBe(403);
    await other.context.close();
    await context.close();
  });

  it('the main flow works with the keyboard alone', async () => {
    const { context, page } = await profile();
    await page.goto(`${stack.url}/console/sign-in`);
    const tabTo = async (selector: string) => {
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press('Tab');
        const focused = await page.evaluate(
          (s) =>
            (
              globalThis as unknown as { document: { activeElement: { matches(s: string): boolean } | null } }
            ).document.activeElement?.matches(s) ?? false,
          selector,
        );
        if (focused) return;
      }
      throw new Error(`Tab never reached ${selector}`);
    };
    await tabTo('#secret');
    await page.keyboard.type(owner.apiKey);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/uploads/);
    await tabTo('input[name=name]');
    await page.keyboard.type('notes');
    await page.keyboard.press('Enter');
    await page.waitForURL(/name=notes/);
    await tabTo('a[href^="/console/uploads/"]');
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`/console/uploads/${notesId}$`));
    expect(await page.textContent('h1')).toBe('notes.txt');
    await context.close();
  });

  it('the storage page lists the targets and the migrations; Resume and Cancel steer a paused one, once each', async () => {
    // Last: the tenant's uploads move to the target here.
    const { s3 } = inject('stack');
    const bucket = `console-${kind}-${randomUUID().slice(0, 8)}`;
    const client = sharedS3Client();
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    client.destroy();
    const target = await api(
      'POST',
      '/v1/storage-targets',
      {
        name: 'console-archive',
        endpoint: s3.endpoint,
        bucket,
        accessKeyId: s3.accessKeyId,
        secretAccessKey: s3.secretAccessKey,
        residency: 'eu',
      },
      randomUUID(),
    );
    expect(target.status, target.text).toBe(201);
    const started = await api('POST', '/v1/storage-migrations', { from: 'default', to: 'console-archive', concurrency: 1 }, randomUUID());
    expect(started.status, started.text).toBe(201);
    expect((await api('POST', `/v1/storage-migrations/${started.json.id}/pause`, {}, randomUUID())).json.state).toBe('paused');

    const { context, page } = await profile();
    await signIn(page, owner.apiKey);
    await page.click('nav a:has-text("Storage")');
    await page.waitForURL(/\/console\/storage$/);
    expect(await page.textContent('#targets-h ~ table')).toMatch(/console-archive[\s\S]*eu/);
    const item = page.locator('#migrations-h ~ ul li', { hasText: 'console-archive' }).first();
    expect(await item.textContent()).toMatch(/paused[\s\S]*the instance store → console-archive/);
    await accessible(page, 'storage');
    // Resume sent twice as a double click sends it: one resume, and the migration completes.
    expect(await submitDrawnForm(item.locator('form.action:has(button:has-text("Resume"))'), 2)).toEqual([0, 0]);
    const done = await eventually(async () => {
      const m = (await api('GET', `/v1/storage-migrations/${started.json.id}`)).json;
      return m.state === 'completed' ? m : undefined;
    }, 120_000);
    expect(done.moved).toBeGreaterThan(0);
    await page.reload();
    expect(await item.textContent()).toMatch(new RegExp(`completed[\\s\\S]*${done.moved} moved, 0 skipped, 0 failed`));
    expect(await item.locator('form.action').count()).toBe(0);

    // Back, paused, then cancelled from the page: what moved stays, the page says so.
    const back = await api('POST', '/v1/storage-migrations', { from: 'console-archive', to: 'default', concurrency: 1 }, randomUUID());
    expect(back.status).toBe(201);
    await api('POST', `/v1/storage-migrations/${back.json.id}/pause`, {}, randomUUID());
    await page.reload();
    const backItem = page.locator('#migrations-h ~ ul li').first();
    expect(await backItem.textContent()).toMatch(/paused[\s\S]*console-archive → the instance store/);
    await backItem.locator('button:has-text("Cancel")').click();
    await page.waitForURL(/notice=migration-cancelled/);
    await eventually(async () => (await api('GET', `/v1/storage-migrations/${back.json.id}`)).json.state === 'cancelled', 60_000);
    await context.close();
  });
});
