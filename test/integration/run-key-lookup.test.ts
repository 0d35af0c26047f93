// A new upload's run data key is recorded by the replay lookup itself (one statement), so
// the run's start seals its input with no statement of its own; a key that answers, or is
// held by a tombstone, records nothing; a closed tenant's lookup is refused.
// Real PostgreSQL; the keyring's statements are counted.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool';
import { SecretBox } from '../../src/secret-box';
import { PayloadKeyring, SealingCodec } from '../../src/codec/payload-codec';
import { scopes } from '../../src/codec/payload-scope';
import { uploadWorkflowId } from '../../src/temporal/ids';
import { findKeyAnswer, findKeyAnswerRecordingRunKey, insertKeyIfAbsent, UPLOAD_ROUTE } from '../../src/db/queries/idempotency-keys';
import { closeTenant } from '../../src/db/queries/tenant-deletion';
import { createTenant } from '../../src/tenants';
import { startTenantDatabase, type TenantDatabase } from '../helpers/stack';
import { countingPool } from '../helpers/inspect';

const box = new SecretBox(randomBytes(32));
let pool: Pool;
let tenantId: string;
let db: TenantDatabase | undefined;

beforeAll(async () => {
  db = await startTenantDatabase('runkeylookup');
  ({ pool, tenantId } = db);
});
afterAll(() => db?.drop());

/** A keyring whose own statements are counted. */
function countedKeyring() {
  const { pool: counted, statements } = countingPool(pool);
  return { keyring: new PayloadKeyring(counted, box), statements };
}

const payload = (text: string) => ({
  metadata: { encoding: new TextEncoder().encode('json/plain') },
  data: new TextEncoder().encode(text),
});
const keyIdOf = (p: { metadata?: Record<string, Uint8Array | null> | null }) => new TextDecoder().decode(p.metadata!['encryption-key-id']!);
const liveKeys = async (scope: string) =>
  (
    await pool.query<{ id: string; tenant_id: string }>(
      'SELECT id, tenant_id FROM payload_keys WHERE scope = $1 AND destroyed_at IS NULL',
      [scope],
    )
  ).rows;

it("records a new key's run data key with the lookup; the start then seals with it and makes no statement", async () => {
  const key = `new-${randomUUID()}`;
  const workflowId = uploadWorkflowId(tenantId, key);
  const api = countedKeyring();
  const draft = api.keyring.draftRunKey(workflowId);
  expect(draft.scope).toBe(scopes.run(workflowId));

  const looked = await findKeyAnswerRecordingRunKey(pool, tenantId, key, draft);
  expect(looked).toEqual({ answer: undefined, recorded: true });
  api.keyring.recorded(draft);
  expect(await liveKeys(draft.scope)).toEqual([{ id: draft.id, tenant_id: tenantId }]);

  const codec = new SealingCodec(api.keyring);
  const [sealed] = await codec.encode([payload('"the run\'s input"')], { type: 'workflow', namespace: 'default', workflowId });
  expect(keyIdOf(sealed!)).toBe(draft.id);
  expect(api.statements).toEqual([]);

  // A second request with the key (its run starting or started): nothing new is recorded, and
  // its start, in another process, finds the key the first one recorded.
  const other = countedKeyring();
  const second = await findKeyAnswerRecordingRunKey(pool, tenantId, key, other.keyring.draftRunKey(workflowId));
  expect(second).toEqual({ answer: undefined, recorded: false });
  const [again] = await new SealingCodec(other.keyring).encode([payload('"an update"')], {
    type: 'workflow',
    namespace: 'default',
    workflowId,
  });
  expect(keyIdOf(again!)).toBe(draft.id);
  expect(other.statements).toHaveLength(1);
  expect(await liveKeys(draft.scope)).toHaveLength(1);
  // Both open each other's payloads.
  const [opened] = await codec.decode([again!]);
  expect(new TextDecoder().decode(opened!.data!)).toBe('"an update"');
});

it('records nothing for a key that answers or is held by a tombstone, and answers as the plain lookup does', async () => {
  const answered = `answered-${randomUUID()}`;
  await insertKeyIfAbsent(pool, {
    tenant_id: tenantId,
    key: answered,
    fingerprint: 'fp-answered',
    route: UPLOAD_ROUTE,
    workflow_id: uploadWorkflowId(tenantId, answered),
    upload_id: null,
    response_status: 409,
    response_body: '{"code":"content_type_mismatch"}',
    created_at: new Date(),
    ttlSeconds: 3600,
  });
  const tombstoned = `tombstoned-${randomUUID()}`;
  await pool.query(
    `INSERT INTO idempotency_tombstones (tenant_id, key, fingerprint, expires_at) VALUES ($1, $2, 'fp-tombstoned', now() + interval '1 hour')`,
    [tenantId, tombstoned],
  );
  const { keyring } = countedKeyring();
  for (const key of [answered, tombstoned]) {
    const draft = keyring.draftRunKey(uploadWorkflowId(tenantId, key));
    const looked = await findKeyAnswerRecordingRunKey(pool, tenantId, key, draft);
    expect(looked.recorded).toBe(false);
    expect(looked.answer).toBeDefined();
    // The same answer as the plain lookup's (its TTL counted a moment later).
    const { rank: _rank, ttl_seconds: ttl, ...plain } = (await findKeyAnswer(pool, tenantId, key)) as Record<string, unknown>;
    const { ttl_seconds: lookedTtl, ...lookedRest } = looked.answer as Record<string, unknown>;
    expect(lookedRest).toEqual(plain);
    if (ttl === null) expect(lookedTtl).toBeNull();
    else expect(Math.abs((lookedTtl as number) - (ttl as number))).toBeLessThan(60);
    expect(await liveKeys(draft.scope)).toEqual([]);
  }
});

it("refuses a closed tenant's lookup for a new key and records no key", async () => {
  const { tenantId: closing } = await createTenant(pool, 'closing');
  await closeTenant(pool, closing);
  const key = `late-${randomUUID()}`;
  const { keyring } = countedKeyring();
  const draft = keyring.draftRunKey(uploadWorkflowId(closing, key));
  await expect(findKeyAnswerRecordingRunKey(pool, closing, key, draft)).rejects.toMatchObject({ code: 'ONC01' });
  expect(await liveKeys(draft.scope)).toEqual([]);
});
