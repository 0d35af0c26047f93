// Runs one processing step of a pipeline on a local file: pictures with sharp, audio and
// video with ffmpeg/ffprobe, PDF pages with poppler. Pure file-in, files-out; the activity
// around it owns storage and rows.
import { DEMUXERS, ffmpeg, firstLine, hasFfmpeg, inputFlags, probeMedia, run } from './ffmpeg';
import { hlsLadder } from './hls';
import type { ProducedRendition, StepOutcome, StepProgress } from './step-outcome';
import path from 'node:path';
import { decodedTypeMismatch, sharp } from './image-decoders';
import type { Metadata } from 'sharp';
import type { PipelineStep, StepOf } from '../pipelines/catalogue';
import { builtinPipeline, stepApplies, type DefaultPresets } from '../pipelines/steps';
import { reportMemory } from '../metrics';

// libvips caches recent operations (up to 50 MB) for reuse on the same input; every upload
// is a new input, so the cache only held memory (bench/HISTORY.md, embedded memory).
sharp.cache(false);
reportMemory('libvips_cache', () => sharp.cache().memory.current * 1024 * 1024);

export interface MediaLimits {
  /** Each ffprobe/ffmpeg/pdftoppm run is killed after this long; the step is then 'failed'. */
  timeoutSeconds: number;
  /** Pictures with more pixels than this fail the step (decompression bombs), never the worker. */
  maxPixels: number;
}

/** The built-in default's sizes and the limits every step runs under (the worker's config). */
export type Presets = DefaultPresets & MediaLimits;

const skipped = (reason: string): StepOutcome => ({ status: 'skipped', reason, media: null, renditions: [] });
const failed = (reason: string, media: Record<string, unknown> | null = null): StepOutcome => ({
  status: 'failed',
  reason,
  media,
  renditions: [],
});

/** The steps that turn the file into renditions (the others scan it or announce it). */
export type MediaStep = Exclude<PipelineStep, { type: 'webhook' | 'scan.clamav' | 'http.call' }>;

/** Runs one processing step on `input` (a file of `contentType`), writing renditions into `outDir`. */
export async function runMediaStep(
  step: MediaStep,
  input: string,
  contentType: string,
  outDir: string,
  limits: MediaLimits,
  signal?: AbortSignal,
  progress?: StepProgress,
): Promise<StepOutcome> {
  if (!stepApplies(step, contentType)) return skipped(`${step.type} does not apply to ${contentType}`);
  if (step.type === 'image.variants') return imageVariants(step, input, contentType, outDir, limits);
  // One deadline for the whole step: a file that makes a tool hang ends as 'failed'.
  const deadline = AbortSignal.timeout(limits.timeoutSeconds * 1000);
  const both = signal ? AbortSignal.any([signal, deadline]) : deadline;
  try {
    if (step.type === 'document.preview') return await documentPreview(step, input, outDir, limits, both);
    if (!(await hasFfmpeg())) return skipped('ffmpeg is not installed on this worker');
    const demuxer = DEMUXERS[contentType];
    if (!demuxer) return skipped(`no transcoder for ${contentType}`);
    if (step.type === 'video.hls') return await hlsLadder(step, input, demuxer, outDir, both, progress);
    return await audioVideo(step, input, demuxer, outDir, both);
  } catch (err) {
    if (deadline.aborted && !signal?.aborted) return failed(`${step.type} took longer than ${limits.timeoutSeconds} s`);
    throw err;
  }
}

/** What the built-in default makes of a file (the renditions uploads always had). */
export async function transcodeFile(
  input: string,
  contentType: string,
  outDir: string,
  presets: Presets,
  signal?: AbortSignal,
): Promise<StepOutcome> {
  const step = builtinPipeline(presets).steps.find(
    (s): s is MediaStep => s.type !== 'webhook' && s.type !== 'scan.clamav' && stepApplies(s, contentType),
  );
  if (!step) return skipped(`no transcoder for ${contentType}`);
  return runMediaStep(step, input, contentType, outDir, presets, signal);
}

const FORMATS = { webp: 'image/webp', avif: 'image/avif', jpeg: 'image/jpeg', png: 'image/png' } as const;
const EXTENSIONS = { webp: '.webp', avif: '.avif', jpeg: '.jpg', png: '.png' } as const;

async function imageVariants(
  step: StepOf<'image.variants'>,
  input: string,
  contentType: string,
  outDir: string,
  limits: MediaLimits,
): Promise<StepOutcome> {
  // failOn 'error' makes truncated or corrupt files fail instead of half-decoding.
  const open = () => sharp(input, { failOn: 'error', animated: false, limitInputPixels: limits.maxPixels });
  let meta: Metadata;
  try {
    meta = await open().metadata();
  } catch (err) {
    return failed(`image could not be decoded: ${(err as Error).message}`);
  }
  const mismatch = decodedTypeMismatch(contentType, meta);
  if (mismatch) return failed(`image refused: ${mismatch}`);
  const pixels = (meta.width ?? 0) * (meta.height ?? 0);
  if (pixels > limits.maxPixels) return failed(`image has ${pixels} pixels, more than the limit of ${limits.maxPixels}`);
  // Width and height as displayed, i.e. after EXIF orientation.
  const swapped = step.autoOrient && (meta.orientation ?? 1) >= 5;
  const media = {
    kind: 'image',
    format: meta.format,
    width: swapped ? meta.height : meta.width,
    height: swapped ? meta.width : meta.height,
    orientation: meta.orientation ?? 1,
  };
  const copyright = step.metadata === 'keep-copyright' ? await copyrightTags(meta.exif) : undefined;
  try {
    const renditions: ProducedRendition[] = [];
    for (const v of step.variants) {
      const file = path.join(outDir, `${v.name}${EXTENSIONS[v.format]}`);
      let image = open();
      if (step.autoOrient) image = image.rotate(); // applies EXIF orientation
      image = image.resize({ width: v.width, height: v.height, fit: v.fit, withoutEnlargement: true });
      // sharp writes no metadata unless asked: `strip` is the default (GPS included).
      if (step.metadata === 'keep') image = image.keepMetadata();
      else if (copyright) image = image.keepIccProfile().withExif({ IFD0: copyright });
      const options = v.quality === undefined ? {} : { quality: v.quality };
      const info = await image.toFormat(v.format, options).toFile(file);
      renditions.push({ name: v.name, file, contentType: FORMATS[v.format], width: info.width, height: info.height, durationMs: null });
    }
    return { status: 'succeeded', reason: null, media, renditions };
  } catch (err) {
    return failed(`image could not be converted: ${(err as Error).message}`, media);
  }
}

/** The copyright and artist of an EXIF block, as sharp's withExif wants them (undefined: none). */
async function copyrightTags(exif: Buffer | undefined): Promise<Record<string, string> | undefined> {
  if (!exif) return undefined;
  const { default: exifReader } = await import('exif-reader');
  let tags: Record<string, unknown> | undefined;
  try {
    tags = exifReader(exif).Image as Record<string, unknown> | undefined;
  } catch {
    return undefined;
  }
  const kept: Record<string, string> = {};
  for (const name of ['Copyright', 'Artist'] as const) if (typeof tags?.[name] === 'string') kept[name] = tags[name] as string;
  return Object.keys(kept).length ? kept : undefined;
}

async function audioVideo(
  step: StepOf<'video.poster'> | StepOf<'audio.transcode'>,
  input: string,
  demuxer: string,
  outDir: string,
  signal: AbortSignal,
): Promise<StepOutcome> {
  const kind = step.type === 'video.poster' ? 'video' : 'audio';
  const probed = await probeMedia(input, demuxer, signal);
  if (!probed.ok) return failed(probed.reason);
  const { probe, video, audio, durationMs } = probed;
  const media = {
    kind,
    container: probe.format?.format_name ?? null,
    durationMs,
    width: video?.width ?? null,
    height: video?.height ?? null,
    videoCodec: video?.codec_name ?? null,
    audioCodec: audio?.codec_name ?? null,
  };
  if (kind === 'video' && !video) return failed('no video stream found', media);
  if (kind === 'audio' && !audio) return failed('no audio stream found', media);
  try {
    if (step.type === 'video.poster') {
      const file = path.join(outDir, `${step.name}.jpg`);
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
          `scale='min(${step.width},iw)':-2`,
          '-q:v',
          '3',
          file,
        ],
        signal,
      );
      const info = await sharp(file).metadata();
      return {
        status: 'succeeded',
        reason: null,
        media,
        renditions: [
          { name: step.name, file, contentType: 'image/jpeg', width: info.width ?? null, height: info.height ?? null, durationMs: null },
        ],
      };
    }
    const { codec, extension, contentType, container } = AUDIO_FORMATS[step.format];
    const file = path.join(outDir, `${step.name}${extension}`);
    await ffmpeg([...inputFlags(demuxer), '-i', input, '-vn', '-c:a', codec, '-b:a', step.bitrate, ...container, file], signal);
    const { stdout } = await run(
      'ffprobe',
      ['-v', 'error', ...inputFlags(AUDIO_FORMATS[step.format].demuxer), '-show_entries', 'format=duration', '-of', 'csv=p=0', file],
      { signal, killSignal: 'SIGKILL' },
    );
    return {
      status: 'succeeded',
      reason: null,
      media,
      renditions: [{ name: step.name, file, contentType, width: null, height: null, durationMs: Math.round(Number(stdout.trim()) * 1000) }],
    };
  } catch (err) {
    if (signal.aborted) throw err;
    return failed(`transcoding failed: ${firstLine(err)}`, media);
  }
}

const AUDIO_FORMATS = {
  aac: { codec: 'aac', extension: '.m4a', contentType: 'audio/mp4', container: ['-movflags', '+faststart'], demuxer: 'mov' },
  mp3: { codec: 'libmp3lame', extension: '.mp3', contentType: 'audio/mpeg', container: [], demuxer: 'mp3' },
  opus: { codec: 'libopus', extension: '.ogg', contentType: 'audio/ogg', container: [], demuxer: 'ogg' },
} as const;

/** The first page of a PDF (pdftoppm, this file only), scaled to the step's width. */
async function documentPreview(
  step: StepOf<'document.preview'>,
  input: string,
  outDir: string,
  limits: MediaLimits,
  signal: AbortSignal,
): Promise<StepOutcome> {
  const page = path.join(outDir, 'page');
  try {
    await run(
      'pdftoppm',
      ['-f', '1', '-l', '1', '-singlefile', '-png', '-scale-to-x', String(step.width), '-scale-to-y', '-1', input, page],
      {
        signal,
        killSignal: 'SIGKILL',
      },
    );
  } catch (err) {
    if (signal.aborted) throw err;
    if ((err as { code?: unknown }).code === 'ENOENT') return skipped('pdftoppm (poppler-utils) is not installed on this worker');
    return failed(`document could not be rendered: ${firstLine(err)}`);
  }
  const file = path.join(outDir, `${step.name}${EXTENSIONS[step.format]}`);
  const info = await sharp(`${page}.png`, { limitInputPixels: limits.maxPixels }).toFormat(step.format).toFile(file);
  return {
    status: 'succeeded',
    reason: null,
    media: { kind: 'document' },
    renditions: [{ name: step.name, file, contentType: FORMATS[step.format], width: info.width, height: info.height, durationMs: null }],
  };
}
