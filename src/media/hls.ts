// The video.hls step: an H.264/AAC HLS ladder of a video. Each rung is encoded and handed
// over (stored, recorded) before the next starts, so a retry after a worker died re-encodes
// only the rungs it had not finished; the master playlist is written last, once every rung
// is stored, so no master ever names a rendition that is not there; rungs never upscale.
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sharp } from './image-decoders';
import type { StepOf } from '../pipelines/catalogue';
import { ffmpeg, firstLine, inputFlags, probeMedia } from './ffmpeg';
import type { ProducedRendition, StepOutcome, StepProgress } from './step-outcome';

const PLAYLIST = 'application/vnd.apple.mpegurl';
const SEGMENT = 'video/mp2t';

/** The rungs to make for a source this tall: none above it; with none left, one at its own (even) height. */
export function ladderFor(step: StepOf<'video.hls'>, sourceHeight: number): { height: number; bitrate: string }[] {
  const fitting = step.ladder.filter((r) => r.height <= sourceHeight).sort((a, b) => a.height - b.height);
  if (fitting.length) return fitting;
  const lowest = [...step.ladder].sort((a, b) => a.height - b.height)[0]!;
  return [{ height: sourceHeight - (sourceHeight % 2), bitrate: lowest.bitrate }];
}

export async function hlsLadder(
  step: StepOf<'video.hls'>,
  input: string,
  demuxer: string,
  outDir: string,
  signal: AbortSignal,
  progress: StepProgress | undefined,
): Promise<StepOutcome> {
  const failed = (reason: string, media: Record<string, unknown> | null = null): StepOutcome => ({
    status: 'failed',
    reason,
    media,
    renditions: [],
  });
  const probed = await probeMedia(input, demuxer, signal);
  if (!probed.ok) return failed(probed.reason);
  const { video, audio, durationMs } = probed;
  const media = {
    kind: 'video',
    durationMs,
    width: video?.width ?? null,
    height: video?.height ?? null,
    videoCodec: video?.codec_name ?? null,
  };
  if (!video?.height) return failed('no video stream found', media);
  const done: ProducedRendition[] = [];
  const hand = async (r: ProducedRendition) => {
    if (progress) await progress.keep(r);
    done.push(r);
  };
  const rungs = ladderFor(step, video.height);
  try {
    for (const rung of rungs) {
      const name = `${step.name}-${rung.height}p`;
      if (progress?.kept.has(name)) continue;
      const dir = path.join(outDir, name);
      const playlist = path.join(outDir, `${name}.m3u8`);
      await mkdir(dir, { recursive: true });
      await ffmpeg(
        rungArgs({ input, demuxer, rung, name, dir, playlist, segmentSeconds: step.segmentSeconds, audio: audio !== undefined }),
        signal,
      );
      const segments = (await readdir(dir)).sort().map((f) => ({ file: path.join(dir, f), contentType: SEGMENT }));
      const width = Math.round((video.width! * rung.height) / video.height / 2) * 2;
      await hand({ name, file: playlist, companions: segments, contentType: PLAYLIST, width, height: rung.height, durationMs });
    }
    if (step.poster && !progress?.kept.has(`${step.name}-poster`)) {
      const file = path.join(outDir, `${step.name}-poster.jpg`);
      const at = durationMs && durationMs > 2000 ? 1 : 0;
      await ffmpeg(['-ss', String(at), ...inputFlags(demuxer), '-i', input, '-frames:v', '1', '-q:v', '3', file], signal);
      const info = await sharp(file).metadata();
      await hand({
        name: `${step.name}-poster`,
        file,
        contentType: 'image/jpeg',
        width: info.width ?? null,
        height: info.height ?? null,
        durationMs: null,
      });
    }
  } catch (err) {
    if (signal.aborted) throw err;
    return failed(`transcoding failed: ${firstLine(err)}`, media);
  }
  // Every rung is stored: now the master may name them.
  const master = path.join(outDir, `${step.name}.m3u8`);
  const lines = ['#EXTM3U', '#EXT-X-VERSION:3'];
  for (const rung of rungs) {
    const width = Math.round((video.width! * rung.height) / video.height / 2) * 2;
    lines.push(
      `#EXT-X-STREAM-INF:BANDWIDTH=${parseInt(rung.bitrate, 10) * 1000 + (audio ? 128_000 : 0)},RESOLUTION=${width}x${rung.height}`,
      `${step.name}-${rung.height}p.m3u8`,
    );
  }
  await writeFile(master, `${lines.join('\n')}\n`);
  await hand({ name: step.name, file: master, contentType: PLAYLIST, width: video.width ?? null, height: video.height, durationMs });
  return { status: 'succeeded', reason: null, media, renditions: done };
}

/** The ffmpeg arguments of one rung: its playlist, its segments in `dir` (the benchmark runs the same). */
export function rungArgs(r: {
  input: string;
  demuxer: string;
  rung: { height: number; bitrate: string };
  name: string;
  dir: string;
  playlist: string;
  segmentSeconds: number;
  audio: boolean;
}): string[] {
  const kbps = parseInt(r.rung.bitrate, 10);
  return [
    ...inputFlags(r.demuxer),
    ...['-i', r.input, '-map', '0:v:0'],
    ...(r.audio ? ['-map', '0:a:0', '-c:a', 'aac', '-b:a', '128k', '-ac', '2'] : []),
    ...['-vf', `scale=-2:${r.rung.height}`, '-c:v', 'libx264', '-preset', 'veryfast'],
    ...['-b:v', r.rung.bitrate, '-maxrate', r.rung.bitrate, '-bufsize', `${kbps * 2}k`],
    // Keyframes on segment boundaries, so every segment starts cleanly.
    ...['-force_key_frames', `expr:gte(t,n_forced*${r.segmentSeconds})`],
    ...['-f', 'hls', '-hls_time', String(r.segmentSeconds), '-hls_playlist_type', 'vod', '-hls_base_url', `${r.name}/`],
    ...['-hls_segment_filename', path.join(r.dir, '%03d.ts'), r.playlist],
  ];
}
