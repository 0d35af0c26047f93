// Worker tuning an operator may need on another machine size (Temporal's WorkerOptions of the
// same names); bench/HISTORY.md has what each measured here. Unset: the SDK's defaults.
import { z } from 'zod';

const pollerBehavior = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('simple-maximum'), maximum: z.number().int().min(2).max(200) }),
  z.strictObject({
    type: z.literal('autoscaling'),
    minimum: z.number().int().min(1).max(200).optional(),
    maximum: z.number().int().min(1).max(200).optional(),
    initial: z.number().int().min(1).max(200).optional(),
  }),
]);
export const workerTuning = z.strictObject({
  maxConcurrentWorkflowTaskExecutions: z.number().int().min(2).max(1000).optional(),
  maxConcurrentLocalActivityExecutions: z.number().int().min(1).max(1000).optional(),
  maxCachedWorkflows: z.number().int().min(0).max(100_000).optional(),
  workflowTaskPollerBehavior: pollerBehavior.optional(),
  nonStickyToStickyPollRatio: z.number().min(0).max(1).optional(),
  reuseV8Context: z.boolean().optional(),
  workflowThreadPoolSize: z.number().int().min(1).max(16).optional(),
});
