// Decoders on untrusted pictures: sniff.ts knows every type the image step takes (TIFF and
// ISO-BMFF included), only those types' libvips loaders can run, and a picture that decodes
// as another type than it was declared is refused before anything is rendered from it.
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sharp } from '../../src/media/image-decoders';
import { transcodeFile, type Presets } from '../../src/media/transcode';
import { CHECKED_TYPES, CHECKED_TYPES_BEFORE_R5, contentTypeMismatch, sniff } from '../../src/upload/sniff';

const presets: Presets = { thumbnailSize: 16, displaySize: 32, posterWidth: 32, audioBitrate: '64k', timeoutSeconds: 60, maxPixels: 1e8 };
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'oncely-decoders-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const picture = () => sharp({ create: { width: 24, height: 16, channels: 3, background: '#3a7' } });
const encoded: Record<string, () => Promise<Buffer>> = {
  'image/jpeg': () => picture().jpeg().toBuffer(),
  'image/png': () => picture().png().toBuffer(),
  'image/webp': () => picture().webp().toBuffer(),
  'image/gif': () => picture().gif().toBuffer(),
  'image/tiff': () => picture().tiff().toBuffer(),
  'image/avif': () => picture().avif().toBuffer(),
};

async function step(bytes: Buffer, declared: string) {
  const source = path.join(dir, `source-${Math.random().toString(36).slice(2)}`);
  await writeFile(source, bytes);
  const out = await mkdtemp(path.join(dir, 'out-'));
  const outcome = await transcodeFile(source, declared, out, presets);
  return { outcome, files: await readdir(out) };
}

describe('sniffing', () => {
  it('recognises every type the image step takes from its first bytes', async () => {
    for (const [type, make] of Object.entries(encoded)) expect(sniff((await make()).subarray(0, 64)), type).toBe(type);
  });

  it('reads TIFF in both byte orders and BigTIFF, and ISO-BMFF brands: AVIF over its HEIF brands, HEIC, not MP4', () => {
    const bytes = (...b: number[]) => Uint8Array.from(b);
    expect(sniff(bytes(0x49, 0x49, 0x2a, 0x00, 8, 0, 0, 0))).toBe('image/tiff');
    expect(sniff(bytes(0x4d, 0x4d, 0x00, 0x2a, 0, 0, 0, 8))).toBe('image/tiff');
    expect(sniff(bytes(0x49, 0x49, 0x2b, 0x00, 8, 0, 0, 0))).toBe('image/tiff');
    const ftyp = (major: string, ...compatible: string[]) => {
      const size = 16 + 4 * compatible.length;
      return Uint8Array.from(
        Buffer.concat([Buffer.from([0, 0, 0, size]), Buffer.from(`ftyp${major}\0\0\0\0${compatible.join('')}`, 'latin1')]),
      );
    };
    expect(sniff(ftyp('avif', 'mif1', 'miaf'))).toBe('image/avif');
    expect(sniff(ftyp('mif1', 'mif1', 'avif'))).toBe('image/avif');
    expect(sniff(ftyp('heic', 'mif1', 'heic'))).toBe('image/heic');
    expect(sniff(ftyp('isom', 'isom', 'mp41'))).toBeNull();
    // A brand past the ftyp box's own size is not the file's.
    const short = ftyp('mif1', 'miaf', 'avif');
    short[3] = 20;
    expect(sniff(short)).toBe('image/heic');
  });

  it('checks TIFF, AVIF and HEIC declarations from revision 5; older runs decide as they did', () => {
    expect(contentTypeMismatch('image/tiff', 'image/png')).toMatch(/Content-Type is image\/tiff but the file content is image\/png/);
    expect(contentTypeMismatch('image/avif', null)).toMatch(/not recognisable/);
    expect(contentTypeMismatch('image/tiff', 'image/tiff')).toBeNull();
    expect(contentTypeMismatch('image/tiff', 'image/png', CHECKED_TYPES_BEFORE_R5)).toBeNull();
    expect(contentTypeMismatch('image/png', 'image/tiff', CHECKED_TYPES_BEFORE_R5)).toMatch(/image\/png/);
    expect([...CHECKED_TYPES_BEFORE_R5].every((t) => CHECKED_TYPES.has(t))).toBe(true);
  });
});

describe('the image step on untrusted bytes', () => {
  it('renders each type it takes when the bytes are that type', async () => {
    for (const [type, make] of Object.entries(encoded)) {
      const { outcome, files } = await step(await make(), type);
      expect(outcome.status, `${type}: ${outcome.reason}`).toBe('succeeded');
      expect(files.length, type).toBeGreaterThan(0);
    }
  });

  it('refuses, for every decoder, bytes that decode as another type than declared, and renders nothing', async () => {
    const types = Object.keys(encoded);
    for (const [i, actual] of types.entries()) {
      const declared = types[(i + 1) % types.length]!;
      const { outcome, files } = await step(await encoded[actual]!(), declared);
      expect(outcome.status, `${actual} declared ${declared}`).toBe('failed');
      expect(outcome.reason).toContain(`declared ${declared} but decodes as ${actual}`);
      expect(files).toEqual([]);
    }
  });

  it('never reaches a decoder of a type Oncely does not declare (SVG, the VIPS format, PPM)', async () => {
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>');
    const vipsFile = path.join(dir, 'picture.v');
    await picture().toFile(vipsFile);
    const { readFile } = await import('node:fs/promises');
    const ppm = Buffer.concat([Buffer.from('P6\n4 4\n255\n'), Buffer.alloc(48, 0x80)]);
    for (const [name, bytes] of [
      ['svg', svg],
      ['vips', await readFile(vipsFile)],
      ['ppm', ppm],
    ] as const) {
      const { outcome, files } = await step(bytes, 'image/png');
      expect(outcome.status, name).toBe('failed');
      expect(outcome.reason, name).toMatch(/could not be decoded: .*unsupported image format/);
      expect(files).toEqual([]);
    }
  });
});
