// Which database errors are the request's fault (400) and which are the database's (503):
// data exceptions and CHECK violations are bad input; connection, uniqueness and resource
// errors are not, whichever path (dependency() or the error handler) meets them.
import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { dependency, inputRefusedByDatabase, Problem } from '../../src/errors';
import { onError } from '../../src/api/problem-handler';
import type { AppEnv } from '../../src/http/env';

const pgError = (code: string) => Object.assign(new Error(`pg ${code}`), { code });

describe('inputRefusedByDatabase', () => {
  it.each(['22003', '22007', '22008', '22P02', '23514'])('%s is bad input', (code) => {
    expect(inputRefusedByDatabase(pgError(code))).toMatchObject({ code: 'value_out_of_range', status: 400 });
  });

  it.each(['08006', '57P01', '53300', '23505', '40001', 'ECONNREFUSED'])('%s is not', (code) => {
    expect(inputRefusedByDatabase(pgError(code))).toBeUndefined();
  });

  it('dependency() answers 400 for bad input and 503 for the rest, without Retry-After on the 400', async () => {
    const bad = await dependency('database_unavailable', () => Promise.reject(pgError('22003'))).catch((e: Problem) => e);
    expect(bad).toMatchObject({ status: 400, retryAfter: undefined });
    const down = await dependency('database_unavailable', () => Promise.reject(pgError('08006'))).catch((e: Problem) => e);
    expect(down).toMatchObject({ code: 'database_unavailable', status: 503 });
  });

  it('the error handler answers 400 problem+json for a data exception no dependency() wrapped', async () => {
    const app = new Hono<AppEnv>();
    app.get('/x', () => {
      throw pgError('22008');
    });
    app.onError(onError);
    const res = await app.request('/x');
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(((await res.json()) as { error: string }).error).toBe('value_out_of_range');
  });
});
