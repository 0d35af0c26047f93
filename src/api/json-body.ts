// Reads a JSON request body and validates it with the route's schema (the one its OpenAPI
// description is generated from); any failure is `body_invalid` naming the fields.
import type { Context } from 'hono';
import type { z } from 'zod';
import { problem } from '../errors';
import type { AppEnv } from './env';

export async function jsonBody<T>(c: Context<AppEnv>, schema: z.ZodType<T>, example: string): Promise<T> {
  let json: unknown;
  try {
    json = await c.req.json();
  } catch {
    throw problem('body_invalid', `Send a JSON object, for example ${example}.`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw problem('body_invalid', parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
  return parsed.data;
}
