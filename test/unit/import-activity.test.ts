// The import's fetch activity at its own level (MockActivityEnvironment): it heartbeats its
// progress, a retry given the last heartbeat resumes where the worker died, and what the
// origin decided fails for good while a cut is retried.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createImportActivities, importHeadersContext, type ImportFetch } from '../../activities/import-activities';
import type { TransferProgress } from '../../src/imports/transfer';
import { SecretBox } from '../../src/secret-box';
import { LocalDirectoryStore } from '../../src/storage/local-store';
import { startFileOrigin, type FileOrigin } from '../support/file-origin';

const KiB = 1024;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const file = Buffer.concat([PNG, randomBytes(300 * KiB - PNG.length)]);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const secrets = new SecretBox(randomBytes(32));
let origin: FileOrigin;
let dir = '';

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-import-activity-'));
  origin = await startFileOrigin(file);
});
afterAll(async () => {
  await origin.close();
  rmSync(dir, { recursive: true, force: true });
});

const store = () => new LocalDirectoryStore(path.join(dir, randomBytes(4).toString('hex')));
const activities = (s: LocalDirectoryStore) =>
  createImportActivities({
    store: s,
    secrets,
    imports: {
      allowPrivateNetworks: true,
      maxBytes: 1024 * KiB,
      maxRedirects: 3,
      connectMs: 2_000,
      idleMs: 2_000,
      totalMs: 10_000,
      partBytes: 64 * KiB,
    },
  });
const job = (over: Partial<ImportFetch> = {}): ImportFetch => ({
  url: `${origin.base}/f`,
  storageKey: 'tenants/t/keys/k/import',
  contentType: 'image/png',
  attemptId: 'a1',
  fingerprint: 'f'.repeat(64),
  ...over,
});

describe('fetchImport', () => {
  it('stores the file, heartbeats its progress, sends the sealed headers, and hands over the staged copy', async () => {
    const s = store();
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const sealedHeaders = secrets.seal(
      JSON.stringify({ authorization: 'Bearer origin-token' }),
      importHeadersContext('tenants/t/keys/k/import'),
    );
    const copy = await env.run(activities(s).fetchImport, job({ sealedHeaders }));
    expect(copy).toEqual({
      attemptId: 'a1',
      fingerprint: 'f'.repeat(64),
      storageKey: 'tenants/t/keys/k/import',
      bytes: file.length,
      sha256: sha(file),
      sniffedType: 'image/png',
    });
    expect(origin.lastAuthorization).toBe('Bearer origin-token');
    expect((beats.at(-1) as TransferProgress).offset).toBe(file.length);
  });

  it('resumes from the last heartbeat after a cut: the retry fetches only the rest', async () => {
    const s = store();
    const first = new MockActivityEnvironment();
    let last: TransferProgress | undefined;
    first.on('heartbeat', (d: TransferProgress | undefined) => d && (last = d));
    origin.cutNextAfter(150 * KiB);
    origin.served = 0;
    const cut = await first.run(activities(s).fetchImport, job()).catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(ApplicationFailure);
    expect(cut).toMatchObject({ type: 'import_failed', nonRetryable: false });
    expect(last?.offset).toBe(128 * KiB);

    const retry = new MockActivityEnvironment({ heartbeatDetails: last, attempt: 2 });
    const copy = await retry.run(activities(s).fetchImport, job());
    expect(copy).toMatchObject({ bytes: file.length, sha256: sha(file), sniffedType: 'image/png' });
    expect(origin.served).toBe(150 * KiB + (file.length - 128 * KiB));
  });

  it('fails for good on what the origin decided (404, too large), so the import answers it', async () => {
    const s = store();
    const missing = await new MockActivityEnvironment()
      .run(activities(s).fetchImport, job({ url: `${origin.base}/missing` }))
      .catch((e: unknown) => e);
    expect(missing).toMatchObject({ type: 'import_failed', nonRetryable: true, details: [{ originStatus: 404 }] });
    const large = await new MockActivityEnvironment().run(activities(s).fetchImport, job({ maxBytes: 1000 })).catch((e: unknown) => e);
    expect(large).toMatchObject({ type: 'import_too_large', nonRetryable: true });
  });
});
