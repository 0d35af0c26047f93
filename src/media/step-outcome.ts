// What running one media step produces and hands over as it goes (the transcoders and HLS
// share these; the activity stores and records them).

export interface ProducedRendition {
  name: string;
  file: string;
  /** Files it refers to (an HLS playlist's segments), stored before it under `{name}/`. */
  companions?: { file: string; contentType: string }[];
  contentType: string;
  width: number | null;
  height: number | null;
  durationMs: number | null;
}

/**
 * What a long step hands over as it goes: `keep` stores a finished rendition at once, and
 * `kept` names the ones an earlier attempt already stored (a retry skips them).
 */
export interface StepProgress {
  kept: ReadonlySet<string>;
  keep: (r: ProducedRendition) => Promise<void>;
}

export interface StepOutcome {
  status: 'succeeded' | 'skipped' | 'failed';
  reason: string | null;
  /** What the step learnt of the file (dimensions, duration, codecs), when it looked. */
  media: Record<string, unknown> | null;
  renditions: ProducedRendition[];
}
