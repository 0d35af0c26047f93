// A resource's id from its path: a UUID, else the resource does not exist (404) — never a
// database error for a malformed id.
import type { Context } from 'hono';
import { problem } from '../errors';
import type { AppEnv } from './env';
import { Uuid } from './schemas';

export function pathId(c: Context<AppEnv>, what: string): string {
  const id = c.req.param('id');
  if (!id || !Uuid.safeParse(id).success) throw problem('not_found', `No such ${what}.`);
  return id;
}
