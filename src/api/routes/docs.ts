// /openapi.json (generated from the route definitions and their schemas) and /docs, a
// Swagger UI page served from the swagger-ui-dist package (no CDN: works offline).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { createRoute, z } from '@hono/zod-openapi';
import { problem } from '../../errors';
import { route, router } from '../../http/openapi';

const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Oncely API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="icon" href="/docs/assets/favicon-32x32.png">
</head>
<body>
  <div id="docs"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#docs', deepLinking: true, defaultModelsExpandDepth: 0 });</script>
</body>
</html>`;

const documentRoute = createRoute({
  method: 'get',
  path: '/openapi.json',
  tags: ['pages'],
  summary: 'This OpenAPI 3.1 document',
  responses: { 200: { description: 'OpenAPI 3.1', content: { 'application/json': { schema: { type: 'object' } } } } },
});
const docsPage = createRoute({
  method: 'get',
  path: '/docs',
  tags: ['pages'],
  summary: 'API reference page (Swagger UI over /openapi.json)',
  responses: { 200: { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } } },
});
const docsAsset = createRoute({
  method: 'get',
  path: '/docs/assets/{file}',
  tags: ['pages'],
  summary: "The reference page's scripts and styles",
  request: { params: z.object({ file: z.enum(Object.keys(ASSETS) as [string, ...string[]]) }) },
  responses: { 200: { description: 'A static asset' }, 404: { description: 'No such asset' } },
});

/** `document` is built once, after every route is mounted. */
export function docsRoutes(document: () => unknown) {
  const app = router();
  route(app, documentRoute, (c) => c.json(document()));
  route(app, docsPage, (c) => c.html(PAGE));
  route(app, docsAsset, async function docsAssetFile(c) {
    const file = c.req.param('file')!;
    const type = ASSETS[file];
    if (!type) throw problem('not_found', 'No such asset.');
    return c.body(await readFile(path.join(swaggerDir, file)), 200, { 'content-type': type, 'cache-control': 'public, max-age=86400' });
  });
  return app;
}
