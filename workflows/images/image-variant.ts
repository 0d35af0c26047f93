// One image variant, rendered once: the run's ID is derived from the upload and the
// canonical spec (imageWorkflowIds.imageVariant), so every replica's first request for a cold
// variant attaches to this one run and awaits its result.
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { stepLabels } from '../../src/temporal/step-labels';
import type { ImageVariantInput } from '../../src/images/contract';

export async function imageVariantWorkflow(input: ImageVariantInput) {
  const { renderImageVariant } = proxyActivities<Activities>({
    summary: stepLabels.renderImageVariant,
    taskQueue: input.transcodeQueue,
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '10 seconds',
    retry: { initialInterval: '1 second', maximumInterval: '10 seconds', maximumAttempts: 5 },
  });
  return renderImageVariant({ tenantId: input.tenantId, uploadId: input.uploadId, spec: input.spec, maxVariants: input.maxVariants });
}
