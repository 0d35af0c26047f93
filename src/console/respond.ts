// What every console route answers with: a page, a redirect after an action, a problem shown
// in the console's frame. An action's Idempotency-Key is the once-key its form was drawn with.
import type { Client } from '@temporalio/client';
import type { Context } from 'hono';
import type { AppEnv } from '../http/env';
import type { Pool } from '../db/pool';
import { ApiError, type InProcessApi } from './api';
import type { ConsoleCaller, ConsoleSessions } from './sessions';
import { errorPage } from './views/error';
import type { Fragment } from './views/kit';

export type ConsoleEnv = AppEnv & { Variables: AppEnv['Variables'] & { caller: ConsoleCaller } };
export type C = Context<ConsoleEnv>;

export interface ConsoleDeps {
  pool: Pool;
  api: InProcessApi;
  sessions: ConsoleSessions;
  ttlSeconds: number;
  publicUrl?: string;
  /** Where an upload's run is shown (the Temporal UI), and its namespace. */
  temporalUi?: { url: string; namespace: string };
  /** The operator's page: the task queues to describe. */
  temporal?: { client: Client; namespace: string; queues: string[] };
}

/** The fixed messages an action's redirect may show (the query names one; nothing else is echoed). */
export const NOTICES: Record<string, string> = {
  deleted: 'The upload is being deleted; its erasure is shown below as it happens.',
  held: 'The legal hold is placed: nothing deletes the upload until it is released.',
  'held-in-store':
    'The legal hold is placed, in Oncely and in the store (S3 Object Lock): nothing deletes the upload until it is released, not even a delete sent to the bucket.',
  released: 'The legal hold is released.',
  restored: 'Restored: the upload is back as it was.',
  reprocessing: 'Re-processing started with the latest pipeline version.',
  redelivered: 'Redelivery started; its attempts appear below.',
  recovering: 'Every event of the last day that failed for this endpoint is being redelivered.',
  revoked: 'Revoked.',
  'not-active': "Nothing left to revoke: it is revoked already (or is not this tenant's).",
  'tenant-deleting': 'The tenant is closed and its erasure is under way; its status shows when it is done.',
  cancelled: 'Cancelling: work under way finishes, nothing new starts.',
  paused: 'Paused: imports under way finish, no new one starts.',
  'migration-paused': 'Paused: the moves under way finish (each upload whole), no new one starts.',
  'migration-cancelled': 'Cancelling: the moves under way finish; what moved stays moved.',
  resumed: 'Resumed.',
  'signed-out': 'Signed out.',
};

/** The notice a redirect named, if it is one of ours. */
export function noticeOf(c: C): string | undefined {
  return NOTICES[c.req.query('notice') ?? ''];
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Runs an action as the session (a tenant's, unless `as` names another kind) with the form's
 * once-key; 303 to where it says, or the problem shown.
 */
export async function act<K extends ConsoleCaller>(
  c: C,
  run: (caller: K, once: string, form: Record<string, unknown>) => Promise<string>,
  as: (c: C) => K = tenantOnly as (c: C) => K,
) {
  try {
    const caller = as(c);
    const form = await c.req.parseBody({ all: true });
    return c.redirect(await run(caller, onceOf(form), form), 303);
  } catch (err) {
    return problemPage(c, err);
  }
}

export function html(c: C | Context, body: Fragment, status = 200) {
  return (c as C).html(body as string, status as 200);
}

/** Pages of a tenant's data: an operator session has none (403). */
export function tenantOnly(c: C): ConsoleCaller & { kind: 'tenant' } {
  const caller = c.get('caller');
  if (caller.kind !== 'tenant')
    throw new ApiError({
      status: 403,
      code: 'operator_session',
      title: 'An operator session has no tenant data; sign in with a tenant API key.',
    });
  return caller;
}

export function onceOf(form: Record<string, unknown>): string {
  const once = typeof form.once === 'string' && UUID.test(form.once) ? form.once : crypto.randomUUID();
  return `console-${once}`;
}

export function shown(err: unknown): { status: number; message: string } {
  if (err instanceof ApiError) return { status: err.problem.status, message: err.problem.detail ?? err.problem.title };
  throw err;
}

export function problemPage(c: C, err: unknown) {
  const { status, message } = shown(err);
  return c.html(errorPage(status, message, c.get('caller')) as string, status as 400);
}

export function notFound(c: C) {
  return c.html(errorPage(404, 'Nothing here.', c.get('caller')) as string, 404);
}

/** A same-origin console path to return to after signing in, or undefined. */
export function safeNext(next: string | undefined): string | undefined {
  return next && /^\/console(\/[A-Za-z0-9/_-]*)?$/.test(next) ? next : undefined;
}

/** A date field's day as an instant (the filter form sends days). */
export function dayStart(day: string | undefined): string | undefined {
  return day && /^\d{4}-\d{2}-\d{2}$/.test(day) ? `${day}T00:00:00Z` : day;
}
