// Bundles the process entry points into dist/ with esbuild (already installed with tsx),
// so production roles run on plain node: no TypeScript loader thread, less memory.
// Dependencies stay external (node_modules); workflows are still bundled by the worker.
import { build } from 'esbuild';

await build({
  entryPoints: { main: 'src/main.ts', cli: 'src/cli.ts' },
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  target: 'node24',
  format: 'esm',
  // Role-specific code (the worker, the embedded PGlite and dev server) stays in chunks
  // loaded by its dynamic import, so an API process never loads sharp or the Temporal
  // worker's native core: ~15 MiB less RSS.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
