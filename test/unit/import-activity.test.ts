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
import { createImportActivities, type ImportedCopy, type ImportFetch } from '../../activities/imports/import-activities';
import { sealImportHeaders } from '../../src/imports/headers';
import type { Pool } from '../../src/db/pool';
import type { ImportSpec } from '../../src/temporal/definitions';
import type { TransferProgress } from '../../src/imports/transfer';
import { SecretBox } from '../../src/secret-box';
import { LocalDirectoryStore } from '../../src/storage/local-store';
import { partStored, startFileOrigin, type FileOrigin } from '../support/file-origin';

const KiB = 1024;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const file = Buffer.concat([PNG, randomBytes(300 * KiB - PNG.length)]);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const secrets = new SecretBox(randomBytes(32));
let origin: FileOrigin;
let dir = '';

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-import-activity-'));
  origin = await startFileOrigin(file, { contentType: 'image/png' });
});
afterAll(async () => {
  await origin.close();
  rmSync(dir, { recursive: true, force: true });
});

const store = () => new LocalDirectoryStore(path.join(dir, randomBytes(4).toString('hex')));
/** The import row's progress as the activity writes it (a stand-in for the pool: one statement). */
const progressWrites: unknown[][] = [];
const pool = {
  query: async (sql: string, values: unknown[]) => {
    // The read file's reservation looks up its import row: none here (no quota applies).
    if (!sql.includes('quota_reservations') && !sql.startsWith('SELECT')) progressWrites.push(values);
    return { rows: [], rowCount: 1 };
  },
} as unknown as Pool;
const activities = (s: LocalDirectoryStore) =>
  createImportActivities({
    pool,
    store: s,
    secrets,
    imports: { allowPrivateNetworks: true, maxRedirects: 3, connectMs: 2_000, idleMs: 2_000, partBytes: 64 * KiB },
  });
const STORAGE_KEY = 'tenants/t/keys/k/import';
const job = (spec: Partial<ImportSpec> = {}, over: Partial<ImportFetch> = {}): ImportFetch => ({
  spec: {
    uploadId: '00000000-0000-4000-8000-000000000001',
    url: `${origin.base}/f`,
    storageKey: STORAGE_KEY,
    attemptId: 'a1',
    maxBytes: 1024 * KiB,
    typeDeclared: true,
    heartbeatSeconds: 10,
    attemptSeconds: 10,
    maxAttempts: 3,
    ...spec,
  },
  fingerprint: 'f'.repeat(64),
  contentType: 'image/png',
  sha256: null,
  ...over,
});

describe('fetchImport', () => {
  it('stores the file, heartbeats its progress, sends the sealed headers, and hands over the staged copy', async () => {
    const s = store();
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const sealedHeaders = sealImportHeaders(secrets, STORAGE_KEY, { Authorization: 'Bearer origin-token' });
    progressWrites.length = 0;
    const { copy, contentType } = (await env.run(activities(s).fetchImport, job({ sealedHeaders }))) as ImportedCopy;
    expect(contentType).toBe('image/png');
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
    // The upload's view shows the whole file read once the fetch ends.
    expect(progressWrites.at(-1)).toEqual(['00000000-0000-4000-8000-000000000001', file.length, file.length]);
  });

  it("records the origin's media type when the request named none, else the sniffed one", async () => {
    const s = store();
    const named = (await new MockActivityEnvironment().run(activities(s).fetchImport, job({ typeDeclared: false }))) as ImportedCopy;
    expect(named.contentType).toBe('image/png'); // the origin serves image/png
    const unnamed = (await new MockActivityEnvironment().run(
      activities(s).fetchImport,
      job({ typeDeclared: false, url: `${origin.base}/f?type=application/octet-stream` }),
    )) as ImportedCopy;
    expect(unnamed.contentType).toBe('image/png'); // sniffed
  });

  it('refuses for good a file whose SHA-256 is not the declared one, and deletes it', async () => {
    const s = store();
    const wrong = await new MockActivityEnvironment()
      .run(activities(s).fetchImport, job({}, { sha256: 'a'.repeat(64) }))
      .catch((e: unknown) => e);
    expect(wrong).toMatchObject({ type: 'checksum_mismatch', nonRetryable: true });
    expect(await s.head(STORAGE_KEY)).toBeUndefined();
  });

  it('resumes from the last heartbeat after a cut: the retry fetches only the rest', async () => {
    const s = store();
    const first = new MockActivityEnvironment();
    let last: TransferProgress | undefined;
    first.on('heartbeat', (d: TransferProgress | undefined) => d && (last = d));
    origin.cutNextAfter(150 * KiB, partStored(s, 2));
    origin.served = 0;
    const cut = await first.run(activities(s).fetchImport, job()).catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(ApplicationFailure);
    expect(cut).toMatchObject({ type: 'import_failed', nonRetryable: false });
    expect(last?.offset).toBe(128 * KiB);

    const retry = new MockActivityEnvironment({ heartbeatDetails: last, attempt: 2 });
    const { copy } = (await retry.run(activities(s).fetchImport, job())) as ImportedCopy;
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
