// Types and pure helpers of the downstream steps, shared by workflows and activities.
import { mediaKind as pipelineMediaKind } from '../pipelines/steps';
import type { StoredResponse } from '../upload/types';
import type { UploadGrant } from '../tokens/grant';

export type EventType = 'upload.completed' | 'upload.processed' | 'upload.rejected' | 'upload.deleted';

export interface DownstreamInput {
  uploadId: string;
  tenantId: string;
  storageKey: string;
  contentType: string;
  bytes: number;
  sha256: string;
  fileName: string | null;
  createdAt: string;
  /** Task queue of the transcode activity (heavy work scales apart from the API path). */
  transcodeQueue: string;
  webhookRetry: WebhookRetrySchedule;
  /** Whose upload it is, when made with an upload token: in every event's data. */
  attribution?: { tokenId: string; subject: string | null; metadata: Record<string, string> | null };
  /**
   * Present on children started since pipelines: the run follows the pipeline version the
   * upload was committed with (the records transaction chose it). Children without it run
   * the frozen first revision (workflows/downstream-v1.ts).
   */
  pipelines?: true;
}

/** What a downstream child returns. */
export interface DownstreamResult {
  processing: 'ready' | 'skipped' | 'failed';
  renditions: string[];
  deliveries: Record<string, string>;
  /** Why a step rejected the upload, when one did. */
  rejected?: string;
}

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

/**
 * What re-processing did with one upload (one row per job and upload); `superseded`: the
 * upload serves a newer version of the pipeline, so this one was not switched to.
 */
export interface ReprocessOutcome {
  uploadId: string;
  outcome: 'done' | 'skipped' | 'failed' | 'superseded';
  reason: string | null;
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

/** Where a page of a list (uploads, events) starts: after this creation time (µs since the epoch) and id. */
export interface ListPosition {
  createdMicros: string;
  id: string;
}

export const downstreamSummary = (uploadId: string) => `Downstream of upload ${uploadId}: its pipeline's steps, webhooks`;

/** What the upload's run knows that its downstream run needs (the settings travel in the upload run's input). */
export interface DownstreamRequest {
  tenantId: string;
  contentType: string;
  fileName: string | null;
  downstream: { transcodeQueue: string; webhookRetry: WebhookRetrySchedule };
  grant?: Pick<UploadGrant, 'tokenId' | 'subject' | 'metadata'>;
}

/** Whether a committed answer needs a downstream run: an upload, with a step or an endpoint (the records transaction decided). */
export const needsDownstream = (response: StoredResponse): boolean => Boolean(response.uploadId) && response.downstreamNeeded !== false;

/** The downstream run's input for a committed upload: the request and its stored answer's body. */
export function downstreamInput(request: DownstreamRequest, answerBody: string): DownstreamInput {
  const body = JSON.parse(answerBody) as { uploadId: string; storageKey: string; bytes: number; sha256: string; createdAt: string };
  return {
    uploadId: body.uploadId,
    tenantId: request.tenantId,
    storageKey: body.storageKey,
    contentType: request.contentType,
    bytes: body.bytes,
    sha256: body.sha256,
    fileName: request.fileName,
    createdAt: body.createdAt,
    transcodeQueue: request.downstream.transcodeQueue,
    webhookRetry: request.downstream.webhookRetry,
    pipelines: true,
    ...(request.grant
      ? { attribution: { tokenId: request.grant.tokenId, subject: request.grant.subject, metadata: request.grant.metadata } }
      : {}),
  };
}

/** Why an upload is deleted: its tenant asked, or its retention ran out. */
export type DeletionReason = 'request' | 'retention';

/** The deletion workflow's input (ID `delete/{uploadId}`). */
export interface DeletionInput {
  tenantId: string;
  uploadId: string;
  reason: DeletionReason;
  webhookRetry: WebhookRetrySchedule;
}

/** What a finished deletion reports (the deletion workflow's result). */
export interface DeletionResult {
  uploadId: string;
  deletedAt: string;
  erasedAt: string;
  /** Whether the original's bytes were deleted (false: another upload of the tenant still shares them). */
  objectDeleted: boolean;
  renditionsDeleted: number;
  bytesErased: number;
}

/** Close to the Standard Webhooks schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h). */
export interface WebhookRetrySchedule {
  /** Bound on one delivery attempt (the HTTP timeout plus bookkeeping). */
  attemptTimeoutSeconds: number;
  initialSeconds: number;
  coefficient: number;
  maxIntervalSeconds: number;
  maxAttempts: number;
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

export interface WebhookEvent {
  id: string;
  type: EventType;
  tenantId: string;
  uploadId: string;
  data: Record<string, unknown>;
}

/** What every event (and a pipeline's call) says of the upload. */
export function uploadEventData(input: DownstreamInput): Record<string, unknown> {
  return {
    uploadId: input.uploadId,
    storageKey: input.storageKey,
    bytes: input.bytes,
    sha256: input.sha256,
    contentType: input.contentType,
    fileName: input.fileName,
    createdAt: input.createdAt,
    ...(input.attribution ?? {}),
  };
}

/** Deterministic per upload and event type: every retry and replay sends the same id. */
export function eventId(uploadId: string, type: EventType): string {
  return `evt_${uploadId.replaceAll('-', '')}_${type.split('.')[1]}`;
}

/** Which transcoder of the first revision handles a media type ('other': none, recorded as skipped). */
export function mediaKind(contentType: string): 'image' | 'audio' | 'video' | 'other' {
  const kind = pipelineMediaKind(contentType);
  return kind === 'document' ? 'other' : kind;
}
