// POST /v1/imports, the import door: a file that lives elsewhere, read by the upload's own
// run and committed once under the key, through the same commit as every other door.
import { createRoute, z } from '@hono/zod-openapi';
import type { Config } from '../../config';
import { problem } from '../../errors';
import { header, headerValues } from '../../http/headers';
import { jsonBody } from '../../http/json-body';
import {
  COMMON_V1_PROBLEMS,
  jsonRequestBody,
  KEY_PROBLEMS,
  locationHeader,
  problems,
  retryAfterHeader,
  route,
  router,
  uploadAnswers,
} from '../../http/openapi';
import { parseIdempotencyKey } from '../../http/parse/idempotency-key';
import { parseExpiresAt, parsePrefer } from '../../http/parse/request-headers';
import { IdempotencyKey, PreferHeader } from '../../http/schemas';
import { requires } from '../../http/scopes';
import { renderOutcome } from '../../http/upload-answer';
import { IMPORT_REFUSALS } from '../failures';
import { parsePipelineName } from '../../pipelines/declared';
import { labelsOf } from '../../http/parse/labels';
import { ADMISSION_PROBLEMS, type Intake } from '../../arrivals/intake';
import type { Importer } from '../importer';
import { nameFromUrl } from '../request';
import { CreateImport, ImportProgress } from './protocol';

export function importRoutes(deps: { importer: Importer; intake: Intake; config: Config }) {
  const { importer, intake, config } = deps;
  const app = router();

  route(app, createImportRoute, async function createImport(c) {
    const key = parseIdempotencyKey(headerValues(c, 'idempotency-key'));
    c.set('idempotencyKey', key);
    const { waitMs } = parsePrefer(header(c, 'prefer'), config.DEFAULT_WAIT_SECONDS, config.MAX_WAIT_SECONDS);
    const body = await jsonBody(c, CreateImport);
    const url = URL.parse(body.url);
    if (!url) throw problem('import_url_invalid', 'The import URL is not an absolute URL.');
    const upload = intake.declare(c, 'import', {
      key,
      contentType: body.contentType ?? 'application/octet-stream',
      ...(body.contentType ? {} : { typeUnknown: true as const }),
      fileName: body.fileName ?? nameFromUrl(url),
      sha256: body.sha256 ?? null,
      expiresAt: parseExpiresAt(body.expiresAt, 'body_invalid'),
      pipeline: parsePipelineName(body.pipeline, 'body_invalid'),
      labels: labelsOf(body.metadata, body.tags),
      storageTarget: body.storageTarget,
    });
    const outcome = await importer.create(upload, body, waitMs);
    if (outcome.kind !== 'importing') return renderOutcome(c, outcome, key, false);
    c.set('outcome', 'processing');
    c.set('workflowId', outcome.workflowId);
    return c.json(outcome.view, 202, { location: `/v1/uploads/${outcome.view.uploadId}`, 'retry-after': '2' });
  });

  return app;
}

const createImportRoute = createRoute({
  method: 'post',
  path: '/',
  tags: ['imports'],
  summary: 'Import a file from a URL, exactly once per Idempotency-Key',
  description:
    "Oncely reads the file from its origin into the store and commits it once under the key, like any upload: dedupe, pipelines, scans, events and retention apply. The read survives a worker's crash and resumes where it was (Range with If-Range when the origin supports them). " +
    'Every hop is checked: http(s) only, no credentials in the URL, no loopback, private, link-local or metadata address (unless IMPORT_ALLOW_PRIVATE_NETWORKS), at most IMPORT_MAX_REDIRECTS redirects. ' +
    '201 with the upload when committed within `Prefer: wait=N`; else 202 with its progress, and Location (`GET /v1/uploads/{id}` shows it until and after the commit). ' +
    "An import that ends without a file records its failure as the key's answer (`import_failed` with the origin's status, `import_too_large`, `import_forbidden_address`, `import_timeout`, `checksum_mismatch`, `type_not_allowed`). " +
    'The same key and body answer the same upload; another body under the key is 422.',
  security: requires('imports:create', { uploadToken: 'replays' }),
  request: {
    headers: z.object({ 'idempotency-key': IdempotencyKey, prefer: PreferHeader.optional() }),
    body: jsonRequestBody(CreateImport, { url: 'https://files.example.com/talk.mp4', sha256: '<hex>' }),
  },
  responses: {
    201: uploadAnswers('Committed (or the stored answer again, marked Idempotent-Replayed).', '')[201],
    202: {
      description: 'Importing: poll Location (the upload).',
      headers: { Location: locationHeader, 'Retry-After': retryAfterHeader },
      content: { 'application/json': { schema: ImportProgress } },
    },
    ...problems(
      ...COMMON_V1_PROBLEMS,
      ...KEY_PROBLEMS,
      'body_invalid',
      'import_url_invalid',
      'import_host_not_allowed',
      ...ADMISSION_PROBLEMS,
      ...IMPORT_REFUSALS,
      'content_type_mismatch',
      'token_exhausted',
      'too_many_imports',
      'upload_failed',
      'temporal_unavailable',
    ),
  },
});
