// Revision 3 of the upload workflow, frozen: runs started for it replay through exactly this
// code (test/fixtures/histories/r3-*.json). It commits in two local activities (the object,
// then the records) and fires the downstream run as a child. New runs never come here
// (workflows/upload.ts dispatches on the input's revision); do not change it.
import { ParentClosePolicy, startChild } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { StagedCopy, StoredResponse } from '../src/upload/types';
import { workflowIds } from '../src/temporal/names';
import { CHECKED_TYPES_BEFORE_R5, contentTypeMismatch } from '../src/upload/sniff';
import { downstreamInput, downstreamSummary, needsDownstream } from '../src/downstream/types';
import { downstreamWorkflow } from './downstream';
import type { UploadWorkflowInput } from '../src/temporal/definitions';
import { discardCopy, localStep, refusable, runUpload, setPhase, type RunRecords } from './upload-offers';
import { stepLabels } from '../src/temporal/step-labels';

const { commitObject } = localStep(stepLabels.commitObject);
const { commitRecords } = localStep(stepLabels.commitRecords);

export function uploadWorkflowR3(input: UploadWorkflowInput): Promise<StoredResponse> {
  return runUpload(input, {
    commit: commitAccepted,
    // Completes with an answer a lost workflow task committed, firing the downstream child it never fired.
    adopted: async (input, response) => {
      setPhase('completed');
      if (needsDownstream(response)) await startDownstream(input, response);
    },
  });
}

/** The object, then the records in one transaction; the answer goes out through `answered`, then the child starts. */
async function commitAccepted(run: RunRecords, copy: StagedCopy, answered: (response: StoredResponse) => void): Promise<StoredResponse> {
  const mismatch = contentTypeMismatch(run.request.contentType, copy.sniffedType, CHECKED_TYPES_BEFORE_R5);
  if (mismatch) {
    const response = await refusable(copy, commitRecords({ ...run, rejection: { code: 'content_type_mismatch', detail: mismatch } }));
    answered(response);
    await discardCopy(copy.storageKey);
    setPhase('rejected');
    return response;
  }
  await commitObject({ copy });
  const response = await refusable(copy, commitRecords({ ...run, copy }));
  answered(response);
  setPhase('completed');
  // No step for the file and no endpoint to notify (settled in the transaction) needs no child.
  if (needsDownstream(response)) await startDownstream(run.request, response);
  return response;
}

/** Fires the downstream child exactly once per upload; the HTTP answer does not wait for it. */
async function startDownstream(input: UploadWorkflowInput, response: StoredResponse): Promise<void> {
  const args = downstreamInput(input, response.body);
  try {
    await startChild(downstreamWorkflow, {
      workflowId: workflowIds.downstream(args.uploadId),
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: downstreamSummary(args.uploadId),
      args: [args],
    });
  } catch (err) {
    // Already started means already fired: exactly what we want.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}
