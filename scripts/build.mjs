// Bundles the process entry points into dist/ with esbuild (already installed with tsx),
// so production roles run on plain node: no TypeScript loader thread, less memory.
// Dependencies stay external (node_modules). The workflow bundle is built here too
// (dist/workflow-bundle.js): a worker started from dist/ loads it instead of running
// webpack and swc at every start (start-up peak RSS and time: bench/HISTORY.md).
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { build } from 'esbuild';
import { bundleWorkflowCode } from '@temporalio/worker';

// The commit the bundle reports (/healthz, oncely_build_info, --version): git's, or the image
// build's ONCELY_COMMIT argument where the context has no .git.
function buildCommit() {
  if (process.env.ONCELY_COMMIT) return process.env.ONCELY_COMMIT;
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return 'unknown';
  }
}

await build({
  entryPoints: { main: 'src/main.ts', cli: 'src/cli.ts' },
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  target: 'node26',
  format: 'esm',
  // Role-specific code (the worker, the embedded PGlite and dev server) stays in chunks
  // loaded by its dynamic import, so an API process never loads sharp or the Temporal
  // worker's native core: ~15 MiB less RSS.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  packages: 'external',
  sourcemap: true,
  define: { __ONCELY_COMMIT__: JSON.stringify(buildCommit()) },
  logLevel: 'warning',
});

const quiet = { log() {}, info() {}, warn: console.warn, error: console.error, debug() {}, trace() {} };
// The tracing interceptors run in the workflow sandbox, so they are bundled with the workflows
// (src/paths.ts names the same module for workers that bundle at start).
const { code } = await bundleWorkflowCode({
  workflowsPath: new URL('../workflows/index.ts', import.meta.url).pathname,
  workflowInterceptorModules: [new URL('../workflows/tracing.ts', import.meta.url).pathname],
  // src/paths.ts, workflowPreloadModules: the sandbox's settings, then the workflows.
  preloadModules: [
    new URL('../workflows/sandbox.ts', import.meta.url).pathname,
    new URL('../workflows/index.ts', import.meta.url).pathname,
  ],
  logger: quiet,
});
await writeFile('dist/workflow-bundle.js', code);
