// A tenant's decision on an async http.call step, delivered to the upload's downstream child
// as an update: accepted only while the step is undecided (or decided the same way), so a
// repeated callback is answered alike and a contradicting one is refused.
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from '../db/pool';
import { listStepOutcomes, uploadPipeline } from '../db/queries/pipelines';
import type { StepDecision } from '../pipelines/step-results';
import { dependency, problem } from '../errors';
import { DEFAULT_PIPELINE } from '../pipelines/steps';
import { failureTypes, workflowIds } from '../temporal/names';
import { completeStepUpdate } from '../temporal/definitions';

export class StepDecisions {
  constructor(private readonly deps: { temporal: Client; pool: Pool }) {}

  async decide(uploadId: string, decision: StepDecision): Promise<void> {
    const handle = this.deps.temporal.workflow.getHandle(workflowIds.downstream(uploadId));
    try {
      await handle.executeUpdate(completeStepUpdate, { args: [decision] });
      return;
    } catch (err) {
      const refused = err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure ? err.cause : undefined;
      if (refused?.type === failureTypes.stepNotWaiting) throw problem('step_not_waiting', `${refused.message}.`);
      // The child has finished (or never ran): a decision it already recorded is answered again.
      if (!(err instanceof WorkflowNotFoundError) && !isClosed(err)) throw problem('temporal_unavailable', undefined, { cause: err });
    }
    if (await this.recorded(uploadId, decision)) return;
    throw problem('step_not_waiting', `Step ${decision.step} of this upload is not waiting for a decision.`);
  }

  /** Whether the step's recorded outcome is this decision. */
  private async recorded(uploadId: string, d: StepDecision): Promise<boolean> {
    const ran = await dependency('database_unavailable', () => uploadPipeline(this.deps.pool, uploadId));
    const steps = await dependency('database_unavailable', () =>
      listStepOutcomes(this.deps.pool, uploadId, ran?.name ?? DEFAULT_PIPELINE, ran?.version ?? 0),
    );
    const step = steps.find((s) => s.step_index === d.step && s.type === 'http.call');
    return step?.status === (d.outcome === 'accept' ? 'succeeded' : 'rejected');
  }
}

/** An update sent to a workflow that has completed. */
function isClosed(err: unknown): boolean {
  for (let e = err as { message?: string; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++)
    if (/workflow execution already completed/i.test(e.message ?? '')) return true;
  return false;
}
