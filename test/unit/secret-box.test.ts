// Sealed answers open only with the same key and for the same key row; tampering fails.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Hono } from 'hono';
import { expect, it } from 'vitest';
import { adminAuth } from '../../src/api/middleware/admin-auth';
import { onError } from '../../src/api/problem-handler';
import { loadConfig } from '../../src/config';
import { loadSecretBox, SecretBox } from '../../src/secret-box';

it('round-trips, and refuses another context, another key or a flipped byte', () => {
  const box = new SecretBox(randomBytes(32));
  const sealed = box.seal('{"key":"onc_secret"}', 'tenant\nkey-1');
  expect(sealed).toMatch(/^sealed:v1:/);
  expect(sealed).not.toContain('onc_secret');
  expect(box.open(sealed, 'tenant\nkey-1')).toBe('{"key":"onc_secret"}');
  expect(() => box.open(sealed, 'tenant\nkey-2')).toThrow();
  expect(() => new SecretBox(randomBytes(32)).open(sealed, 'tenant\nkey-1')).toThrow();
  const raw = Buffer.from(sealed.slice('sealed:v1:'.length), 'base64');
  raw[raw.length - 1]! ^= 1;
  expect(() => box.open(`sealed:v1:${raw.toString('base64')}`, 'tenant\nkey-1')).toThrow();
  expect(box.open('{"plain":true}', 'x')).toBe('{"plain":true}'); // rows written before sealing
});

it('after a rotation opens what the previous keys sealed, and seals under the new key only', () => {
  const [older, old, current] = [randomBytes(32), randomBytes(32), randomBytes(32)];
  const before = new SecretBox(old).seal('secret', 'ctx');
  const oldest = new SecretBox(older).seal('oldest', 'ctx');
  const rotated = new SecretBox(current, [old, older]);
  expect(rotated.open(before, 'ctx')).toBe('secret');
  expect(rotated.open(oldest, 'ctx')).toBe('oldest');
  expect(() => rotated.open(before, 'other')).toThrow();
  const after = rotated.seal('new', 'ctx');
  expect(new SecretBox(current).open(after, 'ctx')).toBe('new');
  expect(() => new SecretBox(old).open(after, 'ctx')).toThrow();
  expect(() => new SecretBox(current).open(before, 'ctx')).toThrow();
  expect(() => new SecretBox(current, [randomBytes(16)])).toThrow(/32 bytes/);
});

it('generates one key per data directory, shared by processes starting together', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-box-'));
  try {
    const boxes = await Promise.all(Array.from({ length: 5 }, () => loadSecretBox(undefined, dir)));
    const sealed = boxes[0]!.seal('x', 'c');
    for (const b of boxes) expect(b.open(sealed, 'c')).toBe('x');
    expect(Buffer.from(readFileSync(path.join(dir, 'secrets-key'), 'utf8'), 'base64')).toHaveLength(32);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('operator routes are absent without ADMIN_TOKEN and need the exact token with it', async () => {
  const app = (token?: string) => {
    const h = new Hono();
    h.use('/admin/*', adminAuth(token) as never);
    h.post('/admin/tenants', (c) => c.text('ok'));
    h.onError(onError as never);
    return h;
  };
  const call = (h: Hono, auth?: string) => h.request('/admin/tenants', { method: 'POST', headers: auth ? { authorization: auth } : {} });
  const off = await call(app(), 'Bearer anything-at-all-here');
  expect(off.status).toBe(404);
  expect(((await off.json()) as { error: string }).error).toBe('not_found');
  const token = 'operator-token-0123456789abcdef';
  expect((await call(app(token))).status).toBe(401);
  expect((await call(app(token), `Bearer ${token}x`)).status).toBe(401);
  expect((await call(app(token), `Bearer ${token}`)).status).toBe(200);
});

it('refuses a SECRETS_KEY that is not 32 bytes and an ADMIN_TOKEN shorter than 24 characters', () => {
  expect(() => loadConfig({ SECRETS_KEY: Buffer.alloc(16).toString('base64') })).toThrow(/SECRETS_KEY: must be 32 bytes/);
  expect(() => loadConfig({ ADMIN_TOKEN: 'too-short' })).toThrow(/ADMIN_TOKEN: must be at least 24 characters/);
  expect(loadConfig({ SECRETS_KEY: randomBytes(32).toString('base64'), ADMIN_TOKEN: 'x'.repeat(24) }).ADMIN_TOKEN).toBe('x'.repeat(24));
});
