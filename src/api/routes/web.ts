// The upload page at `/`. Its script is bundled from src/web/app.ts with esbuild on first
// request (browser target, no Node built-ins) and kept in memory.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Hono } from 'hono';
import { projectRoot } from '../../paths';
import type { AppEnv } from '../env';

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

export function webRoutes() {
  const app = new Hono<AppEnv>();
  app.get('/', async function uploadPage(c) {
    return c.html(await readFile(path.join(projectRoot, 'src/web/index.html'), 'utf8'));
  });
  app.get('/app.js', async function uploadPageScript(c) {
    return c.body(await buildWebApp(), 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' });
  });
  return app;
}
