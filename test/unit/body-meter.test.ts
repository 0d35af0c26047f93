import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { BodyMeter } from '../../src/upload/body-meter';
import { SNIFF_BYTES } from '../../src/upload/staged-copy';
import { contentTypeMismatch, sniff } from '../../src/upload/sniff';

const sink = () => new Writable({ write: (_c, _e, cb) => cb() });

describe('BodyMeter', () => {
  it('counts, hashes and keeps the head of a body of the declared length', async () => {
    const data = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz'.repeat(4));
    const meter = new BodyMeter(data.length);
    await pipeline(Readable.from([data.subarray(0, 5), data.subarray(5)]), meter, sink());
    expect(meter.bytes).toBe(data.length);
    expect(meter.sha256).toBe(createHash('sha256').update(data).digest('hex'));
    // The first SNIFF_BYTES, across the chunk boundary, and no more.
    expect(meter.head.toString()).toBe(data.subarray(0, SNIFF_BYTES).toString());
  });

  it('fails on a short body and on a long one', async () => {
    const short = new BodyMeter(10);
    await expect(pipeline(Readable.from([Buffer.from('abc')]), short, sink())).rejects.toThrow(/ended after 3 of 10/);
    expect(short.failure?.code).toBe('body_incomplete');
    const long = new BodyMeter(2);
    await expect(pipeline(Readable.from([Buffer.from('abc')]), long, sink())).rejects.toThrow(/longer than Content-Length/);
    expect(long.failure?.code).toBe('body_incomplete');
  });
});

describe('sniff', () => {
  it('recognises signatures and flags declared types the bytes contradict', () => {
    expect(sniff(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]))).toBe('image/png');
    expect(sniff(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBe('image/jpeg');
    expect(sniff(Buffer.from('RIFF\0\0\0\0WEBPVP8 '))).toBe('image/webp');
    expect(sniff(Buffer.from('hello'))).toBeNull();
    expect(contentTypeMismatch('image/png', 'image/png')).toBeNull();
    expect(contentTypeMismatch('text/plain', null)).toBeNull();
    expect(contentTypeMismatch('image/png', null)).toMatch(/image\/png/);
    expect(contentTypeMismatch('image/png', 'image/jpeg')).toMatch(/image\/jpeg/);
  });
});
