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
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
