// A worker in its own OS process (`tsx src/main.ts worker`), so crash tests can SIGKILL it.
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { inject } from 'vitest';
import { nodeTs, startProcess, waitUntil, type ManagedProcess } from '../../src/devstack/process';

const root = path.resolve(import.meta.dirname, '../..');

export async function startWorkerProcess(env: Record<string, string>, logFile: string): Promise<ManagedProcess> {
  const proc = startProcess(...nodeTs(path.join(root, 'src/main.ts'), 'worker'), {
    logFile,
    cwd: root,
    env: { ...process.env, ...env, LOG_LEVEL: 'info', WORKFLOW_BUNDLE_PATH: inject('stack').workflowBundlePath },
  });
  const startedLines = () =>
    readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"oncely started"')).length;
  const before = startedLines();
  await waitUntil('worker process', async () => startedLines() > before, { proc, timeoutMs: 60_000 });
  return proc;
}

/** A test stack that serves the API here and runs its worker in a process of its own, to SIGKILL and start again. */
export async function stackWithWorkerProcess(prefix: string, overrides: Record<string, string> = {}) {
  const { startTestStack, stackEnv } = await import('./stack');
  const stack = await startTestStack(prefix, { role: 'api', env: overrides });
  const env = { ...stackEnv(stack.name, stack.dbUrl), S3_BUCKET: stack.config.S3_BUCKET, ...overrides };
  const logFile = path.join(inject('stack').tmpDir, `${stack.name}-worker.log`);
  let worker: ManagedProcess | undefined = await startWorkerProcess(env, logFile);
  return {
    stack,
    /** SIGKILLs the worker. */
    async kill() {
      await worker?.stop('SIGKILL');
      worker = undefined;
    },
    async start() {
      worker = await startWorkerProcess(env, logFile);
    },
    async stop() {
      await worker?.stop('SIGKILL');
      await stack.stop();
    },
  };
}
