// The contract between the workflows and their callers (as the Temporal samples' shared.ts):
// each workflow's input and result, the upload's revision, and the update and query
// definitions. Type names, IDs and failure types are in ./names; a wing's runs' are in its own
// contract (src/<wing>/contract.ts). Callers (the API, the services, the activities) import
// this module, never workflow code; workflow code imports it too, so it stays pure (the
// workflow lint applies to it).
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { OfferOutcome, StagedCopy, StoredResponse, UploadRequest } from '../upload/types';
import type { StepDecision } from '../pipelines/step-results';
import type { WebhookRetrySchedule } from '../downstream/types';
import type { WebhookEvent } from '../downstream/events';
import type { ListPosition } from '../db/queries/keyset';
import { queries, updates } from './names';

export interface UploadWorkflowInput extends UploadRequest {
  receiveTimeoutSeconds: number;
  /** Settings the downstream child needs. */
  downstream: { transcodeQueue: string; webhookRetry: WebhookRetrySchedule };
  /**
   * Started by a resumable (tus) session's creation: the run waits for the session's copy as
   * long as the session is not idle for `idleSeconds`, and ends it (aborted, key freed) then.
   */
  resumable?: { sessionId: string; idleSeconds: number };
  /** Started by an import (POST /v1/imports): the run reads the file from its origin instead of waiting for an offered copy. */
  import?: ImportSpec;
  /**
   * The workflow revision the run was started for (see UPLOAD_WORKFLOW_REVISION). The code
   * serves revisions 3 to 5: 3 and 4 differ in how the commit is recorded, 5 in which
   * declared types are checked against the bytes.
   */
  revision?: number;
  /**
   * How often a run still waiting for its copy asks whether a lost
   * workflow task already committed its records (see findCommittedAnswer); default 60.
   */
  lostCommitProbeSeconds?: number;
}

/** What the API decided about an import's read; the run hands it to its fetch (activities/imports/import-activities.ts). */
export interface ImportSpec {
  /** The upload's id, known before the commit (the 202's Location). */
  uploadId: string;
  url: string;
  /** The tenant's headers for the origin, sealed with the secrets box (never in clear in a payload). */
  sealedHeaders?: string;
  /** An S3 source's access, sealed likewise: each attempt signs its read of `url` with it. */
  sealedS3Access?: string;
  storageKey: string;
  attemptId: string;
  /** The smallest of the server's, the tenant's and the token's size limits. */
  maxBytes: number;
  /** The only hosts any hop may name (the upload token's list); absent: any. */
  hosts?: string[];
  /** Whether the request named the media type; otherwise the origin's (else the sniffed one) is recorded. */
  typeDeclared: boolean;
  heartbeatSeconds: number;
  /** Longest one attempt at the read may take, and how many attempts (each resuming) there are. */
  attemptSeconds: number;
  maxAttempts: number;
}

/**
 * The revision new runs are started with. Revision 5: TIFF, AVIF and HEIC declarations are
 * checked against the file's first bytes too (revision 4 and older runs check PNG, JPEG,
 * GIF, WebP and PDF only, as they did when they ran). Revision 4: the commit is one local activity
 * (`commitUpload`: the copy verified, the records, the downstream run started as a workflow
 * of its own) and a committed run records no `completed` phase, so every committed upload is
 * one workflow task and 8 history events. Revision 3: a run adopts an answer a lost workflow
 * task already committed — while it waits for a copy (asked every `lostCommitProbeSeconds`)
 * and before it would fail — instead of waiting for a copy that never comes, or failing on
 * one the API has since deleted, with no downstream. Revisions 1 and 2 are no longer
 * replayed: docs/ARCHITECTURE.md ("Workflow revisions") says why and how to upgrade.
 */
export const UPLOAD_WORKFLOW_REVISION = 5;

/** The upload workflow's signature, for typed handles (`getHandle<UploadWorkflow>`) without importing workflow code. */
export type UploadWorkflow = (input: UploadWorkflowInput) => Promise<StoredResponse>;

export const offerCopyUpdate = defineUpdate<OfferOutcome, [StagedCopy]>(updates.offerCopy);

/** What `offerCopyForAnswer` returns: whether this copy was taken, and the key's committed answer. */
export interface OfferAnswer {
  offer: OfferOutcome;
  response: StoredResponse;
}

/**
 * The offer that answers (early return): the handler returns once the records transaction
 * has committed, so the API gets the answer with the offer and never reads the run's
 * history for its result. Fails with `idempotency_key_reuse` or `upload_failed` when the run
 * does. Registered on every run (a handler is no command), so runs of any revision take it.
 */
export const offerCopyForAnswerUpdate = defineUpdate<OfferAnswer, [StagedCopy]>(updates.offerCopyForAnswer);

/**
 * A tenant's decision on an async http.call step of an upload's downstream child. Refused
 * (`step_not_waiting`) before it is recorded unless the step is an async http.call of the
 * upload's pipeline not yet decided otherwise; the same decision again is accepted.
 */
export const completeStepUpdate = defineUpdate<{ step: number; outcome: StepDecision['outcome'] }, [StepDecision]>(updates.completeStep);

export type BatchControl = 'pause' | 'resume' | 'cancel';
/** Pause, resume or cancel a job (an import batch, a storage migration); returns once the job has recorded it. */
export const controlBatchUpdate = defineUpdate<void, [BatchControl]>(updates.controlBatch);

/** Why an upload is deleted: its tenant asked, its retention ran out, or (`tenant`) its tenant's deletion erases it. */
export type DeletionReason = 'request' | 'retention' | 'tenant';

/**
 * An import canceled while its file was read (ID `delete/{uploadId}`; no upload was made):
 * once its run has ended, the data keys its payloads are sealed under are destroyed.
 */
export interface ImportErasureInput {
  uploadId: string;
  uploadWorkflowId: string;
}

/** The deletion workflow's input (ID `delete/{uploadId}`). */
export interface DeletionInput {
  tenantId: string;
  uploadId: string;
  reason: DeletionReason;
  webhookRetry: WebhookRetrySchedule;
  /** The tenant's restore window (deleteGraceHours) in seconds; absent or 0: erased at once. */
  graceSeconds?: number;
}

/** A deletion taken back within its window: the upload is as it was (the deletion workflow's result then). */
export interface RestoredUpload {
  uploadId: string;
  restoredAt: string;
}

/** Restores the upload while its deletion's window is open (rejected once it has closed). */
export const restoreUploadUpdate = defineUpdate<RestoredUpload, []>(updates.restoreUpload);
/** Ends the window now: the erasure starts at once. */
export const purgeUploadUpdate = defineUpdate<void, []>(updates.purgeUpload);

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

/** The tenant deletion's input (ID `tenant-delete/{tenantId}`). */
export interface TenantDeletionInput {
  tenantId: string;
  webhookRetry: WebhookRetrySchedule;
}

/** What a finished tenant deletion reports. */
export interface TenantDeletionResult {
  tenantId: string;
  closedAt: string;
  erasedAt: string;
  uploadsErased: number;
  sessionsEnded: number;
  dataKeysDestroyed: number;
  objectsDeleted: number;
}

/** The scheduled housekeeping tasks (one workflow run per task and firing). */
export type HousekeepingTask = 'expire-keys' | 'sweep-staging' | 'abort-multipart' | 'expire-uploads' | 'expire-events';

/** One event announced to every endpoint of its tenant (ID `announce/{eventId}`). */
export interface AnnounceEventInput {
  tenantId: string;
  event: WebhookEvent;
  timestamp: string;
  webhookRetry: WebhookRetrySchedule;
}

/** One recorded event sent again to named endpoints (ID `redeliver/{eventId}/{requestId}`). */
export interface RedeliveryInput {
  tenantId: string;
  eventId: string;
  endpointIds: string[];
}

/** A recovery's counts so far (its result, and the answer to `recoveryProgressQuery`). */
export interface RecoveryProgress {
  found: number;
  delivered: number;
  failed: number;
  done: boolean;
}

/** Every event of a window an endpoint did not take, sent again (ID `recover/{endpointId}/{since}/{until}`). */
export interface RecoveryInput {
  tenantId: string;
  endpointId: string;
  since: string;
  until: string;
  /** Carried across continue-as-new: where the next page starts, and the counts so far. */
  after?: ListPosition | null;
  progress?: RecoveryProgress;
}

export const recoveryProgressQuery = defineQuery<RecoveryProgress>(queries.recoveryProgress);
