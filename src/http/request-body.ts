// The request body as a Node stream: the socket's IncomingMessage itself when served by
// @hono/node-server (no copying), else the web stream converted.
import { Readable } from 'node:stream';
import type { Context } from 'hono';
import type { AppEnv } from './env';

export function requestBody(c: Context<AppEnv>): Readable {
  const incoming = c.env?.incoming;
  if (incoming) return incoming;
  const body = c.req.raw.body;
  return body ? Readable.fromWeb(body as import('node:stream/web').ReadableStream) : Readable.from([]);
}
