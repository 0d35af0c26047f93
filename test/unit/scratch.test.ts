// Transcode scratch directories of dead worker processes are removed; live ones never are.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { removeOrphanedScratchDirs } from '../../src/media/scratch';

it('removes the scratch directories of exited processes only', async () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'oncely-scratch-test-'));
  try {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid; // has exited by now
    mkdirSync(path.join(tmp, `oncely-transcode-${dead}-abc123`));
    mkdirSync(path.join(tmp, `oncely-transcode-${process.pid}-def456`));
    mkdirSync(path.join(tmp, 'oncely-transcode-notapid'));
    mkdirSync(path.join(tmp, 'something-else'));
    expect(await removeOrphanedScratchDirs(tmp)).toBe(1);
    expect(readdirSync(tmp).sort()).toEqual([`oncely-transcode-${process.pid}-def456`, 'oncely-transcode-notapid', 'something-else']);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
