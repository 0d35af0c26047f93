// Builds the Temporal worker for the uploads task queue. The workflow code is either
// bundled here or taken from a prebuilt bundle (tests bundle once per run).
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import { createActivities, type ActivityDeps } from '../activities';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface WorkerSetup {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: ActivityDeps;
  /** Prebuilt bundle code path; when absent the worker bundles workflows itself. */
  workflowBundlePath?: string;
  options?: Partial<WorkerOptions>;
}

export async function createUploadWorker(setup: WorkerSetup): Promise<Worker> {
  return Worker.create({
    connection: setup.connection,
    namespace: setup.namespace,
    taskQueue: setup.taskQueue,
    activities: createActivities(setup.activities),
    ...(setup.workflowBundlePath ? { workflowBundle: { codePath: setup.workflowBundlePath } } : { workflowsPath }),
    ...setup.options,
  });
}
