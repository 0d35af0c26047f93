// The streamed part's body: it reads the part buffer as the writer fills it, never a byte
// before it is filled, coalesces what filled between reads, ends by itself at the part's
// end, and stops when destroyed.
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FillingPart } from '../../src/sessions/filling-part';

/** Reads whatever the stream has now (without waiting for more). */
function drain(s: FillingPart): Buffer[] {
  const got: Buffer[] = [];
  let c: Buffer | null;
  while ((c = s.read()) !== null) got.push(c);
  return got;
}

describe('FillingPart', () => {
  it('gives only filled bytes, coalescing every fill since the last read, and ends at the part end', async () => {
    const buf = Buffer.alloc(10);
    const part = new FillingPart(buf);
    const chunks: string[] = [];
    buf.write('abc', 0);
    part.filledTo(3);
    buf.write('de', 3);
    part.filledTo(5);
    // Both fills came before anyone read: the first read takes the five bytes as one chunk.
    part.on('data', (c: Buffer) => chunks.push(c.toString()));
    await new Promise((r) => setImmediate(r));
    expect(chunks).toEqual(['abcde']);
    // Nothing more is given until more is filled.
    await new Promise((r) => setImmediate(r));
    expect(chunks).toEqual(['abcde']);
    const ended = once(part, 'end');
    buf.write('fghij', 5);
    part.filledTo(10);
    await ended;
    expect(chunks).toEqual(['abcde', 'fghij']);
    expect(part.bytes).toBe(10);
  });

  it('streams a whole part through a consumer that reads as bytes arrive', async () => {
    const buf = Buffer.alloc(64 * 1024);
    const part = new FillingPart(buf);
    const received = (async () => {
      const chunks: Buffer[] = [];
      for await (const c of part) chunks.push(Buffer.from(c as Buffer));
      return Buffer.concat(chunks);
    })();
    for (let at = 0; at < buf.length; at += 4096) {
      buf.fill(at / 4096, at, at + 4096);
      part.filledTo(at + 4096);
      await new Promise((r) => setImmediate(r));
    }
    const got = await received;
    expect(got.length).toBe(buf.length);
    expect(got.equals(buf)).toBe(true);
  });

  it('never reads past the part, whatever the writer says', () => {
    const buf = Buffer.from('0123456789');
    const part = new FillingPart(buf.subarray(0, 4));
    part.filledTo(10);
    expect(Buffer.concat(drain(part)).toString()).toBe('0123');
  });

  it('fails its reader when destroyed before it is full', async () => {
    const part = new FillingPart(Buffer.alloc(8));
    part.filledTo(2);
    const reading = (async () => {
      for await (const _ of part);
    })();
    part.destroy(new Error('the part was not filled'));
    await expect(reading).rejects.toThrow('the part was not filled');
  });
});
