// The one error handler: catalogue errors become problem+json; anything else is logged
// and answered as a bare 500 that leaks no internals.
import type { ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { inputRefusedByDatabase, Problem, problem } from '../errors';
import type { AppEnv } from '../http/env';
import { closesUnreadBody } from '../http/unread-body';
import { problemResponse } from '../http/raw-problem';

export const onError: ErrorHandler<AppEnv> = (err, c) => {
  if (err instanceof Problem) {
    c.set('errorCode', err.code);
    if (err.status >= 500) c.get('log')?.warn({ err: err.cause ?? err, error: err.code }, 'dependency failure');
    // Refused before the whole body arrived (too large, a bad header, storage down): the
    // rest is not read into the next request; the connection closes after a lingering
    // drain (src/http/lingering-close.ts), so the client still reads this answer.
    return problemResponse(err, closesUnreadBody(c) ? { connection: 'close' } : {});
  }
  if (err instanceof HTTPException && err.status < 500) {
    return problemResponse(problem('header_invalid', err.message || undefined));
  }
  const refused = inputRefusedByDatabase(err);
  if (refused) {
    c.set('errorCode', refused.code);
    return problemResponse(refused);
  }
  c.set('errorCode', 'internal_error');
  c.get('log')?.error({ err }, 'unhandled error');
  return problemResponse(problem('internal_error', 'Something went wrong on our side.'));
};

export const onNotFound: NotFoundHandler<AppEnv> = () => problemResponse(problem('not_found', 'No such route.'));
