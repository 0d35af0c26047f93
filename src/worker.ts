// Builds the Temporal workers: `uploads` runs the workflows and short activities;
// `transcode` runs only the heavy media activities (steps, image variants), so it can scale (or be deployed)
// apart from the upload path. Workflow code is bundled here or taken prebuilt (tests
// bundle once per run).
import type { PayloadCodec } from '@temporalio/common';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { workflowPreloadModules, workflowsPath } from './paths';
import { createActivities, type ActivityDeps } from '../activities';
import { removeOrphanedScratchDirs } from './media/scratch';
import { tracingWorkerOptions } from './telemetry/temporal';

export { workflowsPath };

export interface WorkerSetup {
  connection: NativeConnection;
  namespace: string;
  /** The queues this process polls (WORKER_QUEUES): both by default, or one of them. */
  taskQueues: { uploads?: string; transcode?: string };
  activities: ActivityDeps;
  /** Prebuilt bundle code path; when absent the worker bundles workflows itself. */
  workflowBundlePath?: string;
  /** The payload codec (PAYLOAD_ENCRYPTION), shared with the process's client. */
  payloadCodec?: PayloadCodec;
  /** Overrides for the workflow worker (WORKER_TUNING). */
  options?: Partial<WorkerOptions>;
}

export async function createWorkers(setup: WorkerSetup): Promise<Worker[]> {
  // Leftovers of workers killed mid-transcode on this machine.
  await removeOrphanedScratchDirs();
  const { transcode, runStep, renderImageVariant, ...shortActivities } = createActivities(setup.activities);
  const traced = await tracingWorkerOptions();
  const dataConverter = setup.payloadCodec ? { dataConverter: { payloadCodecs: [setup.payloadCodec] } } : {};
  const workers: Worker[] = [];
  if (setup.taskQueues.uploads) {
    workers.push(
      await Worker.create({
        connection: setup.connection,
        namespace: setup.namespace,
        taskQueue: setup.taskQueues.uploads,
        activities: shortActivities,
        ...traced,
        ...dataConverter,
        ...(setup.workflowBundlePath
          ? { workflowBundle: { codePath: setup.workflowBundlePath } }
          : { workflowsPath, bundlerOptions: { preloadModules: workflowPreloadModules } }),
        ...setup.options,
      }),
    );
  }
  if (setup.taskQueues.transcode) {
    workers.push(
      await Worker.create({
        connection: setup.connection,
        namespace: setup.namespace,
        taskQueue: setup.taskQueues.transcode,
        activities: { transcode, runStep, renderImageVariant },
        ...traced,
        ...dataConverter,
        // Transcoding is CPU-bound: a couple at a time per process on a small machine.
        maxConcurrentActivityTaskExecutions: 2,
      }),
    );
  }
  return workers;
}
