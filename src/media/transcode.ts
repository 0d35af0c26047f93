// Turns one local media file into renditions: images with sharp, audio and video with
// ffmpeg/ffprobe. Pure file-in, files-out; the activity around it owns storage and rows.
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import sharp from 'sharp';
import { mediaKind } from '../downstream/types';
import { reportMemory } from '../metrics';

const run = promisify(execFile);

// libvips caches recent operations (up to 50 MB) for reuse on the same input; every upload
// is a new input, so the cache only held memory (bench/README.md, embedded memory).
sharp.cache(false);
reportMemory('libvips_cache', () => sharp.cache().memory.current * 1024 * 1024);

export interface Presets {
  thumbnailSize: number;
  displaySize: number;
  posterWidth: number;
  audioBitrate: string;
  /** Each ffprobe/ffmpeg run is killed after this long; the outcome is then 'failed'. */
  timeoutSeconds: number;
}

/**
 * The ffmpeg demuxer for each media type we transcode. Input formats are never probed from
 * content: an upload named video/mp4 that is really an ffconcat or HLS playlist would
 * otherwise make ffmpeg open other files or URLs. Types without an entry are skipped.
 */
const DEMUXERS: Record<string, string> = {
  'video/mp4': 'mov',
  'video/quicktime': 'mov',
  'video/x-m4v': 'mov',
  'video/3gpp': 'mov',
  'audio/mp4': 'mov',
  'audio/x-m4a': 'mov',
  'video/webm': 'matroska',
  'audio/webm': 'matroska',
  'video/x-matroska': 'matroska',
  'audio/x-matroska': 'matroska',
  'video/x-msvideo': 'avi',
  'video/mpeg': 'mpeg',
  'video/mp2t': 'mpegts',
  'video/ogg': 'ogg',
  'audio/ogg': 'ogg',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'audio/aac': 'aac',
};

/** Flags that pin how ffmpeg/ffprobe read the input: local file only, fixed demuxer. */
function inputFlags(demuxer: string): string[] {
  return ['-protocol_whitelist', 'file', '-f', demuxer];
}

export interface ProducedRendition {
  name: string;
  file: string;
  contentType: string;
  width: number | null;
  height: number | null;
  durationMs: number | null;
}

export type TranscodeOutcome =
  | { status: 'ready'; media: Record<string, unknown>; renditions: ProducedRendition[] }
  | { status: 'skipped' | 'failed'; reason: string; media: Record<string, unknown> | null; renditions: [] };

let ffmpegAvailable: Promise<boolean> | undefined;
export function hasFfmpeg(): Promise<boolean> {
  ffmpegAvailable ??= run('ffprobe', ['-version']).then(
    () => true,
    () => false,
  );
  return ffmpegAvailable;
}

export async function transcodeFile(
  input: string,
  contentType: string,
  outDir: string,
  presets: Presets,
  signal?: AbortSignal,
): Promise<TranscodeOutcome> {
  const kind = mediaKind(contentType);
  if (kind === 'other') return { status: 'skipped', reason: `no transcoder for ${contentType}`, media: null, renditions: [] };
  if (kind === 'image') return transcodeImage(input, outDir, presets);
  if (!(await hasFfmpeg())) return { status: 'skipped', reason: 'ffmpeg is not installed on this worker', media: null, renditions: [] };
  const demuxer = DEMUXERS[contentType];
  if (!demuxer) return { status: 'skipped', reason: `no transcoder for ${contentType}`, media: null, renditions: [] };
  // One deadline for the whole job: a file that makes ffmpeg hang ends as 'failed'.
  const deadline = AbortSignal.timeout(presets.timeoutSeconds * 1000);
  const both = signal ? AbortSignal.any([signal, deadline]) : deadline;
  try {
    return await transcodeAv(input, kind, demuxer, outDir, presets, both);
  } catch (err) {
    if (deadline.aborted && !signal?.aborted)
      return { status: 'failed', reason: `transcoding took longer than ${presets.timeoutSeconds} s`, media: null, renditions: [] };
    throw err;
  }
}

async function transcodeImage(input: string, outDir: string, p: Presets): Promise<TranscodeOutcome> {
  let meta: sharp.Metadata;
  try {
    // failOn 'error' makes truncated or corrupt files fail instead of half-decoding.
    meta = await sharp(input, { failOn: 'error' }).metadata();
    const renditions: ProducedRendition[] = [];
    for (const [name, size] of [
      ['thumbnail', p.thumbnailSize],
      ['display', p.displaySize],
    ] as const) {
      const file = path.join(outDir, `${name}.webp`);
      const info = await sharp(input, { failOn: 'error', animated: false })
        .rotate() // applies EXIF orientation
        .resize({ width: size, height: size, fit: 'inside', withoutEnlargement: true })
        .webp({ quality: 82 })
        .toFile(file);
      renditions.push({ name, file, contentType: 'image/webp', width: info.width, height: info.height, durationMs: null });
    }
    // Width and height as displayed, i.e. after EXIF orientation.
    const swapped = (meta.orientation ?? 1) >= 5;
    const media = {
      kind: 'image',
      format: meta.format,
      width: swapped ? meta.height : meta.width,
      height: swapped ? meta.width : meta.height,
      orientation: meta.orientation ?? 1,
    };
    return { status: 'ready', media, renditions };
  } catch (err) {
    return { status: 'failed', reason: `image could not be decoded: ${(err as Error).message}`, media: null, renditions: [] };
  }
}

interface Probe {
  format?: { duration?: string; format_name?: string };
  streams?: { codec_type?: string; codec_name?: string; width?: number; height?: number; duration?: string }[];
}

async function transcodeAv(
  input: string,
  kind: 'audio' | 'video',
  demuxer: string,
  outDir: string,
  p: Presets,
  signal: AbortSignal,
): Promise<TranscodeOutcome> {
  let probe: Probe;
  try {
    const { stdout } = await run(
      'ffprobe',
      ['-v', 'error', ...inputFlags(demuxer), '-print_format', 'json', '-show_format', '-show_streams', input],
      { signal, killSignal: 'SIGKILL' },
    );
    probe = JSON.parse(stdout) as Probe;
  } catch (err) {
    if (signal?.aborted) throw err;
    return { status: 'failed', reason: `media could not be probed: ${firstLine(err)}`, media: null, renditions: [] };
  }
  const video = probe.streams?.find((s) => s.codec_type === 'video');
  const audio = probe.streams?.find((s) => s.codec_type === 'audio');
  const durationMs = probe.format?.duration ? Math.round(Number(probe.format.duration) * 1000) : null;
  const media = {
    kind,
    container: probe.format?.format_name ?? null,
    durationMs,
    width: video?.width ?? null,
    height: video?.height ?? null,
    videoCodec: video?.codec_name ?? null,
    audioCodec: audio?.codec_name ?? null,
  };
  if (kind === 'video' && !video) return { status: 'failed', reason: 'no video stream found', media, renditions: [] };
  if (kind === 'audio' && !audio) return { status: 'failed', reason: 'no audio stream found', media, renditions: [] };
  try {
    if (kind === 'video') {
      const file = path.join(outDir, 'poster.jpg');
      const at = durationMs && durationMs > 2000 ? 1 : 0;
      await ffmpeg(
        [
          '-ss',
          String(at),
          ...inputFlags(demuxer),
          '-i',
          input,
          '-frames:v',
          '1',
          '-vf',
          `scale='min(${p.posterWidth},iw)':-2`,
          '-q:v',
          '3',
          file,
        ],
        signal,
      );
      const info = await sharp(file).metadata();
      return {
        status: 'ready',
        media,
        renditions: [
          { name: 'poster', file, contentType: 'image/jpeg', width: info.width ?? null, height: info.height ?? null, durationMs: null },
        ],
      };
    }
    const file = path.join(outDir, 'audio.m4a');
    await ffmpeg(
      [...inputFlags(demuxer), '-i', input, '-vn', '-c:a', 'aac', '-b:a', p.audioBitrate, '-movflags', '+faststart', file],
      signal,
    );
    const { stdout } = await run(
      'ffprobe',
      ['-v', 'error', ...inputFlags('mov'), '-show_entries', 'format=duration', '-of', 'csv=p=0', file],
      { signal, killSignal: 'SIGKILL' },
    );
    return {
      status: 'ready',
      media,
      renditions: [
        { name: 'audio', file, contentType: 'audio/mp4', width: null, height: null, durationMs: Math.round(Number(stdout.trim()) * 1000) },
      ],
    };
  } catch (err) {
    if (signal?.aborted) throw err;
    return { status: 'failed', reason: `transcoding failed: ${firstLine(err)}`, media, renditions: [] };
  }
}

function ffmpeg(args: string[], signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      signal,
      killSignal: 'SIGKILL',
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(stderr.trim() || `ffmpeg exited with ${code}`))));
  });
}

function firstLine(err: unknown): string {
  const e = err as { stderr?: string; message?: string };
  return (e.stderr?.trim() || e.message || String(err)).split('\n')[0]!.slice(0, 300);
}
