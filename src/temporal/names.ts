// Names shared by the API, the worker and workflow code: the house's runs'; a wing's are in its
// own contract (src/<wing>/contract.ts). Pure: workflows import it.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const DEFAULT_TASK_QUEUES = { uploads: 'uploads', transcode: 'transcode' } as const;

export const searchAttributes = {
  tenant: defineSearchAttributeKey('OncelyTenant', SearchAttributeType.KEYWORD),
  idempotencyKey: defineSearchAttributeKey('OncelyIdempotencyKey', SearchAttributeType.KEYWORD),
  phase: defineSearchAttributeKey('OncelyPhase', SearchAttributeType.KEYWORD),
  contentType: defineSearchAttributeKey('OncelyContentType', SearchAttributeType.KEYWORD),
  bytes: defineSearchAttributeKey('OncelyBytes', SearchAttributeType.INT),
  /** An upload token's subject (the app's end user), when the upload was made with one. */
  subject: defineSearchAttributeKey('OncelySubject', SearchAttributeType.KEYWORD),
} as const;

/** `--search-attribute` flags for the dev server (tools/temporal-dev), derived from the keys above. */
export function searchAttributeFlags(): string[] {
  const devType = { KEYWORD: 'Keyword', INT: 'Int' } as const;
  return Object.values(searchAttributes).flatMap((k) => ['--search-attribute', `${k.name}=${devType[k.type as keyof typeof devType]}`]);
}

export const updates = {
  offerCopy: 'offerCopy',
  offerCopyForAnswer: 'offerCopyForAnswer',
  completeStep: 'completeStep',
  controlBatch: 'controlBatch',
  restoreUpload: 'restoreUpload',
  purgeUpload: 'purgeUpload',
} as const;

export const queries = {
  /** A recovery's counts so far. */
  recoveryProgress: 'progress',
} as const;

/** Every workflow type the worker registers (the names its workflow functions are exported under). */
export const workflowTypes = {
  upload: 'uploadWorkflow',
  downstream: 'downstreamWorkflow',
  deletion: 'deletionWorkflow',
  importErasure: 'importErasureWorkflow',
  announceEvent: 'announceEventWorkflow',
  redelivery: 'redeliveryWorkflow',
  recovery: 'recoveryWorkflow',
  tenantDeletion: 'tenantDeletionWorkflow',
  housekeeping: 'housekeepingWorkflow',
} as const;

/**
 * Workflow IDs, derived from what they are about so a repeat attaches to the same run. An
 * upload's is `uploadWorkflowId` (src/temporal/ids.ts: it hashes a long key, which workflow
 * code cannot); these are pure, so workflows build them too.
 */
export const workflowIds = {
  downstream: (uploadId: string) => `downstream/${uploadId}`,
  deletion: (uploadId: string) => `delete/${uploadId}`,
  /** An event's announcement to every endpoint, in a run of its own (its deliveries' retries hold up nothing). */
  announce: (eventId: string) => `announce/${eventId}`,
  redelivery: (eventId: string, requestId: string) => `redeliver/${eventId}/${requestId}`,
  recovery: (endpointId: string, since: string, until: string) => `recover/${endpointId}/${since}/${until}`,
  housekeeping: (taskQueue: string, task: string) => `housekeeping/${taskQueue}/${task}`,
  /** One per tenant: a repeated DELETE attaches to it or finds it finished. */
  tenantDeletion: (tenantId: string) => `tenant-delete/${tenantId}`,
} as const;

/** Workflow patches (`patched(id)`): a changed branch that runs recorded before it replay as they ran. */
export const patches = {
  /** The upload workflow discards a copy its commit refused (key held elsewhere, token used up) and marks the run rejected. */
  refusedCopyDiscarded: 'refused-copy-discarded',
  /** A deletion announces upload.deleted in a run of its own and answers once erased, whatever the receivers do. */
  deletionAnnouncesApart: 'deletion-announces-apart',
} as const;

/** Failure types that cross the activity / workflow / API boundary. */
export const failureTypes = {
  /** The key is held by another route's request or another upload request: answered 422. */
  keyReuse: 'idempotency_key_reuse',
  /** The upload token's uploads are used up (counted at the commit): answered 403, nothing recorded. */
  tokenExhausted: 'token_exhausted',
  /** A byte quota its reservation did not cover was reached at the commit: answered 413, nothing recorded. */
  byteQuotaExceeded: 'byte_quota_exceeded',
  /** The tenant was deleted before the commit (migration 027 refused its rows): the run fails, nothing recorded. */
  tenantClosed: 'tenant_deleted',
  /** A step decision for a step that is not an undecided async http.call of the upload: answered 409. */
  stepNotWaiting: 'step_not_waiting',
  /** No attempt delivered a whole body before the upload workflow gave up. */
  abandoned: 'abandoned',
  /** The upload could not be completed (its commit failed for good). */
  uploadFailed: 'upload_failed',
  /** The staged copy an upload commits is gone or not what was offered: retrying cannot help. */
  stagedCopyMissing: 'staged_copy_missing',
  stagedCopyCorrupt: 'staged_copy_corrupt',
  /** The upload names a pipeline the tenant has not declared. */
  pipelineUnknown: 'pipeline_unknown',
  /** A moved object's bytes are not the ones recorded (a storage migration does not switch to them). */
  objectMismatch: 'object_mismatch',
  /** The object a step reads is gone. */
  objectMissing: 'object_missing',
  /** A rendition step of a re-run did not succeed. */
  stepFailed: 'step_failed',
  /** A deletion of an upload the tenant does not have. */
  notFound: 'not_found',
  /** The tenant's endpoint (validation hook, http.call) answered an error. */
  tenantError: 'tenant_error',
  tenantUnreachable: 'tenant_unreachable',
  scannerUnavailable: 'scanner_unavailable',
  deliveryInFlight: 'delivery_in_flight',
  webhookUnreachable: 'webhook_unreachable',
  webhookRejected: 'webhook_rejected',
  /** The upload was deleted before its variant was recorded: answered 410. */
  uploadDeleted: 'upload_deleted',
  /** The upload is under a legal hold: its deletion ends without erasing anything (answered 409). */
  legalHold: 'legal_hold',
  /** A restore asked once the deletion's window had closed: answered 410. */
  windowClosed: 'restore_window_closed',
} as const;
