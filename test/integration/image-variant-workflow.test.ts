// The image variant workflow at its own level: one render activity on the transcode queue
// the input names, asked for exactly the upload, spec and limit the API decided; a render
// that keeps failing ends the run failed after its bounded attempts.
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { expect, it } from 'vitest';

import { canonicalSpec, parseSpec } from '../../src/images/spec';
import { imageVariantWorkflow } from '../../workflows/images/image-variant';
import { recorder, useWorkflowWorker } from '../helpers/workflow-worker';
import { imageWorkflowIds, type ImageVariantInput } from '../../src/images/contract';

const { called, record } = recorder();
const broken = new Set<string>();
const activities = {
  renderImageVariant: record('renderImageVariant', ({ uploadId, spec }: { uploadId: string; spec: { text: string } }) => {
    if (broken.has(uploadId)) throw ApplicationFailure.create({ message: 'sharp: unsupported image format', nonRetryable: true });
    return { spec: spec.text, contentType: 'image/webp', bytes: 1234, storageKey: `variants/${uploadId}/${spec.text}` };
  }),
};
const workflows = useWorkflowWorker('image-variant-workflow', activities);
const spec = canonicalSpec(parseSpec('w_400,h_300,fit_cover,f_webp'), 'image/jpeg', undefined);
const input = (uploadId: string): ImageVariantInput => ({
  tenantId: 't1',
  uploadId,
  spec,
  transcodeQueue: workflows.taskQueue,
  maxVariants: 50,
});

it('renders once on the transcode queue with what the API decided, and answers the variant', async () => {
  const uploadId = randomUUID();
  const result = await workflows.env.client.workflow.execute(imageVariantWorkflow, {
    taskQueue: workflows.taskQueue,
    workflowId: imageWorkflowIds.imageVariant(uploadId, spec.text),
    args: [input(uploadId)],
  });
  expect(result).toEqual({ spec: spec.text, contentType: 'image/webp', bytes: 1234, storageKey: `variants/${uploadId}/${spec.text}` });
  expect(
    called('renderImageVariant')
      .filter((c) => c.args[0].uploadId === uploadId)
      .map((c) => c.args[0]),
  ).toEqual([{ tenantId: 't1', uploadId, spec, maxVariants: 50 }]);
});

it("fails with the render's own failure when the picture cannot be rendered", async () => {
  const uploadId = randomUUID();
  broken.add(uploadId);
  const err = await workflows.env.client.workflow
    .execute(imageVariantWorkflow, {
      taskQueue: workflows.taskQueue,
      workflowId: imageWorkflowIds.imageVariant(uploadId, spec.text),
      args: [input(uploadId)],
    })
    .catch((e) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  expect(String((err as any).cause?.cause?.message)).toContain('unsupported image format');
  expect(called('renderImageVariant').filter((c) => c.args[0].uploadId === uploadId)).toHaveLength(1);
});
