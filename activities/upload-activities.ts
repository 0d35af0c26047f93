// Side effects of the upload workflow. Built by a factory so pools and stores are
// injected (never module globals) and every activity is safe to retry.
import { ByteQuotaExceeded } from '../src/db/queries/byte-quotas';
import { quotaRefusal } from '../src/upload/byte-quota';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { downstreamInput, downstreamSummary, needsDownstream, type DownstreamRequest } from '../src/downstream/types';
import type { Pool } from '../src/db/pool';
import {
  commitUploadRecords,
  findCommittedAnswer,
  KeyHeldElsewhere,
  TokenExhausted,
  objectInUse,
  SharedObjectReleased,
  PipelineUnknown,
} from '../src/db/queries/records';
import { builtinPipeline, pipelineChoice, type DefaultPresets } from '../src/pipelines/steps';
import { ANY_AGE, type ObjectStore } from '../src/storage/store';
import { createdAnswer, rejectionAnswer } from '../src/upload/stored-answers';
import { metrics } from '../src/metrics';
import { isTenantClosed } from '../src/errors';
import { failureTypes, workflowIds, workflowTypes } from '../src/temporal/names';
import { activeTraceparent } from '../src/telemetry/context';
import type { CommitObjectInput, CommitRecordsInput, CommitUploadInput, StoredResponse, UploadRequest } from './types';

export interface UploadActivityDeps {
  pool: Pool;
  store: ObjectStore;
  ttlSeconds: number;
  /** The built-in default pipeline's sizes. */
  presets: DefaultPresets;
}

export function createUploadActivities({ pool, store, ttlSeconds, presets }: UploadActivityDeps) {
  const builtin = builtinPipeline(presets);
  const activities = {
    /**
     * Makes the accepted attempt's object the upload's object. The copy was written at its
     * final key by the API, so committing is verifying it is there, whole: no byte copy.
     */
    async commitObject({ copy }: CommitObjectInput): Promise<void> {
      const head = await store.head(copy.storageKey);
      if (!head) throw ApplicationFailure.nonRetryable(`staged copy ${copy.storageKey} is missing`, failureTypes.stagedCopyMissing);
      if (head.bytes !== copy.bytes) {
        throw ApplicationFailure.nonRetryable(
          `staged copy has ${head.bytes} bytes, expected ${copy.bytes}`,
          failureTypes.stagedCopyCorrupt,
        );
      }
    },

    /**
     * The whole commit as one step (workflow revision 4): the accepted copy verified, the
     * records transaction, then the downstream run started when the transaction says one is
     * needed. A retry after the records committed finds them (first commit wins) and finds
     * the downstream run started (its ID is never reused), so each happens once.
     */
    async commitUpload(input: CommitUploadInput): Promise<StoredResponse> {
      if (input.copy && !input.rejection) await activities.commitObject({ copy: input.copy });
      const response = await activities.commitRecords(input);
      if (!input.rejection && needsDownstream(response)) await activities.startDownstream(input.request, response);
      return response;
    },

    /**
     * Starts the upload's downstream run (`downstream/{uploadId}`) on the workflow's task
     * queue, once: an ID already used means it was started.
     */
    async startDownstream(request: DownstreamRequest, response: StoredResponse): Promise<void> {
      const ctx = Context.current();
      const args = downstreamInput(request, response.body);
      try {
        await ctx.client.workflow.start(workflowTypes.downstream, {
          taskQueue: ctx.info.taskQueue,
          workflowId: workflowIds.downstream(args.uploadId),
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          staticSummary: downstreamSummary(args.uploadId),
          args: [args],
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      }
    },

    /**
     * Upload row + key row with the exact response, in one transaction; retry-safe. A key
     * held by another route or request fails with the non-retryable `idempotency_key_reuse`
     * (nothing written).
     */
    async commitRecords(input: CommitRecordsInput): Promise<StoredResponse> {
      const { request, copy, rejection } = input;
      const stored = await commitUploadRecords(pool, {
        tenantId: request.tenantId,
        key: request.idempotencyKey,
        fingerprint: request.fingerprint,
        workflowId: input.workflowId,
        startedAt: new Date(input.startedAtMs),
        ttlSeconds,
        pipeline: pipelineChoice(request.pipeline, builtin),
        ...(request.import ? { importId: request.import.uploadId } : {}),
        traceparent: activeTraceparent(),
        upload:
          copy && !rejection
            ? {
                id: input.uploadId,
                tenant_id: request.tenantId,
                idempotency_key: request.idempotencyKey,
                workflow_id: input.workflowId,
                storage_key: copy.storageKey,
                bytes: copy.bytes,
                sha256: copy.sha256,
                content_type: request.contentType,
                file_name: request.fileName,
                expires_at: request.expiresAt ?? null,
                token_id: request.grant?.tokenId ?? null,
                arrival: request.mode ?? null,
                subject: request.grant?.subject ?? null,
                token_metadata: request.grant?.metadata ?? null,
                // Runs started before labels were carried: the token's metadata was the upload's.
                metadata: request.labels?.metadata ?? request.grant?.metadata ?? null,
                tags: request.labels?.tags ?? [],
              }
            : undefined,
        response: (createdAt, storageKey) =>
          rejection
            ? rejectionAnswer(rejection.code, rejection.detail, rejection.extra)
            : createdAnswer({
                uploadId: input.uploadId,
                storageKey: storageKey ?? copy!.storageKey,
                bytes: copy!.bytes,
                sha256: copy!.sha256,
                contentType: request.contentType,
                fileName: request.fileName,
                createdAt,
              }),
      }).catch((err: unknown) => {
        if (err instanceof KeyHeldElsewhere) throw ApplicationFailure.nonRetryable(err.message, failureTypes.keyReuse);
        if (err instanceof TokenExhausted) throw ApplicationFailure.nonRetryable(err.message, failureTypes.tokenExhausted);
        if (err instanceof ByteQuotaExceeded)
          throw ApplicationFailure.nonRetryable(err.message, failureTypes.byteQuotaExceeded, quotaRefusal(err));
        if (isTenantClosed(err)) throw ApplicationFailure.nonRetryable('the tenant was deleted', failureTypes.tenantClosed);
        // The copy is gone with it: the run fails (503 upload_failed) and a retry sends the bytes.
        if (err instanceof PipelineUnknown) throw ApplicationFailure.nonRetryable(err.message, failureTypes.pipelineUnknown);
        if (err instanceof SharedObjectReleased) throw ApplicationFailure.nonRetryable(err.message, failureTypes.stagedCopyMissing);
        throw err;
      });
      metrics.uploadsCommitted.inc({ result: rejection ? 'rejected' : 'created' });
      return stored;
    },

    /** The answer already committed for this request (by a lost workflow task), or null. */
    async findCommittedAnswer(request: UploadRequest): Promise<StoredResponse | null> {
      return (await findCommittedAnswer(pool, request.tenantId, request.idempotencyKey, request.fingerprint)) ?? null;
    },

    /**
     * Removes an attempt's object that did not become the upload (retry-safe); never bytes an
     * upload names (dedupe). `parts`: also any multipart upload begun for its key (a canceled
     * import's read, whose own cleanup may not have run); other copies were complete.
     */
    async discardCopy(storageKey: string, o: { parts?: boolean } = {}): Promise<void> {
      if (await objectInUse(pool, storageKey)) return;
      await store.delete(storageKey);
      if (o.parts) await store.abortStaleMultipartUploads(ANY_AGE, storageKey);
    },
  };
  return activities;
}

export type UploadActivities = ReturnType<typeof createUploadActivities>;
