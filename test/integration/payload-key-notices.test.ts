// A worker hears each new data key (migration 028's NOTIFY) and opens a run's first payloads
// without reading the key: against real PostgreSQL, an "API" keyring seals a run's input,
// a "worker" keyring whose statements are counted opens it and seals the run's next payloads
// with none. A key announced while nobody listened, or a notice that is not a key, changes
// nothing but costs the read by id it always cost.
import { randomBytes, randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool';
import type { ListenConnection } from '../../src/db/listen-connection';
import { SecretBox } from '../../src/secret-box';
import { PayloadKeyring, SealingCodec } from '../../src/codec/payload-codec';
import { listenForPayloadKeys } from '../../src/codec/payload-key-notices';
import { scopes } from '../../src/codec/payload-scope';
import { destroyPayloadKeys } from '../../src/db/queries/payload-keys';
import { uploadWorkflowId } from '../../src/temporal/ids';
import { startTenantDatabase, type TenantDatabase } from '../helpers/stack';
import { countingPool, eventually } from '../helpers/inspect';

const box = new SecretBox(randomBytes(32));
let url: string;
let pool: Pool;
let tenantId: string;
let db: TenantDatabase | undefined;
let listening: ListenConnection | undefined;

beforeAll(async () => {
  db = await startTenantDatabase('keynotice');
  ({ url, pool, tenantId } = db);
});

afterAll(async () => {
  await listening?.close();
  await db?.drop();
});

/** A worker's keyring over the real pool, its statements counted, and the keys it heard. */
function workerKeyring(cacheMs?: number) {
  const { pool: counted, statements } = countingPool(pool);
  const keyring = new PayloadKeyring(counted, box, cacheMs);
  const heard: string[] = [];
  const learn = keyring.learn.bind(keyring);
  keyring.learn = (row) => {
    heard.push(row.id);
    learn(row);
  };
  return { keyring, statements, heard };
}

const runContext = () => ({ type: 'workflow' as const, namespace: 'default', workflowId: uploadWorkflowId(tenantId, `k-${randomUUID()}`) });
const payload = (text: string) => ({
  metadata: { encoding: new TextEncoder().encode('json/plain') },
  data: new TextEncoder().encode(text),
});
const keyIdOf = (p: { metadata?: Record<string, Uint8Array | null> | null }) => new TextDecoder().decode(p.metadata!['encryption-key-id']!);

it("opens a new run's input and seals its next payloads without reading the key, once the key's notice is heard", async () => {
  const worker = workerKeyring();
  listening = await listenForPayloadKeys(url, worker.keyring, pino({ level: 'silent' }));
  const api = new SealingCodec(new PayloadKeyring(pool, box));
  const context = runContext();

  const [sealed] = await api.encode([payload('"input of the run"')], context);
  const keyId = keyIdOf(sealed!);
  await eventually(async () => worker.heard.includes(keyId) || undefined);

  const codec = new SealingCodec(worker.keyring);
  const [opened] = await codec.decode([sealed!]);
  expect(new TextDecoder().decode(opened!.data!)).toBe('"input of the run"');
  const [result] = await codec.encode([payload('"result"')], context);
  expect(keyIdOf(result!)).toBe(keyId);
  expect(worker.statements).toEqual([]);

  // The API opens the worker's result with the key it made.
  const [back] = await api.decode([result!]);
  expect(new TextDecoder().decode(back!.data!)).toBe('"result"');
});

it('reads by id a key announced while it did not listen, and ignores a notice that is not a key or not its own', async () => {
  const worker = workerKeyring();
  const api = new SealingCodec(new PayloadKeyring(pool, box));
  const [missed] = await api.encode([payload('"made before listening"')], runContext());

  const ears = await listenForPayloadKeys(url, worker.keyring, pino({ level: 'silent' }));
  try {
    await pool.query(`SELECT pg_notify('oncely_payload_key', 'not json'), pg_notify('oncely_payload_key', '{"id":"x","scope":"s"}')`);
    // A key wrapped under another SECRETS_KEY (a misconfigured process made it): heard, not opened, no crash.
    const foreign = new SealingCodec(new PayloadKeyring(pool, new SecretBox(randomBytes(32))));
    const [foreignSealed] = await foreign.encode([payload('"foreign"')], runContext());
    const [heardLater] = await api.encode([payload('"made while listening"')], runContext());
    await eventually(async () => worker.heard.includes(keyIdOf(heardLater!)) || undefined);
    // Notices arrive in commit order: the malformed ones came and went before these.
    expect(worker.heard).toEqual([keyIdOf(foreignSealed!), keyIdOf(heardLater!)]);

    const codec = new SealingCodec(worker.keyring);
    const [opened] = await codec.decode([missed!]);
    expect(new TextDecoder().decode(opened!.data!)).toBe('"made before listening"');
    expect(worker.statements).toHaveLength(1);
    expect(worker.statements[0]).toMatch(/FROM payload_keys WHERE id = ANY/);
    await codec.decode([heardLater!]);
    expect(worker.statements).toHaveLength(1);
    // The foreign key was not kept: opening its payload reads it, and fails as it always did.
    await expect(codec.decode([foreignSealed!])).rejects.toThrow();
    expect(worker.statements).toHaveLength(2);
  } finally {
    await ears.close();
  }
});

it('a key destroyed after it was heard opens nothing once the cache entry ages out', async () => {
  const { keyring: shortMemory, heard } = workerKeyring(50);
  const ears = await listenForPayloadKeys(url, shortMemory, pino({ level: 'silent' }));
  try {
    const context = runContext();
    const [sealed] = await new SealingCodec(new PayloadKeyring(pool, box)).encode([payload('"personal"')], context);
    await eventually(async () => heard.includes(keyIdOf(sealed!)) || undefined);
    expect(await destroyPayloadKeys(pool, [scopes.run(context.workflowId)])).toBe(1);
    await new Promise((r) => setTimeout(r, 80)); // past the 50 ms the entry is trusted
    const [opened] = await new SealingCodec(shortMemory).decode([sealed!]);
    expect(new TextDecoder().decode(opened!.data!)).toBe('"erased"');
  } finally {
    await ears.close();
  }
});
