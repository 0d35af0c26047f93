// Scratch directories for transcoding, named after the worker process that owns them, so a
// worker killed mid-transcode (its `finally` never ran) has its leftovers removed by the
// next worker that starts on the machine: a directory whose owner is no longer alive.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const PREFIX = 'oncely-transcode-';

export function newScratchDir(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), `${PREFIX}${process.pid}-`));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // alive, owned by someone else
  }
}

/** Removes scratch directories whose owning process has exited; returns how many. */
export async function removeOrphanedScratchDirs(tmp: string = os.tmpdir()): Promise<number> {
  let removed = 0;
  for (const name of await readdir(tmp).catch(() => [] as string[])) {
    const m = new RegExp(`^${PREFIX}(\\d+)-`).exec(name);
    if (!m || isAlive(Number(m[1]))) continue;
    await rm(path.join(tmp, name), { recursive: true, force: true }).catch(() => {}); // tried again at the next start
    removed++;
  }
  return removed;
}
