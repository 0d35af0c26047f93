// The pages: `/` is the Uppy Dashboard (resumable uploads over tus), `/direct` the same
// Dashboard sending straight to the object store (@uppy/aws-s3), both holding an upload
// token minted through the browser's console session (`/setup` holds their import hosts); `/outbox` the one-request page with its IndexedDB outbox. Their scripts (and Uppy's stylesheets) are
// bundled from src/web/ with esbuild on first request (browser target, no CDN, no Node
// built-ins) and kept in memory.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createRoute } from '@hono/zod-openapi';
import { projectRoot } from '../paths';
import { route, router } from '../http/openapi';

interface Bundle {
  js: string;
  css: string;
}

const bundles = new Map<string, Promise<Bundle>>();

export type Entry = 'app' | 'uppy' | 'sw' | 'setup' | 'console';

export function buildWebApp(entry: Entry = 'app'): Promise<Bundle> {
  let bundle = bundles.get(entry);
  if (!bundle) {
    bundle = import('esbuild').then(async ({ build }) => {
      const out = await build({
        entryPoints: [path.join(projectRoot, `src/web/${entry}.ts`)],
        bundle: true,
        write: false,
        outdir: path.join(projectRoot, 'dist-web'), // names only: nothing is written
        // A classic script for the service worker (module workers are not everywhere).
        format: entry === 'sw' ? 'iife' : 'esm',
        platform: 'browser',
        target: 'es2022',
        minify: true,
        logLevel: 'silent',
      });
      const text = (ext: string) => out.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? '';
      return { js: text('.js'), css: text('.css') };
    });
    bundle.catch(() => bundles.delete(entry));
    bundles.set(entry, bundle);
  }
  return bundle;
}

const html = (summary: string, p: string) =>
  createRoute({
    method: 'get',
    path: p,
    tags: ['pages'],
    summary,
    responses: { 200: { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } } },
  });
const asset = (summary: string, p: string, type: string) =>
  createRoute({
    method: 'get',
    path: p,
    tags: ['pages'],
    summary,
    responses: { 200: { description: summary, content: { [type]: { schema: { type: 'string' } } } } },
  });

const uppyPage = html('The upload page: Uppy Dashboard over tus (drag and drop, pause/resume, survives reloads and lost connections)', '/');
const uppyScript = asset("The upload page's script", '/uppy.js', 'text/javascript');
const uppyStyles = asset("The upload page's stylesheet (Uppy's)", '/uppy.css', 'text/css');
const serviceWorker = asset("The upload page's service worker (keeps files' bytes across reloads)", '/sw.js', 'text/javascript');
const directPage = html("The straight-to-storage page: Uppy Dashboard with @uppy/aws-s3 through Oncely's companion routes", '/direct');
const outboxPage = html('The one-request upload page with its IndexedDB outbox', '/outbox');
const outboxScript = asset("The outbox page's script", '/app.js', 'text/javascript');
const setupPage = html(
  "The upload pages' setup: whether this browser's console session can mint their upload tokens, and their import hosts",
  '/setup',
);
const setupScript = asset("The setup page's script", '/setup.js', 'text/javascript');

// The two Uppy pages are one template (src/web/index.html) told which uploader to use.
const UPLOAD_PAGES = {
  tus: {
    title: 'Oncely — exactly-once uploads',
    lead: 'Drop files: each is uploaded exactly once, resumably. Pause, lose the network, reload the page: the upload continues where it stopped, with the same key.',
    nav: '<a href="/direct">Straight-to-storage page</a> · <a href="/outbox">One-request page</a> · <a href="/console">Console</a> · <a href="/setup">Setup</a> · <a href="/docs">API reference</a>',
  },
  s3: {
    title: 'Oncely — exactly-once uploads straight to storage',
    lead: 'Drop files: each goes straight to the object store (large files in parts; small ones as one form post) and is committed exactly once, under the key it got when you added it.',
    nav: '<a href="/">Resumable (tus) page</a> · <a href="/outbox">One-request page</a> · <a href="/console">Console</a> · <a href="/setup">Setup</a> · <a href="/docs">API reference</a>',
  },
} as const;

function uploadPage(uploader: keyof typeof UPLOAD_PAGES) {
  const fields: Record<string, string> = { ...UPLOAD_PAGES[uploader], uploader };
  let html: Promise<string> | undefined;
  return async (c: import('hono').Context) => {
    html ??= readFile(path.join(projectRoot, 'src/web/index.html'), 'utf8').then((t) =>
      t.replace(/\{\{(\w+)\}\}/g, (_, k: string) => fields[k] ?? ''),
    );
    return c.html(await html);
  };
}

export function webRoutes() {
  const app = router();
  const page = (file: string) => async (c: import('hono').Context) =>
    c.html(await readFile(path.join(projectRoot, 'src/web', file), 'utf8'));
  const served = (entry: Entry, part: keyof Bundle, type: string) => async (c: import('hono').Context) =>
    c.body((await buildWebApp(entry))[part], 200, { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'no-cache' });
  route(app, uppyPage, uploadPage('tus'));
  route(app, uppyScript, served('uppy', 'js', 'text/javascript'));
  route(app, uppyStyles, served('uppy', 'css', 'text/css'));
  route(app, serviceWorker, served('sw', 'js', 'text/javascript'));
  route(app, directPage, uploadPage('s3'));
  route(app, outboxPage, page('outbox.html'));
  route(app, outboxScript, served('app', 'js', 'text/javascript'));
  route(app, setupPage, page('setup.html'));
  route(app, setupScript, served('setup', 'js', 'text/javascript'));
  return app;
}
