// The records transaction against real PostgreSQL: the answer a fresh commit returns (built
// from what it wrote, without reading its rows back) is the one its key's row answers
// afterwards, whether the upload was settled at once, has work downstream, or was rejected;
// a repeat of the same commit writes nothing and answers the same; a key taken by another
// upload row, or claimed by another route while the transaction ran, writes nothing.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool';
import {
  commitUploadRecords,
  findCommittedAnswer,
  KeyHeldElsewhere,
  type PipelineChoice,
  type RecordsInput,
} from '../../src/db/queries/records';
import { insertUploadIfAbsent } from '../../src/db/queries/uploads';
import { eventually } from '../helpers/inspect';
import { startTenantDatabase, type TenantDatabase } from '../helpers/stack';

let url: string;
let pool: Pool;
let tenantId: string;
let db: TenantDatabase | undefined;

beforeAll(async () => {
  db = await startTenantDatabase('records');
  ({ url, pool, tenantId } = db);
});

afterAll(async () => {
  await db?.drop();
});

/** The built-in pipeline, with what it makes of a file decided by the test. */
const pipeline = (idleReason: string | null): PipelineChoice => ({
  defaultName: 'default',
  builtin: { name: 'default', version: 0, steps: [] },
  startsGated: () => false,
  idleReason: () => idleReason,
  announces: () => false,
});

function commitInput(kind: 'settled' | 'downstream' | 'rejected'): RecordsInput {
  const key = `records-${kind}-${randomUUID()}`;
  const workflowId = `upload/${tenantId}/${key}`;
  const uploadId = randomUUID();
  return {
    tenantId,
    key,
    fingerprint: 'f'.repeat(64),
    workflowId,
    startedAt: new Date(),
    ttlSeconds: 3600,
    ...(kind === 'rejected'
      ? {}
      : {
          upload: {
            id: uploadId,
            tenant_id: tenantId,
            idempotency_key: key,
            workflow_id: workflowId,
            storage_key: `tenants/${tenantId}/objects/${uploadId}`,
            bytes: 4,
            sha256: 'a'.repeat(64),
            content_type: 'text/plain',
            file_name: null,
          },
          pipeline: pipeline(kind === 'settled' ? 'no step applies to text/plain' : null),
        }),
    response: (createdAt) =>
      kind === 'rejected'
        ? { status: 415, body: JSON.stringify({ error: 'unsupported_media_type' }) }
        : { status: 201, body: JSON.stringify({ uploadId, createdAt: createdAt.toISOString() }) },
  };
}

const counts = async () =>
  (
    await pool.query<{ uploads: number; keys: number }>(
      `SELECT (SELECT count(*)::int FROM uploads WHERE tenant_id = $1) AS uploads,
              (SELECT count(*)::int FROM idempotency_keys WHERE tenant_id = $1) AS keys`,
      [tenantId],
    )
  ).rows[0]!;

it.each([
  ['settled', false],
  ['downstream', true],
  ['rejected', false],
] as const)('answers a fresh %s commit with what its key row answers afterwards', async (kind, downstreamNeeded) => {
  const input = commitInput(kind);
  const before = await counts();
  const answer = await commitUploadRecords(pool, input);
  expect(answer).toMatchObject({ status: kind === 'rejected' ? 415 : 201, uploadId: input.upload?.id ?? null, downstreamNeeded });
  expect(await findCommittedAnswer(pool, tenantId, input.key, input.fingerprint)).toEqual(answer);
  const after = await counts();
  expect(after).toEqual({ uploads: before.uploads + (input.upload ? 1 : 0), keys: before.keys + 1 });
  const status = input.upload && (await pool.query('SELECT status FROM uploads WHERE id = $1', [input.upload.id])).rows[0].status;
  if (input.upload) expect(status).toBe(downstreamNeeded ? 'committed' : 'processed');

  // The same commit again (a retried activity): nothing written, the same answer.
  expect(await commitUploadRecords(pool, input)).toEqual(answer);
  expect(await counts()).toEqual(after);
});

it('refuses a commit whose key another upload row holds, and writes nothing', async () => {
  const input = commitInput('downstream');
  const other = { ...input.upload!, id: randomUUID(), storage_key: `tenants/${tenantId}/objects/other` };
  await insertUploadIfAbsent(pool, other);
  const before = await counts();
  await expect(commitUploadRecords(pool, input)).rejects.toThrow(`key ${input.key} already belongs to upload ${other.id}`);
  expect(await counts()).toEqual(before);
  expect(await findCommittedAnswer(pool, tenantId, input.key, input.fingerprint)).toBeUndefined();
});

it('refuses a commit whose key another route claimed while its transaction ran, and writes nothing', async () => {
  const input = commitInput('downstream');
  const before = await counts();
  // Another route's claim, inserted but not yet committed: the commit's own key insert waits on it.
  const claim = new pg.Client({ connectionString: url });
  await claim.connect();
  try {
    await claim.query('BEGIN');
    await claim.query(
      `INSERT INTO idempotency_keys (tenant_id, key, fingerprint, route, workflow_id, created_at, expires_at)
       VALUES ($1, $2, $3, '/v1/webhook-endpoints', 'none', now(), now() + interval '1 hour')`,
      [tenantId, input.key, 'e'.repeat(64)],
    );
    const commit = commitUploadRecords(pool, input);
    commit.catch(() => {}); // awaited below
    await eventually(async () => {
      const waiting = await pool.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO idempotency_keys%'`,
      );
      return (waiting.rowCount ?? 0) > 0;
    });
    await claim.query('COMMIT');
    await expect(commit).rejects.toBeInstanceOf(KeyHeldElsewhere);
  } finally {
    await claim.end();
  }
  // The upload row went with the rolled-back transaction; the claim stands.
  expect(await counts()).toEqual({ uploads: before.uploads, keys: before.keys + 1 });
});
