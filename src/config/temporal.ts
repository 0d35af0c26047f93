// Temporal and the worker. The Temporal frontend, the task queues, and how a worker runs workflow code.
// docs/CONFIGURATION.md is generated from these comments (npm run docs:config).
import { z } from 'zod';
import { bool, commaList, optionalString } from './values';
import { workerTuning } from './worker-tuning';

export const temporalSettings = {
  /**
   * Temporal frontend `host:port`.
   * @default unset: dev server
   */
  TEMPORAL_ADDRESS: optionalString,
  /**
   * Embedded parts a split role (`api`, `worker`) may run in place of a setting, by name: `database`
   * (PGlite), `store` (the local directory), `temporal` (a dev server), `secrets` (a key generated
   * under `DATA_DIR`). Without them a split role missing `DATABASE_URL`, `S3_ENDPOINT`,
   * `TEMPORAL_ADDRESS` or `SECRETS_KEY` exits at once with code 2 and a line per missing setting;
   * role `all` (the embedded default) runs each part whose setting is unset.
   */
  EMBEDDED: commaList('').pipe(z.array(z.enum(['database', 'store', 'temporal', 'secrets']))),
  /** Namespace. */
  TEMPORAL_NAMESPACE: z.string().default('default'),
  /** Dev server UI port (embedded default). */
  TEMPORAL_UI_PORT: z.coerce.number().int().min(1).max(65535).default(8233),
  /** The task queue of uploads and everything but transcodes. */
  TASK_QUEUE_UPLOADS: z.string().min(1).default('uploads'),
  /** The task queue of transcodes and image renders. */
  TASK_QUEUE_TRANSCODE: z.string().min(1).default('transcode'),
  /**
   * Worker role: the task queues this process polls (`uploads`, `transcode`, or both), so
   * transcoding can run on machines of its own.
   */
  WORKER_QUEUES: commaList('uploads,transcode').pipe(
    z.array(z.enum(['uploads', 'transcode'])).min(1, 'name at least one of uploads, transcode'),
  ),
  /** Create the housekeeping Schedules at worker start. */
  HOUSEKEEPING_SCHEDULES: bool.default(true),
  /**
   * Worker role: JSON of workflow-worker options to override: `maxConcurrentWorkflowTaskExecutions`,
   * `maxConcurrentLocalActivityExecutions`, `maxCachedWorkflows`, `workflowTaskPollerBehavior`
   * (`{"type":"autoscaling","maximum":20}` or `{"type":"simple-maximum","maximum":10}`),
   * `nonStickyToStickyPollRatio`, `reuseV8Context`, `workflowThreadPoolSize`. Any other key is
   * refused at start. What each measured: bench/HISTORY.md.
   * @default unset: the SDK's defaults
   */
  WORKER_TUNING: optionalString.transform((v, ctx) => {
    if (v === undefined) return {};
    let json: unknown;
    try {
      json = JSON.parse(v);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON object' });
      return z.NEVER;
    }
    const parsed = workerTuning.safeParse(json);
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        ctx.addIssue({ code: 'custom', message: `${issue.path.join('.') || '(root)'}: ${issue.message}` });
      return z.NEVER;
    }
    return parsed.data;
  }),
  /**
   * Worker role: `true` bounds every call into the workflow sandbox by the Temporal SDK's own
   * watchdog (5 s; node makes a thread for each call, ~130 µs of CPU, a few dozen calls per upload:
   * 30 % of the worker's CPU per upload, bench/HISTORY.md). Off, calls run unbounded and the process
   * watches them from its main thread instead (`src/temporal/workflow-thread.ts`).
   */
  WORKFLOW_SANDBOX_WATCHDOG: bool.default(false),
  /**
   * With the watchdog off: a call into the sandbox still running after this long is a workflow that
   * never yields (a loop in workflow code); the worker logs it at `fatal` and exits 70, and Temporal
   * hands its workflow tasks to another worker.
   */
  WORKFLOW_SANDBOX_CALL_LIMIT_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
};
