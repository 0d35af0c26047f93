// Media fixtures made by the tests themselves (no downloaded media): images with sharp,
// audio and video with ffmpeg's synthetic sources.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';

const run = promisify(execFile);

/** A landscape JPEG whose EXIF orientation (6) says "rotate 90°": displayed as portrait. */
export async function orientedJpeg(width = 1600, height = 900): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 200, g: 80, b: 40 } } })
    .jpeg({ quality: 80 })
    .withMetadata({ orientation: 6 })
    .toBuffer();
}

export async function png(width = 640, height = 480): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 4, background: { r: 10, g: 120, b: 200, alpha: 1 } } })
    .png()
    .toBuffer();
}

async function withFfmpeg(args: (out: string) => string[], ext: string): Promise<Buffer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'oncely-media-'));
  const out = path.join(dir, `fixture.${ext}`);
  try {
    await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args(out)]);
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function video(seconds = 2, size = '320x240'): Promise<Buffer> {
  return withFfmpeg(
    (out) => ['-f', 'lavfi', '-i', `testsrc=duration=${seconds}:size=${size}:rate=10`, '-pix_fmt', 'yuv420p', '-c:v', 'libx264', out],
    'mp4',
  );
}

export function audio(seconds = 2): Promise<Buffer> {
  return withFfmpeg((out) => ['-f', 'lavfi', '-i', `sine=frequency=440:duration=${seconds}`, '-ac', '1', out], 'wav');
}
