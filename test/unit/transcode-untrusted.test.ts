// ffmpeg on untrusted input: the demuxer comes from the media type, never from the content,
// only local-file input is allowed, and a run that hangs is killed and reported as failed.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { transcodeFile, type Presets } from '../../src/media/transcode';
import { audio } from '../helpers/media';

const presets: Presets = { thumbnailSize: 64, displaySize: 128, posterWidth: 160, audioBitrate: '64k', timeoutSeconds: 60, maxPixels: 1e8 };
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'oncely-untrusted-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('transcoding untrusted files', () => {
  it('a real audio file of its declared type still transcodes', async () => {
    await writeFile(path.join(dir, 'source'), await audio(1)); // WAV
    const out = await mkdtemp(path.join(dir, 'out-'));
    const outcome = await transcodeFile(path.join(dir, 'source'), 'audio/wav', out, presets);
    expect(outcome.status).toBe('succeeded');
  });

  it('an ffconcat playlist uploaded as audio does not make ffmpeg read the file it names', async () => {
    // A neighbour file ffmpeg could reach through a playlist (another upload's scratch copy).
    await writeFile(path.join(dir, 'neighbour.mp3'), await audio(2));
    await writeFile(path.join(dir, 'source'), 'ffconcat version 1.0\nfile neighbour.mp3\n');
    const out = await mkdtemp(path.join(dir, 'out-'));
    const outcome = await transcodeFile(path.join(dir, 'source'), 'audio/mpeg', out, presets);
    expect(outcome.status).toBe('failed');
    expect(outcome.renditions).toEqual([]);
  });

  it('an HLS playlist uploaded as video does not make ffmpeg open URLs', async () => {
    await writeFile(
      path.join(dir, 'source'),
      '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nhttp://127.0.0.1:9/secret.ts\n#EXT-X-ENDLIST\n',
    );
    const out = await mkdtemp(path.join(dir, 'out-'));
    const outcome = await transcodeFile(path.join(dir, 'source'), 'video/mp4', out, presets);
    expect(outcome.status).toBe('failed');
  });

  it('an input that makes ffprobe hang is killed after the timeout and reported failed, with a reason', async () => {
    const fifo = path.join(dir, 'source');
    await promisify(execFile)('mkfifo', [fifo]); // opening it blocks forever: nothing ever writes
    const out = await mkdtemp(path.join(dir, 'out-'));
    const started = Date.now();
    const outcome = await transcodeFile(fifo, 'audio/wav', out, { ...presets, timeoutSeconds: 1 });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'audio.transcode took longer than 1 s' });
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 40_000);

  it('a media type without a fixed demuxer is skipped, not probed', async () => {
    await writeFile(path.join(dir, 'source'), await audio(1));
    const outcome = await transcodeFile(path.join(dir, 'source'), 'video/x-unknown', dir, presets);
    expect(outcome).toMatchObject({ status: 'skipped' });
  });
});
