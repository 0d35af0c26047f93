// The upload page at `/`. Its script is bundled from src/web/app.ts with esbuild on first
// request (browser target, no Node built-ins) and kept in memory.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createRoute } from '@hono/zod-openapi';
import { projectRoot } from '../../paths';
import { route, router } from '../openapi';

let bundle: Promise<string> | undefined;

export function buildWebApp(): Promise<string> {
  bundle ??= import('esbuild').then(async ({ build }) => {
    const out = await build({
      entryPoints: [path.join(projectRoot, 'src/web/app.ts')],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      minify: true,
      logLevel: 'silent',
    });
    return out.outputFiles[0]!.text;
  });
  bundle.catch(() => (bundle = undefined));
  return bundle;
}

const page = createRoute({
  method: 'get', path: '/', tags: ['pages'], summary: 'The upload page (drag a file; survives reloads and lost connections)',
  responses: { 200: { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } } },
});
const script = createRoute({
  method: 'get', path: '/app.js', tags: ['pages'], summary: "The upload page's script",
  responses: { 200: { description: 'JavaScript module', content: { 'text/javascript': { schema: { type: 'string' } } } } },
});

export function webRoutes() {
  const app = router();
  route(app, page, async function uploadPage(c) {
    return c.html(await readFile(path.join(projectRoot, 'src/web/index.html'), 'utf8'));
  });
  route(app, script, async function uploadPageScript(c) {
    return c.body(await buildWebApp(), 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' });
  });
  return app;
}
