// Where the project's files are, whether running from source (tsx) or from the bundle
// in dist/ (node): found by walking up to the directory holding package.json.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(start: string): string {
  let dir = start;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`package.json not found above ${start}`);
    dir = parent;
  }
  return dir;
}

export const projectRoot = findRoot(path.dirname(fileURLToPath(import.meta.url)));
/** The sources; the core's migrations are in `db/migrations/`, each wing's in `<wing>/migrations/`. */
export const sourceRoot = path.join(projectRoot, 'src');
export const workflowsPath = path.join(projectRoot, 'workflows', 'index.ts');
/** The workflow interceptors bundled with the workflows (traces: workflows/tracing.ts). */
export const workflowInterceptorsPath = path.join(projectRoot, 'workflows', 'tracing.ts');
/**
 * Run once in the worker's shared workflow context (the bundle's `preloadModules`): the
 * sandbox's settings, then the workflows themselves, so each run reuses their module
 * instances instead of evaluating its own (they hold no state of their own; the SDK freezes
 * them).
 */
export const workflowPreloadModules = [path.join(projectRoot, 'workflows', 'sandbox.ts'), workflowsPath];
export const toolsScript = path.join(projectRoot, 'scripts', 'tools.sh');
/** The workflow bundle scripts/build.mjs writes beside the process bundle. */
export const prebuiltWorkflowBundle = path.join(projectRoot, 'dist', 'workflow-bundle.js');
