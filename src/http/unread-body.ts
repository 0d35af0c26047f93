// Whether an answer sent now should close the connection: the request body has not arrived
// in full and is large (or of unknown length). Node would otherwise read the rest into the
// keep-alive connection before the next request; a few KiB are cheaper to drain than to
// reconnect for, so small bodies keep the connection.
import type { Context } from 'hono';
import type { AppEnv } from './env';

const DRAIN_LIMIT = 64 * 1024;

export function closesUnreadBody(c: Context<AppEnv>): boolean {
  const incoming = c.env?.incoming;
  if (!incoming || incoming.complete) return false;
  const declared = incoming.headers['content-length'];
  return declared === undefined || !/^\d+$/.test(declared) || Number(declared) > DRAIN_LIMIT;
}
