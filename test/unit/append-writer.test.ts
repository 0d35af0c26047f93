// The append writer against a store whose streamed parts can be made to fail: a part sent
// while it arrives is used when whole, sent again from the buffer when its stream fails, and
// aborted (never left half-written) when the body stops short. Postgres is a stub that
// accepts every acknowledgement; the integration tests run the same code on versitygw.
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool';
import type { SessionRow } from '../../src/db/queries/sessions';
import type { Lease } from '../../src/sessions/lease';
import { writeChunk } from '../../src/sessions/append-writer';
import { RunningHashes } from '../../src/sessions/running-hash';
import type { ObjectStore } from '../../src/storage/store';

const MiB = 1024 * 1024;

/** A store that keeps parts and tails in memory; `streamed` says how a streamed part ends. */
function memoryStore(streamed: 'ok' | 'fail') {
  const parts = new Map<number, Buffer>();
  const objects = new Map<string, Buffer>();
  const calls = { buffered: [] as number[], streamed: [] as number[], aborted: [] as number[] };
  const etag = (b: Buffer) => `"${createHash('md5').update(b).digest('hex')}"`;
  const store = {
    kind: 's3',
    async putPart(_key: string, _id: string, n: number, bytes: Buffer) {
      calls.buffered.push(n);
      parts.set(n, Buffer.from(bytes));
      return etag(bytes);
    },
    async putPartStreamed(_key: string, _id: string, n: number, body: Readable, bytes: number) {
      calls.streamed.push(n);
      const chunks: Buffer[] = [];
      try {
        for await (const c of body) chunks.push(c as Buffer);
      } catch {
        calls.aborted.push(n);
        throw new Error('aborted');
      }
      const whole = Buffer.concat(chunks);
      if (whole.length !== bytes) throw new Error(`short part: ${whole.length} of ${bytes}`);
      if (streamed === 'fail') throw new Error('the store dropped the connection');
      parts.set(n, whole);
      return etag(whole);
    },
    async put(key: string, body: Readable) {
      const chunks: Buffer[] = [];
      for await (const c of body) chunks.push(c as Buffer);
      objects.set(key, Buffer.concat(chunks));
    },
    async delete(key: string) {
      objects.delete(key);
    },
    async get(key: string) {
      const bytes = objects.get(key);
      return bytes && Readable.from([bytes]);
    },
  } as unknown as ObjectStore;
  return { store, parts, objects, calls };
}

const acceptingPool = { query: async () => ({ rowCount: 1, rows: [] }) } as unknown as Pool;
const lease: Lease = { owner: 'test', progressed() {}, write: (fn) => fn(), begin: (fn) => fn(), onLost() {} };

function session(length: number): SessionRow {
  return {
    id: `s-${Math.random()}`,
    upload_length: String(length),
    upload_offset: '0',
    parts: [],
    tail_key: null,
    tail_bytes: '0',
    head: null,
    storage_key: 'tenants/t/keys/k/s',
    multipart_id: 'mp',
  } as unknown as SessionRow;
}

/** A body that sends `bytes` in 1 MiB chunks, then either ends or breaks like a dropped connection. */
function body(bytes: Buffer, breakAfter?: number): Readable {
  const end = breakAfter ?? bytes.length;
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= end) {
        if (breakAfter === undefined) this.push(null);
        else this.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
        return;
      }
      const n = Math.min(MiB, end - sent);
      this.push(bytes.subarray(sent, sent + n));
      sent += n;
    },
  });
}

describe('writeChunk with streamed parts', () => {
  const deps = (store: ObjectStore) => ({ pool: acceptingPool, store, partBytes: 5 * MiB, leaseSeconds: 30, hashes: new RunningHashes() });

  it('sends each part while it arrives and uses it: nothing is sent twice', async () => {
    const file = randomBytes(12 * MiB);
    const m = memoryStore('ok');
    const result = await writeChunk(deps(m.store), session(file.length), lease, body(file), { bodyBytes: file.length });
    expect(result).toEqual({ offset: file.length, complete: true, cut: false });
    // 5 MiB, then 7 (the last part takes the 2 MiB remainder), both streamed.
    expect(m.calls).toEqual({ streamed: [1, 2], buffered: [], aborted: [] });
    expect(Buffer.concat([m.parts.get(1)!, m.parts.get(2)!]).equals(file)).toBe(true);
  });

  it('sends a part again from its buffer when its stream fails', async () => {
    const file = randomBytes(12 * MiB);
    const m = memoryStore('fail');
    const result = await writeChunk(deps(m.store), session(file.length), lease, body(file), { bodyBytes: file.length });
    expect(result.offset).toBe(file.length);
    expect(m.calls.buffered).toEqual([1, 2]);
    expect(Buffer.concat([m.parts.get(1)!, m.parts.get(2)!]).equals(file)).toBe(true);
  });

  it('aborts a streamed part the body stops short of; what arrived is stored from the buffer', async () => {
    const file = randomBytes(12 * MiB);
    const m = memoryStore('ok');
    // The body declares 12 MiB and breaks after 8: part 1 (5 MiB) is whole; part 2 was to be 7.
    const result = await writeChunk(deps(m.store), session(file.length), lease, body(file, 8 * MiB), { bodyBytes: file.length });
    expect(result).toEqual({ offset: 8 * MiB, complete: false, cut: true });
    expect(m.calls.streamed).toEqual([1, 2]);
    expect(m.calls.aborted).toEqual([2]);
    // The 3 MiB after part 1 are below a part: a tail object, read back by the next append.
    expect(m.calls.buffered).toEqual([]);
    expect([...m.objects.values()].map((b) => b.length)).toEqual([3 * MiB]);
    expect(m.parts.get(1)!.equals(file.subarray(0, 5 * MiB))).toBe(true);
    expect(m.parts.has(2)).toBe(false);
  });
});

describe('writeChunk on a tail the store lost', () => {
  const deps = (store: ObjectStore) => ({ pool: acceptingPool, store, partBytes: 5 * MiB, leaseSeconds: 30, hashes: new RunningHashes() });
  const resumed = (tailBytes: number): SessionRow =>
    ({
      ...session(8 * MiB),
      upload_offset: String(tailBytes),
      tail_key: 'tenants/t/keys/k/s.tail.0',
      tail_bytes: String(tailBytes),
    }) as SessionRow;

  it('answers stored_bytes_lost (409, no Retry-After), not a 503, when the tail is short or gone', async () => {
    const m = memoryStore('ok');
    m.objects.set('tenants/t/keys/k/s.tail.0', randomBytes(1000));
    const short = await writeChunk(deps(m.store), resumed(3000), lease, body(randomBytes(10)), { bodyBytes: 10 }).catch((e) => e);
    expect(short).toMatchObject({ code: 'stored_bytes_lost', status: 409, retryAfter: undefined });
    expect((short as Error).message).toContain('1000 bytes; 3000 were acknowledged');

    m.objects.clear();
    const gone = await writeChunk(deps(m.store), resumed(3000), lease, body(randomBytes(10)), { bodyBytes: 10 }).catch((e) => e);
    expect(gone).toMatchObject({ code: 'stored_bytes_lost', status: 409 });
    // Nothing was stored from the new body.
    expect(m.calls.streamed).toEqual([]);
    expect(m.calls.buffered).toEqual([]);
  });
});
