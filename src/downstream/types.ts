// Types and pure helpers of the downstream steps, shared by workflows and activities.
import { mediaKind as pipelineMediaKind } from '../pipelines/steps';
import type { StoredResponse, UploadLabels } from '../upload/types';
import type { UploadGrant } from '../tokens/grant';

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
  /** Its metadata and tags as uploaded: in every event's data. */
  labels?: UploadLabels;
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

export const downstreamSummary = (uploadId: string) => `Downstream of upload ${uploadId}: its pipeline's steps, webhooks`;

/** What the upload's run knows that its downstream run needs (the settings travel in the upload run's input). */
export interface DownstreamRequest {
  tenantId: string;
  contentType: string;
  fileName: string | null;
  downstream: { transcodeQueue: string; webhookRetry: WebhookRetrySchedule };
  grant?: Pick<UploadGrant, 'tokenId' | 'subject' | 'metadata'>;
  labels?: UploadLabels;
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
    ...(request.labels ? { labels: request.labels } : {}),
    ...(request.grant
      ? { attribution: { tokenId: request.grant.tokenId, subject: request.grant.subject, metadata: request.grant.metadata } }
      : {}),
  };
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

/** Which transcoder of the first revision handles a media type ('other': none, recorded as skipped). */
export function mediaKind(contentType: string): 'image' | 'audio' | 'video' | 'other' {
  const kind = pipelineMediaKind(contentType);
  return kind === 'document' ? 'other' : kind;
}
