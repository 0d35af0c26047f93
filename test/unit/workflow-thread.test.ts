// The workflow thread without the SDK's per-call watchdog (src/temporal/workflow-thread.ts):
// a thread made the way the SDK makes its own gets sandbox-thread.cjs, so vm's per-call
// `timeout` no longer applies there, and a call that never returns is reported by the guard.
// A thread by another name is left as it was.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import workerThreads from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { withUnwatchedSandbox } from '../../src/temporal/workflow-thread';

// Stands in for the SDK's thread: calls into a vm context with a 50 ms timeout, as the SDK
// does with its own (5 s).
const THREAD = `
const vm = require('node:vm');
const { parentPort } = require('node:worker_threads');
const context = vm.createContext({});
parentPort.on('message', (code) => {
  try {
    parentPort.postMessage({ result: new vm.Script(code).runInContext(context, { timeout: 50 }) });
  } catch (err) {
    parentPort.postMessage({ error: err.code ?? err.message });
  }
});
`;
const dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-workflow-thread-'));
const sdkLike = path.join(dir, 'workflow-worker-thread.cjs');
const other = path.join(dir, 'some-other-thread.cjs');
writeFileSync(sdkLike, THREAD);
writeFileSync(other, THREAD);

const threads: workerThreads.Worker[] = [];
afterEach(async () => {
  await Promise.all(threads.splice(0).map((t) => t.terminate()));
});

function send(thread: workerThreads.Worker, code: string) {
  const answer = new Promise<{ result?: unknown; error?: string }>((resolve) => thread.once('message', resolve));
  thread.postMessage(code);
  return answer;
}

describe('the workflow thread without the per-call watchdog', () => {
  it('runs calls unbounded in the SDK-named thread and reports one that never returns', async () => {
    let runaway: ((ms: number) => void) | undefined;
    const reported = new Promise<number>((resolve) => (runaway = resolve));
    const { created: thread, guard } = await withUnwatchedSandbox(async () => new workerThreads.Worker(sdkLike), {
      limitMs: 300,
      onRunaway: (ms) => runaway!(ms),
    });
    threads.push(thread);
    try {
      expect(await send(thread, '6 * 7')).toEqual({ result: 42 });
      // A 100 ms busy loop outlives the 50 ms timeout: with the watchdog it would fail.
      expect(await send(thread, 'const end = Date.now() + 100; while (Date.now() < end); "done"')).toEqual({ result: 'done' });
      thread.postMessage('for (;;);');
      expect(await reported).toBeGreaterThanOrEqual(300);
    } finally {
      guard.stop();
    }
  });

  it('leaves every other thread as node makes it: the timeout still applies there', async () => {
    const { created: thread, guard } = await withUnwatchedSandbox(async () => new workerThreads.Worker(other), {
      limitMs: 300,
      onRunaway: () => {
        throw new Error('no call of this thread is watched');
      },
    });
    guard.stop();
    threads.push(thread);
    expect(await send(thread, 'for (;;);')).toEqual({ error: 'ERR_SCRIPT_EXECUTION_TIMEOUT' });
  });

  it('makes threads as before once the SDK has made its own', async () => {
    const { guard } = await withUnwatchedSandbox(async () => undefined, { limitMs: 300, onRunaway: () => {} });
    guard.stop();
    const thread = new workerThreads.Worker(sdkLike);
    threads.push(thread);
    expect(await send(thread, 'for (;;);')).toEqual({ error: 'ERR_SCRIPT_EXECUTION_TIMEOUT' });
  });
});
