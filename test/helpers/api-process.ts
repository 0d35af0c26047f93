// An API in its own OS process (`src/main.ts api`), so a test can SIGKILL it mid-request.
import path from 'node:path';
import { nodeTs, startProcess, waitUntil, type ManagedProcess } from '../../src/devstack/process';

const root = path.resolve(import.meta.dirname, '../..');

export async function startApiProcess(env: Record<string, string>, port: number, logFile: string): Promise<ManagedProcess> {
  const proc = startProcess(...nodeTs(path.join(root, 'src/main.ts'), 'api'), {
    logFile,
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'warn', HOUSEKEEPING_SCHEDULES: 'false' },
  });
  await waitUntil('API process', async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok, { proc, timeoutMs: 60_000 });
  return proc;
}
