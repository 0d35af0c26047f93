// Reads a JSON request body and validates it with the route's schema (the one its OpenAPI
// description is generated from). The body is read with a hard limit while it streams:
// a declared or received size past it answers 413 at once (the connection then closes after
// a lingering drain: src/api/problem-handler.ts), so a huge body never sits in memory. Strings with NUL characters are refused (Postgres text
// cannot hold them; without this check they surfaced as a database outage).
import type { Context, MiddlewareHandler } from 'hono';
import type { z } from 'zod';
import { problem } from '../errors';
import type { AppEnv } from './env';
import { header } from './headers';

/** The largest JSON body any route accepts. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;

const bodyTexts = new WeakMap<Request, string>();

function tooLarge(limit: number) {
  return problem('payload_too_large', `The request body is larger than ${limit} bytes.`, { extra: { maxBytes: limit } });
}

/** The request body as text, at most `limit` bytes; read once per request and shared. */
export async function bodyText(c: Context<AppEnv>, limit = MAX_JSON_BODY_BYTES): Promise<string> {
  const raw = c.req.raw;
  const cached = bodyTexts.get(raw);
  if (cached !== undefined) return cached;
  const declared = header(c, 'content-length');
  if (declared !== undefined && /^\d+$/.test(declared.trim()) && Number(declared) > limit) throw tooLarge(limit);
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (raw.body) {
    const reader = raw.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      // Stop reading: the rest stays in the socket, which closes after the answer.
      if (size > limit) {
        reader.releaseLock();
        throw tooLarge(limit);
      }
      chunks.push(value);
    }
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw problem('body_invalid', 'The request body is not valid UTF-8.');
  }
  bodyTexts.set(raw, text);
  return text;
}

/**
 * Middleware for a route whose body may be larger than MAX_JSON_BODY_BYTES (an import batch):
 * reads it first with its own limit, so the router's checks and the handler share that read.
 */
export function bodyLimit(limit: number): MiddlewareHandler<AppEnv> {
  return async function readLargeBody(c, next) {
    await bodyText(c, limit);
    await next();
  };
}

const parsedBodies = new WeakMap<Request, { schema: z.ZodType; data: unknown }>();

/**
 * The request's JSON body, valid under `schema` (unknown fields are refused: the schemas are
 * strict). The router validates it before the handler runs (src/api/openapi.ts), so the
 * handler's own call returns that result; `example` is shown when the body is not JSON.
 */
export async function jsonBody<T>(c: Context<AppEnv>, schema: z.ZodType<T>, example?: unknown): Promise<T> {
  const done = parsedBodies.get(c.req.raw);
  if (done?.schema === schema) return done.data as T;
  const text = await bodyText(c);
  let json: unknown;
  let nul = false;
  try {
    json = JSON.parse(text, (k, v: unknown) => {
      if (k.includes('\0') || (typeof v === 'string' && v.includes('\0'))) nul = true;
      return v;
    });
  } catch {
    throw problem('body_invalid', `Send a JSON object${example === undefined ? '' : `, for example ${JSON.stringify(example)}`}.`);
  }
  if (nul) throw problem('body_invalid', 'JSON strings must not contain NUL (\\u0000) characters.');
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw problem('body_invalid', parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
  parsedBodies.set(c.req.raw, { schema, data: parsed.data });
  return parsed.data;
}
