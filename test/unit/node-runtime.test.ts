// The project runs on Node 26 LTS: the suite itself runs on it, and the bootstrap puts it
// first on PATH when the machine's `node` is older (here: a stand-in that claims v20).
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');

describe('Node.js runtime', () => {
  it('the suite runs on Node 26 or newer, as package.json engines requires', () => {
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(26);
    expect(JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).engines.node).toBe('>=26');
  });

  it('scripts/node.sh replaces an older node on PATH with the pinned Node 26', async () => {
    const fakeBin = mkdtempSync(path.join(os.tmpdir(), 'oncely-old-node-'));
    // An "old" node: answers like Node 20 would.
    writeFileSync(path.join(fakeBin, 'node'), '#!/bin/sh\necho 20\n');
    chmodSync(path.join(fakeBin, 'node'), 0o755);
    const { stdout } = await run('sh', ['-c', '. scripts/node.sh && command -v node && node -p process.versions.node'], {
      cwd: root,
      env: { ...process.env, PATH: `${fakeBin}:${process.env.PATH}` },
    });
    const [where, version] = stdout.trim().split('\n');
    expect(where).toMatch(/node-26\.\d+\.\d+\/bin\/node$/);
    expect(version).toMatch(/^26\./);
  }, 120_000);

  it('bin/oncely-node runs every role with --expose-gc, 4 MiB semi-spaces, two V8 helper threads and two malloc arenas, and ONCELY_NODE_FLAGS after them', async () => {
    // `-p` makes node print its own flags instead of running the bundle.
    const flags = async (role: string, extra: string) =>
      (
        await run('sh', [path.join(root, 'bin/oncely-node'), role], {
          cwd: root,
          env: { ...process.env, ONCELY_NODE_FLAGS: `${extra} -p process.execArgv.join(",")` },
        })
      ).stdout.trim();
    // (the variable is split on spaces: the flags, "-p", then the expression)
    expect(await flags('api', '')).toBe(
      '--expose-gc,--max-semi-space-size=4,--v8-pool-size=2,--no-concurrent-array-buffer-sweeping,-p,process.execArgv.join(",")',
    );
    expect(await flags('worker', '--max-semi-space-size=1')).toBe(
      '--expose-gc,--max-semi-space-size=4,--v8-pool-size=2,--no-concurrent-array-buffer-sweeping,--max-semi-space-size=1,-p,process.execArgv.join(",")',
    );
    // glibc reads MALLOC_ARENA_MAX from the environment: 2 unless the caller set it.
    const arenasIn = async (env: NodeJS.ProcessEnv) =>
      (
        await run('sh', [path.join(root, 'bin/oncely-node'), 'api'], {
          cwd: root,
          env: { ...env, ONCELY_NODE_FLAGS: '-p process.env.MALLOC_ARENA_MAX' },
        })
      ).stdout.trim();
    const withoutArena = { ...process.env };
    delete withoutArena.MALLOC_ARENA_MAX;
    expect(await arenasIn(withoutArena)).toBe('2');
    expect(await arenasIn({ ...withoutArena, MALLOC_ARENA_MAX: '8' })).toBe('8');
  }, 60_000);
});
