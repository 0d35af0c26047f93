// One constructor and one first-bytes window for every arrival mode's copy.
import { describe, expect, it } from 'vitest';
import { HeadBytes, SNIFF_BYTES, stagedCopy } from '../../src/upload/staged-copy';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe('stagedCopy', () => {
  it('names the type the first bytes show, or none', () => {
    const facts = { attemptId: 'a', fingerprint: 'f', storageKey: 'k', bytes: 9, sha256: 's' };
    expect(stagedCopy({ ...facts, head: Buffer.concat([PNG, Buffer.from('x')]) })).toEqual({ ...facts, sniffedType: 'image/png' });
    expect(stagedCopy({ ...facts, head: Buffer.from('plain text') }).sniffedType).toBeNull();
  });
});

describe('HeadBytes', () => {
  it('keeps the first SNIFF_BYTES across chunks and ignores the rest', () => {
    const head = new HeadBytes();
    const data = Buffer.alloc(SNIFF_BYTES * 2, 7).fill(1, 0, 10);
    head.add(data.subarray(0, 10));
    expect(head.full).toBe(false);
    head.add(data.subarray(10));
    expect(head.full).toBe(true);
    expect(head.value).toEqual(data.subarray(0, SNIFF_BYTES));
  });

  it('takes bytes only where they continue what it has (a resumed upload starts past offset 0)', () => {
    const head = new HeadBytes();
    head.add(Buffer.from('later'), 100);
    expect(head.value.length).toBe(0);
    head.add(Buffer.from('abc'), 0);
    head.add(Buffer.from('zzz'), 5);
    head.add(Buffer.from('def'), 3);
    expect(head.value.toString()).toBe('abcdef');
  });
});
