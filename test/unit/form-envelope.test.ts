// The fewest bytes a form's file part can hold, from the request's length: never more than the
// file a real form carries (however full its envelope), and close to it for a large file, so a
// file that cannot fit a byte quota is refused before it is staged.
import { describe, expect, it } from 'vitest';
import busboy from 'busboy';
import { Readable } from 'node:stream';
import { fileBytesAtLeast } from '../../src/arrivals/form/form-post';

async function formOf(fields: Record<string, string>, file: Buffer): Promise<{ bytes: Buffer; type: string; boundary: string }> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([file]), 'f.bin');
  const r = new Request('http://form', { method: 'POST', body: form });
  const type = r.headers.get('content-type')!;
  return { bytes: Buffer.from(await r.arrayBuffer()), type, boundary: /boundary=(.+)$/.exec(type)![1]! };
}

/** The file part's length as the service's parser reads it. */
function parsedFileBytes(form: { bytes: Buffer; type: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const parser = busboy({ headers: { 'content-type': form.type } });
    let n = 0;
    parser.on('file', (_name, stream) => stream.on('data', (c: Buffer) => (n += c.length)));
    parser.on('close', () => resolve(n));
    parser.on('error', reject);
    Readable.from([form.bytes]).pipe(parser);
  });
}

describe('fileBytesAtLeast', () => {
  it('never claims more than the file of a form whose fields are as long as the parser allows', async () => {
    const fields = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`field${i}`, 'x'.repeat(16_384)]));
    for (const size of [0, 1, 100_000, 600_000, 3 * 1024 * 1024]) {
      const form = await formOf(fields, Buffer.alloc(size, 7));
      expect(await parsedFileBytes(form)).toBe(size);
      expect(fileBytesAtLeast(form.bytes.length, form.boundary), `file of ${size}`).toBeLessThanOrEqual(size);
    }
  });

  it('is within half a MiB of a large file sent by a browser-like client', async () => {
    const size = 10 * 1024 * 1024;
    const form = await formOf({ idempotencyKey: 'k'.repeat(40) }, Buffer.alloc(size, 1));
    const atLeast = fileBytesAtLeast(form.bytes.length, form.boundary);
    expect(atLeast).toBeLessThanOrEqual(size);
    expect(atLeast).toBeGreaterThan(size - 512 * 1024);
  });

  it('is 0 for a form shorter than any envelope, and for no length at all', () => {
    expect(fileBytesAtLeast(1000, '----b')).toBe(0);
    expect(fileBytesAtLeast(0, '----b')).toBe(0);
  });
});
