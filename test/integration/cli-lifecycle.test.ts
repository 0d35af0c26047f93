// The lifecycle commands as a user runs them: `oncely ls`, `get` (a cut download resumes
// with Range), `rm`, `events --failed`, `redeliver`, `import`, each a real process against a real stack.
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTenant } from '../../src/tenants';
import { postUpload } from '../helpers/http';
import { eventually } from '../helpers/inspect';
import { startTestStack, type TestStack } from '../helpers/stack';
import { WebhookReceiver } from '../support/webhook-receiver';
import { startFileOrigin } from '../support/file-origin';

const run = promisify(execFile);
let stack: TestStack;
let tenant: { tenantId: string; apiKey: string };
let dir: string;
let receiver: WebhookReceiver;

beforeAll(async () => {
  stack = await startTestStack('cli_lifecycle');
  tenant = await createTenant(stack.runtime.pool, 'cli');
  dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-cli-'));
  receiver = await new WebhookReceiver().start();
});
afterAll(async () => {
  await stack?.stop();
  await receiver?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function oncely(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
      env: { ...process.env, ONCELY_URL: stack.url, ONCELY_TOKEN: tenant.apiKey },
    });
    return { code: 0, ...r };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

it('ls, get (resuming a cut download), rm', async () => {
  const file = randomBytes(300_000);
  const up = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `cli-${randomUUID()}`, body: file, fileName: 'data.bin' });
  expect(up.status).toBe(201);
  const id = up.json.uploadId as string;

  const ls = await oncely('ls', '--json');
  expect(ls.code).toBe(0);
  expect(JSON.parse(ls.stdout).map((u: { uploadId: string }) => u.uploadId)).toContain(id);
  const table = await oncely('ls');
  expect(table.stdout).toContain(id);

  const out = path.join(dir, 'data.bin');
  const got = await oncely('get', id, '-o', out, '--no-progress', '--json');
  expect(got.code, got.stderr).toBe(0);
  expect(readFileSync(out).equals(file)).toBe(true);
  expect(JSON.parse(got.stdout)).toMatchObject({ uploadId: id, bytes: file.length, resumedAt: 0 });

  // A download cut at 100,000 bytes: the rerun asks only for the rest.
  const again = path.join(dir, 'again.bin');
  writeFileSync(`${again}.part`, file.subarray(0, 100_000));
  const resumed = await oncely('get', id, '-o', again, '--no-progress', '--json');
  expect(resumed.code, resumed.stderr).toBe(0);
  expect(JSON.parse(resumed.stdout)).toMatchObject({ resumedAt: 100_000 });
  expect(readFileSync(again).equals(file)).toBe(true);
  expect(existsSync(`${again}.part`)).toBe(false);
  // A .part that is not a prefix of the file fails the check and is removed.
  const wrong = path.join(dir, 'wrong.bin');
  writeFileSync(`${wrong}.part`, randomBytes(1000));
  const bad = await oncely('get', id, '-o', wrong, '--no-progress');
  expect(bad.code).toBe(1);
  expect(bad.stderr).toMatch(/checksum_mismatch/);
  expect(existsSync(wrong)).toBe(false);

  const removed = await oncely('rm', id, '--json');
  expect(removed.code, removed.stderr).toBe(0);
  expect(JSON.parse(removed.stdout)).toEqual([expect.objectContaining({ uploadId: id, status: 'deleted' })]);
  const deleted = await oncely('ls', '--status', 'deleted', '--json');
  expect(JSON.parse(deleted.stdout).map((u: { uploadId: string }) => u.uploadId)).toEqual([id]);

  const missing = await oncely('get', randomUUID(), '-o', path.join(dir, 'x'), '--no-progress');
  expect(missing.code).toBe(1);
  expect(missing.stderr).toMatch(/404 not_found/);
  const noToken = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'ls'], { env: { ...process.env, ONCELY_TOKEN: '' } }).catch(
    (e) => e as { code: number; stderr: string },
  );
  expect((noToken as { code: number }).code).not.toBe(0);
}, 120_000);

it('events --failed and redeliver', async () => {
  const endpoint = await fetch(`${stack.url}/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url }),
  }).then((r) => r.json() as Promise<{ id: string; secret: string }>);
  receiver.secret = endpoint.secret;
  receiver.script = { 'upload.completed': [500, 500, 500, 500, 500, 500, 500, 500] };
  const up = await postUpload(stack.url, { apiKey: tenant.apiKey, key: `cli-ev-${randomUUID()}`, body: Buffer.from('evented') });
  const completed = `evt_${String(up.json.uploadId).replaceAll('-', '')}_completed`;
  await eventually(async () => receiver.received.some((r) => r.id === completed), 30_000);
  const failed = await eventually(async () => {
    const r = await oncely('events', '--failed', '--json');
    const ids = (JSON.parse(r.stdout) as { id: string }[]).map((e) => e.id);
    return ids.includes(completed) ? ids : undefined;
  }, 30_000);
  expect(failed).toContain(completed);

  receiver.script = {};
  const redelivered = await oncely('redeliver', completed, '--json');
  expect(redelivered.code, redelivered.stderr).toBe(0);
  expect(JSON.parse(redelivered.stdout).outcomes).toEqual({ [endpoint.id]: expect.stringMatching(/^(delivered|in_flight)$/) });
  await eventually(async () => receiver.received.some((r) => r.id === completed && r.answered === 200), 30_000);
  const gone = await oncely('redeliver', 'evt_nope');
  expect(gone.code).toBe(1);
  expect(gone.stderr).toMatch(/404 not_found/);
}, 120_000);

it('token create prints an upload token; upload --token sends with it; token revoke stops it', async () => {
  const minted = await oncely('token', 'create', '--max-bytes', '10MB', '--types', 'text/*', '--expires', '15m', '--subject', 'user-42');
  expect(minted.code, minted.stderr).toBe(0);
  const token = minted.stdout.trim();
  expect(token).toMatch(/^oup_[A-Za-z0-9_-]+$/);
  const id = /upload token ([0-9a-f-]{36})/.exec(minted.stderr)![1]!;
  const detail = (await (
    await fetch(`${stack.url}/v1/upload-tokens/${id}`, { headers: { authorization: `Bearer ${tenant.apiKey}` } })
  ).json()) as { expiresAt: string };
  expect(detail).toMatchObject({ maxBytes: 10_000_000, allowedTypes: ['text/*'], subject: 'user-42' });
  expect(Date.parse(detail.expiresAt) - Date.now()).toBeGreaterThan(14 * 60_000);

  const file = path.join(dir, 'note.txt');
  writeFileSync(file, `a note ${randomUUID()}`);
  const up = await run(
    process.execPath,
    ['--import', 'tsx', 'src/cli.ts', 'upload', file, '--json', '--token', token, '--outbox', path.join(dir, 'tok.json')],
    {
      env: { ...process.env, ONCELY_URL: stack.url, ONCELY_TOKEN: '' },
    },
  );
  const [result] = JSON.parse(up.stdout) as { status: number; body: { uploadId: string } }[];
  expect(result!.status).toBe(201);
  const uploadId = result!.body.uploadId;
  const row = await stack.runtime.pool.query('SELECT subject, token_id FROM uploads WHERE id = $1', [uploadId]);
  expect(row.rows[0]).toEqual({ subject: 'user-42', token_id: id });

  expect((await oncely('token', 'revoke', id)).code).toBe(0);
  const refused = await fetch(`${stack.url}/v1/uploads/${uploadId}`, { headers: { authorization: `Bearer ${token}` } });
  expect(refused.status).toBe(401);
  expect((await oncely('token', 'create', '--expires', 'soon')).code).not.toBe(0);
});

it('import URLs and --from-file: one upload per URL, the same uploads when run again; a failed import exits 1', async () => {
  const origin = await startFileOrigin(randomBytes(300_000), { contentType: 'application/octet-stream' });
  try {
    const list = path.join(dir, 'urls.txt');
    writeFileSync(list, `# files to bring in\n${origin.base}/b.pdf\n\n${origin.base}/c.pdf\n`);
    const first = await oncely('import', `${origin.base}/a.pdf`, '--from-file', list, '--json');
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const lines = first.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { url: string; status: number; upload: { uploadId: string } });
    expect(lines.map((l) => l.url).sort()).toEqual(['a', 'b', 'c'].map((n) => `${origin.base}/${n}.pdf`));
    expect(lines.every((l) => l.status === 201)).toBe(true);
    const count = async () => Number((await stack.runtime.pool.query('SELECT count(*) AS n FROM uploads')).rows[0].n);
    const before = await count();
    const requestsBefore = origin.requests;

    const again = await oncely('import', `${origin.base}/a.pdf`, '--from-file', list, '--json');
    expect(again.code, again.stderr).toBe(0);
    const ids = (out: string) =>
      out
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { upload: { uploadId: string } }).upload.uploadId)
        .sort();
    expect(ids(again.stdout)).toEqual(ids(first.stdout));
    expect(await count()).toBe(before);
    expect(origin.requests).toBe(requestsBefore);

    const failed = await oncely('import', `${origin.base}/missing`);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('import_failed');
    expect((await oncely('import')).code).toBe(2);
  } finally {
    await origin.close();
  }
});
