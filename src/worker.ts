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
import { withUnwatchedSandbox, type SandboxGuard } from './temporal/workflow-thread';

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
  /**
   * The workflow thread without the SDK's per-call watchdog (WORKFLOW_SANDBOX_WATCHDOG false):
   * a call into the sandbox running past `limitMs` is reported instead (src/temporal/workflow-thread.ts).
   */
  unwatchedSandbox?: { limitMs: number; onRunaway: (ranMs: number) => void };
}

export interface Workers {
  workers: Worker[];
  /** Watches the workflow thread's calls when it runs without the SDK's watchdog. */
  sandboxGuard?: SandboxGuard;
}

export async function createWorkers(setup: WorkerSetup): Promise<Workers> {
  // Leftovers of workers killed mid-transcode on this machine.
  await removeOrphanedScratchDirs();
  const { transcode, runStep, renderImageVariant, ...shortActivities } = createActivities(setup.activities);
  const traced = await tracingWorkerOptions();
  const dataConverter = setup.payloadCodec ? { dataConverter: { payloadCodecs: [setup.payloadCodec] } } : {};
  const workers: Worker[] = [];
  let sandboxGuard: SandboxGuard | undefined;
  if (setup.taskQueues.uploads) {
    const create = () =>
      Worker.create({
        connection: setup.connection,
        namespace: setup.namespace,
        taskQueue: setup.taskQueues.uploads!,
        activities: shortActivities,
        ...traced,
        ...dataConverter,
        ...(setup.workflowBundlePath
          ? { workflowBundle: { codePath: setup.workflowBundlePath } }
          : { workflowsPath, bundlerOptions: { preloadModules: workflowPreloadModules } }),
        ...setup.options,
      });
    if (setup.unwatchedSandbox) {
      const { created, guard } = await withUnwatchedSandbox(create, setup.unwatchedSandbox);
      workers.push(created);
      sandboxGuard = guard;
    } else {
      workers.push(await create());
    }
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
  return { workers, sandboxGuard };
}
