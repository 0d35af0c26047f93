// The running SHA-256 an API process holds per appended session: continued only at the
// offset it covers, otherwise the digest comes from the stored bytes.
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { expect, it } from 'vitest';
import { RunningHashes } from '../../src/sessions/running-hash';
import { metrics } from '../../src/metrics';

const hex = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const readBacks = async () => (await metrics.resumableHashReadBack.get()).values[0]?.value ?? 0;

it('continues a hash held at the session offset and digests it without reading the object', async () => {
  const hashes = new RunningHashes();
  const file = randomBytes(3000);
  const first = hashes.resume('s1', 0)!;
  first.update(file.subarray(0, 1000));
  hashes.hold('s1', 1000, first);
  const next = hashes.resume('s1', 1000)!;
  expect(next).not.toBeNull();
  next.update(file.subarray(1000));
  hashes.hold('s1', 3000, next);
  const before = await readBacks();
  const digest = await hashes.digest('s1', 3000, () => Promise.reject(new Error('must not read the object')));
  expect(digest).toBe(hex(file));
  expect(await readBacks()).toBe(before);
});

it('a held hash is copied on resume: an append that fails leaves it at its offset', () => {
  const hashes = new RunningHashes();
  const h = hashes.resume('s2', 0)!;
  h.update('abc');
  hashes.hold('s2', 3, h);
  const failed = hashes.resume('s2', 3)!;
  failed.update('bytes never acknowledged');
  const again = hashes.resume('s2', 3)!;
  again.update('def');
  expect(again.digest('hex')).toBe(hex(Buffer.from('abcdef')));
});

it('does not continue at any other offset (another process moved the session): the digest is read back', async () => {
  const hashes = new RunningHashes();
  const file = randomBytes(5000);
  const h = hashes.resume('s3', 0)!;
  h.update(file.subarray(0, 2000));
  hashes.hold('s3', 2000, h);
  // Another replica acknowledged 2000..4000; this process is asked to go on at 4000.
  expect(hashes.resume('s3', 4000)).toBeNull();
  expect(hashes.resume('unknown', 10)).toBeNull();
  const before = await readBacks();
  const digest = await hashes.digest('s3', 5000, async () => Readable.from([file.subarray(0, 1234), file.subarray(1234)]));
  expect(digest).toBe(hex(file));
  expect(await readBacks()).toBe(before + 1);
  // Taken once: the same session's digest again reads back too (a retried completion).
  await hashes.digest('s3', 5000, async () => Readable.from([file]));
  expect(await readBacks()).toBe(before + 2);
});
