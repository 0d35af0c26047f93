// A workflow tested at its own level: the run's one workflow bundle on the shared dev server,
// driven through TestWorkflowEnvironment, with the test's recording activities in place of the
// real ones, on a task queue of its own. Register it in a file's beforeAll; stopped afterAll.
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, inject } from 'vitest';

export interface WorkflowWorker {
  env: TestWorkflowEnvironment;
  taskQueue: string;
}

/** Starts the environment and its worker before the file's tests, stops them after. */
export function useWorkflowWorker(name: string, activities: object): WorkflowWorker {
  const handle = { taskQueue: `${name}-${randomUUID()}` } as WorkflowWorker;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  beforeAll(async () => {
    const stack = inject('stack');
    handle.env = await TestWorkflowEnvironment.createFromExistingServer({ address: stack.temporalAddress });
    worker = await Worker.create({
      connection: handle.env.nativeConnection,
      taskQueue: handle.taskQueue,
      workflowBundle: { codePath: stack.workflowBundlePath },
      activities,
    });
    running = worker.run();
  });
  afterAll(async () => {
    worker?.shutdown();
    await running;
    await handle.env?.teardown();
  });
  return handle;
}

/** Activities that record what they were asked (by name) and answer what the test says. */
export function recorder() {
  const calls: { name: string; args: any[] }[] = [];
  return {
    calls,
    /** The calls of one activity, in order. */
    called: (name: string) => calls.filter((c) => c.name === name),
    /** An activity named `name` that records its arguments and answers `fn(...args)`. */
    record:
      (name: string, fn: (...args: any[]) => unknown = () => undefined) =>
      async (...args: any[]) => {
        calls.push({ name, args });
        return fn(...args);
      },
  };
}
