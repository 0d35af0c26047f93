// The records transaction against real PostgreSQL: the answer a fresh commit returns (built
// from what it wrote, without reading its rows back) is the one its key's row answers
// afterwards, whether the upload was settled at once, has work downstream, or was rejected;
// a repeat of the same commit writes nothing and answers the same.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool';
import { commitUploadRecords, findCommittedAnswer, type PipelineChoice, type RecordsInput } from '../../src/db/queries/records';
import { createTenant } from '../../src/tenants';
import { createDatabase, dropDatabase } from '../support/postgres';
import { uniqueName } from '../helpers/stack';

const shared = inject('stack');
const name = uniqueName('records');
let pool: Pool;
let tenantId: string;

beforeAll(async () => {
  const url = await createDatabase(shared.pgAdminUrl, name, shared.templateDb);
  pool = createPool(url, 2);
  tenantId = (await createTenant(pool, 'records')).tenantId;
});

afterAll(async () => {
  await pool?.end();
  await dropDatabase(shared.pgAdminUrl, name).catch(() => {});
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
