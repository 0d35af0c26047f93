// The upload workflow: one execution per (tenant, Idempotency-Key). It waits for the first
// complete copy of the body offered by any attempt, commits the object, writes the records
// in one transaction and returns the response every later request replays.
import type { StagedCopy, StoredResponse } from '../src/upload/types';
import { CHECKED_TYPES, CHECKED_TYPES_BEFORE_R5, contentTypeMismatch } from '../src/upload/sniff';
import { needsDownstream } from '../src/downstream/types';
import type { UploadWorkflowInput } from '../src/temporal/definitions';
import { discardCopy, localStep, refusable, runUpload, setPhase, type ArrivalRun, type Revision, type RunRecords } from './upload-offers';
import { uploadWorkflowR3 } from './upload-r3';
import { stepLabels } from '../src/temporal/step-labels';

const { commitUpload } = localStep(stepLabels.commitUpload);
const { startDownstream } = localStep(stepLabels.startDownstream);

/** The runs of keys whose copy is not offered but read by Oncely (an import's: the import wing's), by the input field that marks them. */
export interface ArrivalRuns {
  import: ArrivalRun;
}

/**
 * The upload workflow, given the arrival runs (the bundle's entry, workflows/index.ts, hands
 * over the wings'). Revisions 4 and 5 commit in one local activity that also starts the
 * downstream run (a workflow of its own, not a child: the parent needs no second task to learn
 * it started) and record no `completed` phase (the run's Completed status says it): every
 * committed upload is one workflow task and 8 history events. Revision 3 (10 to 15 events, two
 * tasks, a child) runs its own frozen code.
 */
export function uploadWorkflowWith(runs: ArrivalRuns) {
  // The name is the workflow type a client starts it by.
  return async function uploadWorkflow(input: UploadWorkflowInput): Promise<StoredResponse> {
    if ((input.revision ?? 0) < 4) return uploadWorkflowR3(input);
    const revision: Revision = {
      commit: commitAccepted,
      // Completes with an answer a lost workflow task committed, starting the downstream run it never started.
      adopted: async (input, response) => {
        if (needsDownstream(response)) await startDownstream(input, response);
      },
    };
    return input.import ? runs.import(input, revision) : runUpload(input, revision);
  };
}

/** One local activity verifies the copy, records it and starts the downstream run; the answer goes out through `answered`. */
async function commitAccepted(run: RunRecords, copy: StagedCopy, answered: (response: StoredResponse) => void): Promise<StoredResponse> {
  const checked = (run.request.revision ?? 0) >= 5 ? CHECKED_TYPES : CHECKED_TYPES_BEFORE_R5;
  const mismatch = contentTypeMismatch(run.request.contentType, copy.sniffedType, checked);
  if (!mismatch) {
    const response = await refusable(copy, commitUpload({ ...run, copy }));
    answered(response);
    return response;
  }
  const response = await refusable(copy, commitUpload({ ...run, rejection: { code: 'content_type_mismatch', detail: mismatch } }));
  answered(response);
  await discardCopy(copy.storageKey);
  setPhase('rejected');
  return response;
}
