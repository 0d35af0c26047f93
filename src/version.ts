// What build this process runs: package.json's version and the commit it was built from.
// The production bundle has the commit written in by scripts/build.mjs (git, or the
// ONCELY_COMMIT build argument in the image); from source it is read from git once.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from './paths';

declare const __ONCELY_COMMIT__: string | undefined;

function sourceCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return 'unknown';
  }
}

export const version: string = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
export const commit: string = typeof __ONCELY_COMMIT__ === 'string' ? __ONCELY_COMMIT__ : sourceCommit();
