// The start watchdog: it keeps the event loop alive through start-up (so Node never drains
// V8's background tasks from an empty loop: src/start-watchdog.ts) and bounds the start.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { START_TIMEOUT_EXIT_CODE, StartWatchdog } from '../../src/start-watchdog';

const run = promisify(execFile);
const fixture = path.resolve(import.meta.dirname, '../fixtures/idle-start.ts');

function outcome(mode: string): Promise<{ code: number; stdout: string }> {
  return run(process.execPath, ['--import', 'tsx', fixture, mode], { timeout: 30_000 }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
  );
}

describe('StartWatchdog', () => {
  it('past its bound it logs the step it was waiting for and exits 75', async () => {
    const fatal = vi.fn();
    const exit = vi.fn();
    const w = new StartWatchdog(0.05, { fatal, debug: () => {} }, exit);
    w.step('the Temporal dev server');
    await vi.waitFor(() => expect(exit).toHaveBeenCalledWith(START_TIMEOUT_EXIT_CODE), { timeout: 5000 });
    expect(fatal.mock.calls[0]![0]).toMatchObject({ step: 'the Temporal dev server', timeoutSeconds: 0.05 });
    expect(fatal.mock.calls[0]![1]).toContain('still waiting for the Temporal dev server');
  });

  it('a role serving in time is left alone', async () => {
    const exit = vi.fn();
    const w = new StartWatchdog(0.05, { fatal: () => {}, debug: () => {} }, exit);
    w.serving();
    await new Promise((r) => setTimeout(r, 200));
    expect(exit).not.toHaveBeenCalled();
  });

  it('holds the event loop open while the start awaits what no handle settles, then exits 75 instead of hanging', async () => {
    // Unguarded, Node sees an empty loop and stops at once (13: unsettled top-level await).
    expect((await outcome('bare')).code).toBe(13);
    const guarded = await outcome('guarded');
    expect(guarded.code).toBe(START_TIMEOUT_EXIT_CODE);
    expect(JSON.parse(guarded.stdout.trim().split('\n').at(-1)!)).toMatchObject({ level: 60, step: 'a promise nothing settles' });
  });
});
