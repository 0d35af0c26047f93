// A worker's codec remembers what it sealed for an activity a moment ago: opening those bytes
// once more needs no cipher. Only the exact bytes match, each is taken once, what a workflow
// owns is not remembered, the payloads stay readable by any other codec, and an erased key
// opens nothing even though this process remembers the plaintext. PostgreSQL is an in-memory fake
// of payload_keys here (the real one: test/integration/payload-encryption.test.ts).
import { randomBytes, randomUUID } from 'node:crypto';
import type { Payload } from '@temporalio/common';
import { beforeEach, expect, it, vi } from 'vitest';
import type { Pool } from '../../src/db/pool';
import type { PayloadKeyRow } from '../../src/db/queries/payload-keys';
import { SecretBox } from '../../src/secret-box';
import { ERASED_MARKER, PayloadKeyring, SealingCodec, UnreadablePayload } from '../../src/codec/payload-codec';
import { stepLabels } from '../../src/temporal/step-labels';

const deciphered = vi.hoisted(() => ({ count: 0 }));
vi.mock('node:crypto', async (actual) => {
  const crypto = await actual<typeof import('node:crypto')>();
  return {
    ...crypto,
    createDecipheriv: (...args: Parameters<typeof crypto.createDecipheriv>) => {
      deciphered.count++;
      return crypto.createDecipheriv(...args);
    },
  };
});

const box = new SecretBox(randomBytes(32));

/** payload_keys in memory: the three statements the keyring sends. */
function keyTable() {
  const rows: PayloadKeyRow[] = [];
  const pool = {
    async query({ text, values }: { text: string; values: unknown[] }) {
      if (text.includes('INSERT INTO payload_keys')) {
        const [id, scope, , , wrapped] = values as string[];
        let row = rows.find((r) => r.scope === scope && r.wrapped);
        if (!row) rows.push((row = { id: id!, scope: scope!, wrapped: wrapped! }));
        return { rows: [row] };
      }
      if (text.includes('id = ANY')) return { rows: rows.filter((r) => (values[0] as string[]).includes(r.id)) };
      return { rows: rows.filter((r) => r.scope === values[0] && r.wrapped) };
    },
  } as unknown as Pool;
  return { pool, destroyAll: () => rows.forEach((r) => (r.wrapped = null)) };
}

const json = (value: unknown): Payload => ({
  metadata: { encoding: new TextEncoder().encode('json/plain') },
  data: new TextEncoder().encode(JSON.stringify(value)),
});
const valueOf = (p: Payload) => JSON.parse(Buffer.from(p.data!).toString('utf8')) as unknown;
const run = (name: string) => ({ type: 'workflow' as const, namespace: 'default', workflowId: `upload/${randomUUID()}/${name}` });
/** A local activity of a run: its input and result are sealed under the run's key. */
const activityOf = (workflow: ReturnType<typeof run>) => ({
  type: 'activity' as const,
  namespace: 'default',
  workflowId: workflow.workflowId,
  activityId: '1',
  isLocal: true,
});

beforeEach(() => {
  deciphered.count = 0;
});

it("opens once without a cipher what it sealed for an activity a moment ago, and not a workflow's payloads", async () => {
  const { pool } = keyTable();
  const codec = new SealingCodec(new PayloadKeyring(pool, box), { rememberMs: 30_000 });
  const context = activityOf(run('a'));
  const answer = { status: 201, body: '{"uploadId":"u"}' };
  const input = { copy: 'c' };
  const [commit, result, other] = await codec.encode([json(input), json(answer), json({ status: 409 })], context);
  const [elsewhere] = await codec.encode([json(answer)], activityOf(run('b')));

  const opened = await codec.decode([commit!, result!, other!, elsewhere!]);
  expect(opened.map(valueOf)).toEqual([input, answer, { status: 409 }, answer]);
  expect(deciphered.count).toBe(0);
  // Taken once: opened again (a replay after the run left the cache), it is deciphered.
  expect((await codec.decode([commit!])).map(valueOf)).toEqual([input]);
  expect(deciphered.count).toBe(1);
  // A workflow's own payloads (its result, an update's answer) are opened elsewhere: not remembered.
  const [runResult] = await codec.encode([json(answer)], run('c'));
  expect((await codec.decode([runResult!])).map(valueOf)).toEqual([answer]);
  expect(deciphered.count).toBe(2);
  deciphered.count = 0;

  // A codec that did not seal them (another process) opens the same bytes with its cipher.
  const elsewhereKeys = new PayloadKeyring(pool, box);
  await elsewhereKeys.openingKeys([Buffer.from(commit!.metadata!['encryption-key-id']!).toString()]); // its key unwrapped
  deciphered.count = 0;
  const elsewhereCodec = new SealingCodec(elsewhereKeys);
  expect((await elsewhereCodec.decode([commit!, other!])).map(valueOf)).toEqual([input, { status: 409 }]);
  expect(deciphered.count).toBe(2);
});

it("seals a plaintext again as the bytes it was last sealed to under the same key (a run's result repeating its commit's), and nothing else", async () => {
  const { pool } = keyTable();
  const codec = new SealingCodec(new PayloadKeyring(pool, box), { rememberMs: 30_000 });
  const upload = run('a');
  const answer = { status: 201, body: '{"uploadId":"u"}' };
  const [commit] = await codec.encode([json(answer)], activityOf(upload));
  const [runResult] = await codec.encode([json(answer)], upload);
  expect(Buffer.from(runResult!.data!)).toEqual(Buffer.from(commit!.data!));
  expect(runResult!.metadata).toEqual(commit!.metadata);
  // Another plaintext under that key, or the same one under another run's key: a seal of its own (a fresh IV).
  const [refused] = await codec.encode([json({ status: 409 })], upload);
  const [otherRun] = await codec.encode([json(answer)], run('b'));
  for (const p of [refused!, otherRun!])
    expect(Buffer.from(p.data!).subarray(0, 12)).not.toEqual(Buffer.from(commit!.data!).subarray(0, 12));
  // What a workflow seals is never what is sealed again: only an activity's last seal is kept.
  const [first] = await codec.encode([json('w')], upload);
  const [second] = await codec.encode([json('w')], upload);
  expect(Buffer.from(second!.data!)).not.toEqual(Buffer.from(first!.data!));
  // The bytes sealed again open anywhere, with the cipher.
  const elsewhereKeys = new PayloadKeyring(pool, box);
  await elsewhereKeys.openingKeys([Buffer.from(commit!.metadata!['encryption-key-id']!).toString()]); // its key unwrapped
  deciphered.count = 0;
  const elsewhere = new SealingCodec(elsewhereKeys);
  expect((await elsewhere.decode([commit!, runResult!])).map(valueOf)).toEqual([answer, answer]);
  expect(deciphered.count).toBe(2);
  // A process without the memory (the API) seals every payload anew.
  const api = new SealingCodec(new PayloadKeyring(pool, box));
  const [a, b] = await api.encode([json(answer), json(answer)], activityOf(upload));
  expect(Buffer.from(b!.data!)).not.toEqual(Buffer.from(a!.data!));
});

it("leaves the steps' fixed labels in clear and seals a label made of a run's data", async () => {
  const { pool } = keyTable();
  const codec = new SealingCodec(new PayloadKeyring(pool, box), { rememberMs: 30_000 });
  const label = json(stepLabels.commitUpload);
  const made = json(`Step 1: transcode of video/mp4 (12 bytes)`);
  const longer = json(`${stepLabels.commitUpload} `);
  const [clear, sealedMade, sealedLonger] = await codec.encode([label, made, longer], activityOf(run('a')));
  expect(clear).toBe(label);
  for (const p of [sealedMade!, sealedLonger!]) expect(Buffer.from(p.metadata!.encoding!).toString()).toBe('binary/encrypted');
  // The label's bytes under another encoding are not a label.
  const [binary] = await codec.encode([{ ...label, metadata: { encoding: new TextEncoder().encode('binary/plain') } }], run('a'));
  expect(Buffer.from(binary!.metadata!.encoding!).toString()).toBe('binary/encrypted');
  expect((await codec.decode([clear!, sealedMade!])).map(valueOf)).toEqual([
    stepLabels.commitUpload,
    'Step 1: transcode of video/mp4 (12 bytes)',
  ]);
});

it('matches only exact bytes: a changed payload goes to the cipher and is refused', async () => {
  const { pool } = keyTable();
  const codec = new SealingCodec(new PayloadKeyring(pool, box), { rememberMs: 30_000 });
  const [sealed] = await codec.encode([json('a file name.pdf')], activityOf(run('a')));
  const changed = Buffer.from(sealed!.data!);
  changed[changed.length - 1]! ^= 1;
  await expect(codec.decode([{ ...sealed!, data: changed }])).rejects.toThrow(UnreadablePayload);
  expect(deciphered.count).toBe(1);
});

it('opens nothing whose key was destroyed, though it remembers the plaintext', async () => {
  const { pool, destroyAll } = keyTable();
  // Keys read from PostgreSQL every time (as the codec server does): the erasure is seen at once.
  const codec = new SealingCodec(new PayloadKeyring(pool, box, 0), { rememberMs: 30_000 });
  const [sealed] = await codec.encode([json('a file name.pdf')], activityOf(run('a')));
  destroyAll();
  expect((await codec.decode([sealed!])).map(valueOf)).toEqual([ERASED_MARKER]);
  expect(deciphered.count).toBe(0);
});

it('without remembering, opens every payload with its cipher', async () => {
  const { pool } = keyTable();
  const codec = new SealingCodec(new PayloadKeyring(pool, box));
  const [one, two] = await codec.encode([json('same'), json('same')], activityOf(run('a')));
  expect((await codec.decode([one!, two!])).map(valueOf)).toEqual(['same', 'same']);
  expect(deciphered.count).toBe(2);
});

it('forgets a seal past its time or past its bound: opened then with the cipher', async () => {
  vi.useFakeTimers({ toFake: ['Date'] });
  try {
    const { pool } = keyTable();
    const codec = new SealingCodec(new PayloadKeyring(pool, box), { rememberMs: 10_000 });
    const context = activityOf(run('a'));
    const [old] = await codec.encode([json('old')], context);
    vi.setSystemTime(Date.now() + 10_001);
    expect((await codec.decode([old!])).map(valueOf)).toEqual(['old']);
    expect(deciphered.count).toBe(1);
    // Past 512 entries the oldest goes first.
    const many = await codec.encode(
      Array.from({ length: 513 }, (_, i) => json(i)),
      context,
    );
    expect((await codec.decode([many[0]!])).map(valueOf)).toEqual([0]);
    expect(deciphered.count).toBe(2);
    expect((await codec.decode([many[512]!])).map(valueOf)).toEqual([512]);
    expect(deciphered.count).toBe(2);
  } finally {
    vi.useRealTimers();
  }
});

it("opens a payload into bytes of their own, not a view of Node's shared pool (a worker posts them to its workflow thread, which copies the whole buffer)", async () => {
  const { pool } = keyTable();
  const remembering = new SealingCodec(new PayloadKeyring(pool, box), { rememberMs: 30_000 });
  const upload = run('a');
  const value = { status: 201, body: 'x'.repeat(300) };
  const [sealed] = await remembering.encode([json(value)], activityOf(upload));
  const elsewhere = new SealingCodec(new PayloadKeyring(pool, box));
  // Opened by the cipher (another process) and from this process's memory of its seal.
  for (const opened of [...(await elsewhere.decode([sealed!])), ...(await remembering.decode([sealed!]))]) {
    expect(valueOf(opened)).toEqual(value);
    // The protobuf form of the payload: its data, its metadata and their tags, nothing more.
    expect(opened.data!.buffer.byteLength).toBeLessThan(opened.data!.byteLength + 64);
  }
});
