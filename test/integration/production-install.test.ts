// The production dependency set alone (`npm ci --omit=dev`, as the image installs it) loads
// every role: the bundle's entry points and every chunk a role imports on demand (worker,
// embedded PGlite and dev server, media), the CLI, and `oncely` without tsx. A package the
// product imports but only devDependencies hold fails here, with no Docker engine needed.
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
let copy: string;

beforeAll(async () => {
  copy = mkdtempSync(path.join(os.tmpdir(), 'oncely-prod-install-'));
  for (const entry of ['package.json', 'package-lock.json', 'tsconfig.json', 'src', 'workflows', 'activities', 'bin', 'scripts'])
    cpSync(path.join(root, entry), path.join(copy, entry), { recursive: true });
  await run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: copy,
    env: { ...process.env, NODE_ENV: 'production' },
    timeout: 600_000,
  });
  await run(process.execPath, ['scripts/build.mjs'], { cwd: copy, env: { ...process.env, ONCELY_COMMIT: 'prodtest' }, timeout: 300_000 });
}, 900_000);
afterAll(() => {
  if (copy) rmSync(copy, { recursive: true, force: true });
});

it('has no dev dependency installed (the check would otherwise prove nothing)', () => {
  for (const dev of ['tsx', 'vitest', 'typescript', 'toxiproxy-node-client'])
    expect(readdirSync(path.join(copy, 'node_modules'))).not.toContain(dev);
});

it('loads every entry point and every chunk of the bundle', async () => {
  const main = await run(process.execPath, ['dist/main.js', '--version'], { cwd: copy });
  expect(main.stdout.trim()).toMatch(/^oncely \d+\.\d+\.\d+ \(prodtest\)$/);
  const cli = await run(process.execPath, ['dist/cli.js', '--version'], { cwd: copy });
  expect(cli.stdout.trim()).toMatch(/^\d+\.\d+\.\d+ \(prodtest\)$/);
  // `oncely` runs the built CLI where tsx is not installed.
  const bin = await run(path.join(copy, 'bin/oncely'), ['--help'], { cwd: copy });
  expect(bin.stdout).toContain('migrate');
  const chunks = readdirSync(path.join(copy, 'dist/chunks')).filter((f) => f.endsWith('.js'));
  expect(chunks.length).toBeGreaterThan(0);
  const script = `for (const f of ${JSON.stringify(chunks)}) await import('./dist/chunks/' + f); console.log('loaded', ${chunks.length});`;
  const loaded = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: copy });
  expect(loaded.stdout.trim()).toBe(`loaded ${chunks.length}`);
  // The workers' code: the activities (sharp and its decoders included) and the workflow bundle.
  const worker = await run(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      "const w = await import('@temporalio/worker'); const s = await import('sharp'); console.log(typeof w.Worker.create, typeof s.default)",
    ],
    { cwd: copy },
  );
  expect(worker.stdout.trim()).toBe('function function');
  expect(readdirSync(path.join(copy, 'dist'))).toContain('workflow-bundle.js');
});
