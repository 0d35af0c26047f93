// An import's run: the upload workflow for a key whose file Oncely reads itself (POST
// /v1/imports, a batch's item, Uppy's URL plugin). The read replaces waiting for an offered
// copy; a deletion while it reads cancels it (`cancelImport`), and a refusal is the key's
// answer. Part of the upload workflow's current revision: a change is a new revision.
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  startChild,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { StagedCopy, StoredResponse } from '../../src/upload/types';
import type { UploadWorkflowInput } from '../../src/temporal/definitions';
import { workflowIds } from '../../src/temporal/names';
import { stepLabels } from '../../src/temporal/step-labels';
import { isImportRefusal, type ImportRefusal } from '../../src/imports/failures';
import type { Activities } from '../../activities';
import { discardCopy, localStep, runUpload, setPhase, type Revision, type RunRecords } from '../upload-offers';
import { importErasureWorkflow } from '../deletion';
import { cancelImportUpdate, importPatches } from '../../src/imports/contract';

const { commitUpload } = localStep(stepLabels.commitUpload);
const { failImport } = localStep(stepLabels.failImport);

/** The run of an import's key: its read instead of an offered copy; a failed run marks its import failed. */
export async function runImport(input: UploadWorkflowInput, revision: Revision): Promise<StoredResponse> {
  const read = cancellableRead();
  try {
    return await runUpload(input, { ...revision, fetch: (run) => fetchImported(run, read) });
  } catch (err) {
    await failImport(input.import!.uploadId);
    throw err;
  }
}

/** An import's read, which a deletion before it ends cancels (`cancelImport`). */
interface CancellableRead {
  scope: CancellationScope;
  /** A deletion asked for it while the file was still being read. */
  readonly canceled: boolean;
  /** The read has ended: from now on a deletion waits for the commit. */
  ended(): void;
}

function cancellableRead(): CancellableRead {
  const scope = new CancellationScope();
  let canceled = false;
  let ended = false;
  setHandler(cancelImportUpdate, () => {
    if (ended) return 'committing';
    canceled = true;
    scope.cancel();
    return 'canceling';
  });
  return {
    scope,
    get canceled() {
      return canceled;
    },
    ended: () => (ended = true),
  };
}

const CANCELED = 'The import was canceled: its upload was deleted before it was committed.';

/**
 * An import's read, retried (each attempt resuming) up to its bound; a refusal (what the
 * origin answered, a file past its limits, a deletion while it read) is recorded as the
 * key's answer in one commit.
 */
async function fetchImported(
  run: RunRecords,
  read: CancellableRead,
): Promise<{ copy: StagedCopy; request: UploadWorkflowInput } | StoredResponse> {
  const { request } = run;
  const spec = request.import!;
  const { fetchImport } = proxyActivities<Activities>({
    // A canceled read is waited for: its parts are gone (or its object is discarded below) before the refusal commits.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    // The read's own bound, plus hashing a resumed file and completing its parts.
    startToCloseTimeout: (spec.attemptSeconds + 300) * 1000,
    heartbeatTimeout: spec.heartbeatSeconds * 1000,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: spec.maxAttempts },
    summary: stepLabels.fetchImport,
  });
  let got: Awaited<ReturnType<typeof fetchImport>> | undefined;
  try {
    got = await read.scope.run(() =>
      fetchImport({
        spec,
        fingerprint: request.fingerprint,
        contentType: request.contentType,
        sha256: request.declaredSha256,
        ...(request.grant ? { grant: request.grant } : {}),
      }),
    );
  } catch (err) {
    if (!read.canceled) {
      read.ended();
      return await rejectImport(run, importRefusal(err));
    }
  }
  read.ended();
  if (got && !read.canceled) return { copy: got.copy, request: { ...request, contentType: got.contentType } };
  // Canceled, whether the read finished as the deletion arrived or failed after it: its parts
  // and any still begun for its key are aborted, and an object it completed (always at
  // spec.storageKey) is not kept.
  await discardCopy(spec.storageKey, { parts: true });
  const response = await rejectImport(run, { code: 'import_canceled', detail: CANCELED });
  // The run's history holds the import's URL, headers and file name: sealed for good once it
  // has ended, by a run of its own (this one's keys seal its own completion).
  if (patched(importPatches.eraseCanceledImport)) await startImportErasure(spec.uploadId);
  return response;
}

async function startImportErasure(uploadId: string): Promise<void> {
  try {
    await startChild(importErasureWorkflow, {
      workflowId: workflowIds.deletion(uploadId),
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Erase canceled import ${uploadId}`,
      args: [{ uploadId, uploadWorkflowId: workflowInfo().workflowId }],
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

async function rejectImport(run: RunRecords, rejection: { code: ImportRefusal; detail: string; extra?: Record<string, unknown> }) {
  const response = await commitUpload({ ...run, rejection });
  setPhase('rejected');
  return response;
}

/** What a failed read records: its own refusal, a timeout, or (anything else, retries spent) that the file could not be read. */
function importRefusal(err: unknown): { code: ImportRefusal; detail: string; extra?: Record<string, unknown> } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && isImportRefusal(cause.type)) {
    const extra = cause.details?.[0] as Record<string, unknown> | undefined;
    return { code: cause.type, detail: cause.message, ...(extra && Object.keys(extra).length ? { extra } : {}) };
  }
  if (cause instanceof TimeoutFailure) return { code: 'import_timeout', detail: 'The origin did not send the file in time.' };
  return { code: 'import_failed', detail: 'The file could not be read from its origin.' };
}
