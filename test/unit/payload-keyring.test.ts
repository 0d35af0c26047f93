// The keyring's reads of data keys by id: the SDK decodes an activation's parts at once, and
// however many ask for an id before PostgreSQL answers, one statement reads it; a destroyed
// key opens nothing; an opened key is then served from memory. PostgreSQL is a counting fake
// here (the real one: test/integration/payload-encryption.test.ts).
import { randomBytes, randomUUID } from 'node:crypto';
import { expect, it, vi } from 'vitest';
import type { Pool } from '../../src/db/pool';
import type { PayloadKeyRow } from '../../src/db/queries/payload-keys';
import { SecretBox } from '../../src/secret-box';
import { PayloadKeyring } from '../../src/codec/payload-codec';

const box = new SecretBox(randomBytes(32));

function fakePool(rows: PayloadKeyRow[]) {
  const asked: string[][] = [];
  const pool = {
    async query(statement: { values: [string[]] }) {
      asked.push(statement.values[0]);
      await new Promise((r) => setTimeout(r, 20));
      return { rows: rows.filter((r) => statement.values[0].includes(r.id)) };
    },
  };
  return { pool: pool as unknown as Pool, asked };
}

const liveKey = () => {
  const id = randomUUID();
  const key = randomBytes(32);
  return { id, key, row: { id, scope: `run:${id}`, wrapped: box.seal(key.toString('base64'), `payload-key\n${id}`) } };
};

it('reads an id asked for by several decodes at once with one statement, and then from memory', async () => {
  const a = liveKey();
  const b = liveKey();
  const { pool, asked } = fakePool([a.row, b.row]);
  const keyring = new PayloadKeyring(pool, box);
  const answers = await Promise.all([keyring.openingKeys([a.id]), keyring.openingKeys([a.id, b.id]), keyring.openingKeys([a.id])]);
  for (const answer of answers) expect(answer.get(a.id)).toEqual(a.key);
  expect(answers[1]!.get(b.id)).toEqual(b.key);
  // The first call read a; the second read only b, which nobody was reading yet.
  expect(asked).toEqual([[a.id], [b.id]]);
  expect((await keyring.openingKeys([a.id, b.id])).get(b.id)).toEqual(b.key);
  expect(asked).toHaveLength(2);
});

it('opens nothing with a destroyed or unknown key, and asks again next time', async () => {
  const gone = liveKey();
  const unknown = randomUUID();
  const { pool, asked } = fakePool([{ ...gone.row, wrapped: null }]);
  const keyring = new PayloadKeyring(pool, box);
  const [first, second] = await Promise.all([keyring.openingKeys([gone.id, unknown]), keyring.openingKeys([gone.id])]);
  expect(first.get(gone.id)).toBeNull();
  expect(first.get(unknown)).toBeNull();
  expect(second.get(gone.id)).toBeNull();
  expect(asked).toHaveLength(1);
  await keyring.openingKeys([gone.id]);
  expect(asked).toHaveLength(2);
});

it('seals with a key recorded by the replay lookup for half its cache time without a statement, then asks PostgreSQL', async () => {
  vi.useFakeTimers({ toFake: ['Date'] });
  try {
    const asked: unknown[] = [];
    const live: { row?: PayloadKeyRow } = {};
    const pool = {
      async query(statement: unknown) {
        asked.push(statement);
        return { rows: live.row ? [live.row] : [] };
      },
    } as unknown as Pool;
    const keyring = new PayloadKeyring(pool, box, 60_000);
    const workflowId = `upload/${randomUUID()}/a-key`;
    const context = { type: 'workflow' as const, namespace: 'default', workflowId };
    const draft = keyring.draftRunKey(workflowId);
    live.row = { id: draft.id, scope: draft.scope, wrapped: draft.wrapped };
    keyring.recorded(draft);

    vi.setSystemTime(Date.now() + 29_000);
    expect((await keyring.sealingKey(context)).id).toBe(draft.id);
    expect(asked).toHaveLength(0);
    // Past half the cache time a start asks PostgreSQL (which refuses a closed tenant's new
    // key and marks a found one used); opening what it sealed still needs no statement.
    vi.setSystemTime(Date.now() + 2_000);
    const later = await keyring.sealingKey(context);
    expect(later.id).toBe(draft.id);
    expect(later.key).toEqual(draft.plain);
    expect(asked).toHaveLength(1);
    expect((await keyring.openingKeys([draft.id])).get(draft.id)).toEqual(draft.plain);
    expect(asked).toHaveLength(1);
  } finally {
    vi.useRealTimers();
  }
});

it('keeps an announced key in memory of its own, not in a view of a shared block', async () => {
  const { pool, asked } = fakePool([]);
  const keyring = new PayloadKeyring(pool, box);
  const announced = Array.from({ length: 3 }, liveKey);
  for (const k of announced) {
    keyring.learn(k.row);
    Buffer.from('x'.repeat(512)); // other small buffers made between two notices
  }
  const held = await keyring.openingKeys(announced.map((k) => k.id));
  for (const k of announced) {
    const key = held.get(k.id)!;
    expect(key).toEqual(k.key);
    // A view into Node's pooled block would keep the whole block alive while the key is cached.
    expect(key.buffer.byteLength).toBe(32);
  }
  expect(asked).toHaveLength(0);
});

it('unwraps an announced key when first asked for, once (a key heard again, or never used here, costs no unwrap)', async () => {
  const { pool, asked } = fakePool([]);
  const keyring = new PayloadKeyring(pool, box);
  const opened = vi.spyOn(box, 'open');
  try {
    const k = liveKey();
    const others = Array.from({ length: 5 }, liveKey); // other workers' runs' keys
    keyring.learn(k.row);
    keyring.learn(k.row);
    for (const other of others) keyring.learn(other.row);
    expect(opened).toHaveBeenCalledTimes(0);
    expect((await keyring.openingKeys([k.id])).get(k.id)).toEqual(k.key);
    expect((await keyring.openingKeys([k.id])).get(k.id)).toEqual(k.key);
    expect(opened).toHaveBeenCalledTimes(1);
    // A key this process made itself is not unwrapped when its notice comes back.
    const made = keyring.draftRunKey(`upload/${randomUUID()}/own`);
    keyring.recorded(made);
    keyring.learn({ id: made.id, scope: made.scope, wrapped: made.wrapped });
    expect(opened).toHaveBeenCalledTimes(1);
    expect(asked).toHaveLength(0);
  } finally {
    opened.mockRestore();
  }
});

it('reads by id an announced key that does not unwrap here (another SECRETS_KEY), and says so there', async () => {
  const foreign = new SecretBox(randomBytes(32));
  const k = liveKey();
  const wrappedElsewhere = { ...k.row, wrapped: foreign.seal(k.key.toString('base64'), `payload-key\n${k.id}`) };
  const { pool, asked } = fakePool([wrappedElsewhere]);
  const keyring = new PayloadKeyring(pool, box);
  keyring.learn(wrappedElsewhere);
  await expect(keyring.openingKeys([k.id])).rejects.toThrow();
  expect(asked).toHaveLength(1);
});
