// What a pipeline's steps end with, as the downstream run records them: results, renditions,
// scan verdicts, a tenant's decision, re-processing outcomes. Types and pure helpers only:
// workflows import this file.

/** One step of the pipeline version an upload runs (the step's index in the declaration). */
export interface StepRef {
  pipeline: string;
  version: number;
  index: number;
}

/** What one processing step ended with; its renditions are stored and recorded. */
export interface StepResult {
  /**
   * `rejected`: the upload may not stay (an infected file under `block`, a tenant's 4xx);
   * `waiting`: an async http.call the tenant answered 202 (its decision comes by callback).
   */
  status: 'succeeded' | 'skipped' | 'failed' | 'rejected' | 'waiting';
  reason: string | null;
  media: Record<string, unknown> | null;
  renditions: RenditionSummary[];
  /** A scan's verdict. */
  scan?: ScanVerdict;
  /** What the tenant answered an http.call with (its JSON `data`). */
  data?: unknown;
}

/** The Idempotency-Key (and webhook-id) of an http.call step's calls: the same on every retry. */
export function stepCallId(uploadId: string, ref: StepRef): string {
  return `step_${uploadId.replaceAll('-', '')}_${ref.pipeline}_v${ref.version}_${ref.index}`;
}

/** The decision a tenant sends for an async http.call step (POST /v1/uploads/{id}/steps/{step}/complete). */
export interface StepDecision {
  step: number;
  outcome: 'accept' | 'reject';
  message: string | null;
  data: unknown;
}

/** A step's result once decided (an async call waiting for the tenant is not yet one). */
export type SettledStep = StepResult & { status: Exclude<StepResult['status'], 'waiting'> };

/** What a virus scan found; `not_scanned` is its own verdict, never taken for clean. */
export interface ScanVerdict {
  verdict: 'clean' | 'infected' | 'not_scanned';
  /** Signature names, when infected. */
  viruses: string[];
  /** Why it was not scanned. */
  reason: string | null;
}

export interface RenditionSummary {
  name: string;
  storageKey: string;
  contentType: string;
  bytes: number;
  width: number | null;
  height: number | null;
  durationMs: number | null;
}

export interface TranscodeResult {
  status: 'ready' | 'skipped' | 'failed';
  reason: string | null;
  media: Record<string, unknown> | null;
  renditions: RenditionSummary[];
}

/**
 * What re-processing did with one upload (one row per job and upload); `superseded`: the
 * upload serves a newer version of the pipeline, so this one was not switched to.
 */
export interface ReprocessOutcome {
  uploadId: string;
  outcome: 'done' | 'skipped' | 'failed' | 'superseded';
  reason: string | null;
}
