// The codec server operators point the Temporal UI (or `temporal --codec-endpoint`) at:
// Temporal's remote codec contract, POST {endpoint}/decode and /encode with
// `{"payloads": [{"metadata": {k: base64}, "data": base64}]}`, behind ADMIN_TOKEN. Decoding
// asks PostgreSQL for every key (no cache): a payload whose key was destroyed (its upload
// erased) decodes to the JSON string "erased", never an error page. Encoding (a signal or
// input typed in the UI) seals under the deployment's key.
import { createRoute, z } from '@hono/zod-openapi';
import type { Handler } from 'hono';
import type { AppEnv } from '../http/env';
import type { Payload } from '@temporalio/common';
import { dependency, problem } from '../errors';
import { bodyLimit, jsonBody } from '../http/json-body';
import { jsonRequestBody, problems, route, router } from '../http/openapi';
import { UnreadablePayload, type SealingCodec } from './payload-codec';

/** A history page's payloads in one request (the UI sends them in batches). */
const MAX_CODEC_BODY_BYTES = 8 * 1024 * 1024;
const MAX_PAYLOADS = 10_000;

const Base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');
const WirePayload = z
  .object({ metadata: z.record(z.string(), Base64).optional(), data: Base64.optional() })
  .strict()
  .openapi('CodecPayload');
const CodecPayloads = z
  .object({ payloads: z.array(WirePayload).max(MAX_PAYLOADS) })
  .strict()
  .openapi('CodecPayloads');
type WirePayload = z.infer<typeof WirePayload>;

const example = { payloads: [{ metadata: { encoding: 'YmluYXJ5L2VuY3J5cHRlZA==' }, data: 'c2VhbGVk' }] };

const codecRoute = (action: 'decode' | 'encode', summary: string) =>
  createRoute({
    method: 'post',
    path: `/codec/${action}`,
    tags: ['operators'],
    summary,
    security: [{ adminToken: [] }],
    request: {
      headers: z.object({
        'x-namespace': z
          .string()
          .optional()
          .openapi({ description: 'The namespace the Temporal UI reads (the keys are the same in every one).' }),
      }),
      body: jsonRequestBody(CodecPayloads, example),
    },
    responses: {
      200: { description: 'The payloads, in order', content: { 'application/json': { schema: CodecPayloads } } },
      ...problems(
        'unauthorized',
        'not_found',
        'body_invalid',
        'payload_too_large',
        'payload_encryption_off',
        'database_unavailable',
        'internal_error',
      ),
    },
  });

const fromWire = (p: WirePayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});
const toWire = (p: Payload): WirePayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

export function codecRoutes(deps: { codec?: SealingCodec }) {
  const app = router();
  const handle = (action: 'decode' | 'encode'): Handler<AppEnv> =>
    async function codecServer(c) {
      const { payloads } = await jsonBody(c, CodecPayloads);
      const using = deps.codec;
      if (!using) throw problem('payload_encryption_off', 'PAYLOAD_ENCRYPTION is off: payloads are stored as they are.');
      const out = await dependency('database_unavailable', () =>
        (action === 'decode' ? using.decode(payloads.map(fromWire)) : using.encode(payloads.map(fromWire))).catch((err: unknown) => {
          if (err instanceof UnreadablePayload) throw problem('body_invalid', err.message);
          throw err;
        }),
      );
      return c.json({ payloads: out.map(toWire) });
    };
  app.use('/codec/*', bodyLimit(MAX_CODEC_BODY_BYTES));
  route(app, codecRoute('decode', 'Decode payloads for the Temporal UI or CLI (remote codec)'), handle('decode'));
  route(app, codecRoute('encode', 'Encode payloads typed in the Temporal UI (remote codec)'), handle('encode'));
  return app;
}
