// The worker's workflow thread without the SDK's per-call watchdog (WORKFLOW_SANDBOX_WATCHDOG
// false, the default). The SDK bounds each call into the workflow sandbox by vm's `timeout`,
// and node makes a thread for each such call (nodejs/node#47739). The SDK's workflow thread
// is made with sandbox-thread.cjs preloaded instead, which runs calls unbounded and marks when
// each began in a clock shared with this thread. A call still running after `limitMs` is a
// workflow that never yields (a loop in workflow code): the process logs it and exits, as its
// workflow tasks would otherwise stall behind it, and Temporal hands them to another worker.
import path from 'node:path';
import workerThreads from 'node:worker_threads';
import { projectRoot } from '../paths';

const SANDBOX_THREAD_MODULE = path.join(projectRoot, 'src', 'temporal', 'sandbox-thread.cjs');
const CLOCK_KEY = 'oncely.sandboxClock';

export interface SandboxGuard {
  /** Stops watching (the workers stopped). */
  stop(): void;
}

/**
 * Runs `create` (which makes the SDK's workflow thread, Worker.create) so that the thread it
 * makes loads sandbox-thread.cjs, and watches that thread's calls from here.
 */
export async function withUnwatchedSandbox<T>(
  create: () => Promise<T>,
  opts: { limitMs: number; onRunaway: (ranMs: number) => void },
): Promise<{ created: T; guard: SandboxGuard }> {
  const clock = new SharedArrayBuffer(8);
  const started = new BigInt64Array(clock);
  workerThreads.setEnvironmentData(CLOCK_KEY, clock);
  const Original = workerThreads.Worker;
  // The SDK makes its thread with `new (require('node:worker_threads').Worker)(file)` inside
  // Worker.create: only that file gets the module, and only while `create` runs.
  class WorkflowThread extends Original {
    constructor(file: string | URL, options: workerThreads.WorkerOptions = {}) {
      const ours = String(file).includes('workflow-worker-thread');
      // Given execArgv replaces what the thread would inherit; the SDK's thread runs plain
      // JavaScript and V8's flags are the process's anyway (a thread may not be given them).
      super(file, ours ? { ...options, execArgv: ['--require', SANDBOX_THREAD_MODULE] } : options);
    }
  }
  (workerThreads as { Worker: typeof Original }).Worker = WorkflowThread;
  let created: T;
  try {
    created = await create();
  } finally {
    (workerThreads as { Worker: typeof Original }).Worker = Original;
    workerThreads.setEnvironmentData(CLOCK_KEY, undefined);
  }
  const timer = setInterval(
    () => {
      const since = Number(Atomics.load(started, 0));
      if (since && Date.now() - since > opts.limitMs) opts.onRunaway(Date.now() - since);
    },
    Math.min(1000, opts.limitMs),
  );
  timer.unref();
  return { created, guard: { stop: () => clearInterval(timer) } };
}
