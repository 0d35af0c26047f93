// Pure functions over pipeline declarations, shared by the API, workflows and activities
// (workflows import this module: no runtime imports beyond types).
import type { PipelineStep, ValidationHookSpec } from './catalogue';
import type { StepResult } from './step-results';

/** The steps a downstream child runs as activities (the webhook step is the child's own announcements). */
export type ProcessingStep = Exclude<PipelineStep, { type: 'webhook' }>;

/** A pipeline as one version of it ran (or will run): what an upload records. */
export interface PipelineVersion {
  name: string;
  version: number;
  steps: PipelineStep[];
  /** The hook asked before an upload naming it is read. */
  validate?: ValidationHookSpec | null;
}

/** The pipeline an upload runs when it names none and its tenant declared no `default`. */
export const DEFAULT_PIPELINE = 'default';

/** The types the image step reads (sharp's decoders); others skip it. */
export const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/avif', 'image/tiff']);

/** Which kind of file a media type is, for choosing the steps that apply to it. */
export function mediaKind(contentType: string): 'image' | 'audio' | 'video' | 'document' | 'other' {
  if (IMAGE_TYPES.has(contentType)) return 'image';
  if (contentType.startsWith('audio/')) return 'audio';
  if (contentType.startsWith('video/')) return 'video';
  if (contentType === 'application/pdf') return 'document';
  return 'other';
}

/** Whether a processing step has work to do on a file of this type (webhook is no processing step). */
export function stepApplies(step: PipelineStep, contentType: string): boolean {
  const kind = mediaKind(contentType);
  switch (step.type) {
    case 'image.variants':
      return kind === 'image';
    case 'video.poster':
    case 'video.hls':
      return kind === 'video';
    case 'audio.transcode':
      return kind === 'audio';
    case 'document.preview':
      return kind === 'document';
    case 'scan.clamav':
    case 'http.call':
      return true;
    case 'webhook':
      return false;
  }
}

/** Whether the step must pass before the upload is available (its content served, upload.completed sent). */
export function isGate(step: PipelineStep): boolean {
  return (step.type === 'scan.clamav' || step.type === 'http.call') && step.gate;
}

/** Whether an upload of this type starts held: some gate of the pipeline applies to it. */
export function startsGated(p: PipelineVersion, contentType: string): boolean {
  return p.steps.some((s) => isGate(s) && stepApplies(s, contentType));
}

/** Whether the version announces its uploads (has a webhook step). */
export function announces(p: PipelineVersion): boolean {
  return p.steps.some((s) => s.type === 'webhook');
}

/** What the commit needs to know of pipelines (src/db/queries/records.ts records, never decides). */
export function pipelineChoice(requested: string | undefined, builtin: PipelineVersion) {
  return { ...(requested ? { requested } : {}), defaultName: DEFAULT_PIPELINE, builtin, startsGated, idleReason, announces };
}

/** Why nothing runs for this file, or null when some step does. */
export function idleReason(p: PipelineVersion, contentType: string): string | null {
  if (p.steps.some((s) => stepApplies(s, contentType))) return null;
  return `no step applies to ${contentType} (pipeline ${p.name}, version ${p.version})`;
}

/** The sizes the built-in default is made of (THUMBNAIL_SIZE, DISPLAY_SIZE, POSTER_WIDTH, AUDIO_BITRATE). */
export interface DefaultPresets {
  thumbnailSize: number;
  displaySize: number;
  posterWidth: number;
  audioBitrate: string;
}

/**
 * The built-in default (version 0): a WebP thumbnail and display size of a picture, a
 * poster of a video, an AAC copy of a sound, both webhook events. A tenant replaces it by
 * declaring a pipeline named `default`.
 */
export function builtinPipeline(p: DefaultPresets): PipelineVersion {
  const box = (name: string, size: number) => ({ name, width: size, height: size, fit: 'inside', format: 'webp', quality: 82 }) as const;
  return {
    name: DEFAULT_PIPELINE,
    version: 0,
    steps: [
      {
        type: 'image.variants',
        metadata: 'strip',
        autoOrient: true,
        variants: [box('thumbnail', p.thumbnailSize), box('display', p.displaySize)],
      },
      { type: 'video.poster', name: 'poster', width: p.posterWidth },
      { type: 'audio.transcode', name: 'audio', format: 'aac', bitrate: p.audioBitrate },
      { type: 'webhook' },
    ],
  };
}

/** The upload's processing outcome from its steps' results: failed if one failed, ready if one made something. */
export function processingOutcome(
  results: readonly Pick<StepResult, 'status' | 'reason' | 'media'>[],
  idle: string | null,
): { status: 'ready' | 'skipped' | 'failed'; reason: string | null; media: Record<string, unknown> | null } {
  const media = results.find((r) => r.media)?.media ?? null;
  const failure = results.find((r) => r.status === 'failed');
  if (failure) return { status: 'failed', reason: failure.reason, media };
  if (results.some((r) => r.status === 'succeeded')) return { status: 'ready', reason: null, media };
  return { status: 'skipped', reason: results.find((r) => r.reason)?.reason ?? idle, media };
}
