// The ffmpeg/ffprobe calls every audio and video step makes: the input read as a local file
// with the demuxer its media type fixes, each run bounded by a signal and killed with SIGKILL.
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';

export const run = promisify(execFile);

/**
 * The ffmpeg demuxer for each media type we transcode. Input formats are never probed from
 * content: an upload named video/mp4 that is really an ffconcat or HLS playlist would
 * otherwise make ffmpeg open other files or URLs. Types without an entry are skipped.
 */
export const DEMUXERS: Record<string, string> = {
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
export function inputFlags(demuxer: string): string[] {
  return ['-protocol_whitelist', 'file', '-f', demuxer];
}

let ffmpegAvailable: Promise<boolean> | undefined;
export function hasFfmpeg(): Promise<boolean> {
  ffmpegAvailable ??= run('ffprobe', ['-version']).then(
    () => true,
    () => false,
  );
  return ffmpegAvailable;
}

export interface Probe {
  format?: { duration?: string; format_name?: string };
  streams?: { codec_type?: string; codec_name?: string; width?: number; height?: number; duration?: string }[];
}

export function ffmpeg(args: string[], signal?: AbortSignal): Promise<void> {
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

export function firstLine(err: unknown): string {
  const e = err as { stderr?: string; message?: string };
  return (e.stderr?.trim() || e.message || String(err)).split('\n')[0]!.slice(0, 300);
}

/** What ffprobe says of a file (its first video and audio streams), or why it could not tell. */
export async function probeMedia(
  input: string,
  demuxer: string,
  signal: AbortSignal,
): Promise<
  | {
      ok: true;
      probe: Probe;
      video: NonNullable<Probe['streams']>[number] | undefined;
      audio: NonNullable<Probe['streams']>[number] | undefined;
      durationMs: number | null;
    }
  | { ok: false; reason: string }
> {
  let probe: Probe;
  try {
    const { stdout } = await run(
      'ffprobe',
      ['-v', 'error', ...inputFlags(demuxer), '-print_format', 'json', '-show_format', '-show_streams', input],
      {
        signal,
        killSignal: 'SIGKILL',
      },
    );
    probe = JSON.parse(stdout) as Probe;
  } catch (err) {
    if (signal.aborted) throw err;
    return { ok: false, reason: `media could not be probed: ${firstLine(err)}` };
  }
  return {
    ok: true,
    probe,
    video: probe.streams?.find((s) => s.codec_type === 'video'),
    audio: probe.streams?.find((s) => s.codec_type === 'audio'),
    durationMs: probe.format?.duration ? Math.round(Number(probe.format.duration) * 1000) : null,
  };
}
