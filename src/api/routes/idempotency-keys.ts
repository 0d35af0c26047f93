// GET /v1/idempotency-keys/:key — poll an upload by its key: the stored answer once
// completed, the workflow's phase while it runs.
import { createRoute, z } from '@hono/zod-openapi';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Pool } from '../../db/pool';
import { findKey, UPLOAD_ROUTE } from '../../db/queries/idempotency-keys';
import { dependency, problem } from '../../errors';
import { uploadWorkflowId } from '../../temporal/ids';
import { searchAttributes } from '../../temporal/names';
import type { SecretBox } from '../../secret-box';
import { answerContext } from '../../http/idempotent-route';
import { COMMON_V1_PROBLEMS, problems, retryAfterHeader, route, router } from '../../http/openapi';
import { IdempotencyKey } from '../../http/schemas';
import { IdempotencyKeyState, KeyRequests } from '../schemas';
import { keyRequests } from '../../db/queries/key-requests';
import type { Context } from 'hono';
import type { AppEnv } from '../../http/env';
import { redactSecrets } from '../../http/redact';
import { callingToken, requires } from '../../http/scopes';
import { findUpload } from '../../db/queries/uploads';

const getKeyRoute = createRoute({
  method: 'get',
  path: '/{key}',
  tags: ['uploads'],
  summary: 'What happened under an Idempotency-Key: the stored answer, or the phase while it runs',
  security: requires('uploads:read', { uploadToken: true }),
  request: { params: z.object({ key: z.string().openapi({ description: 'The Idempotency-Key, URL-encoded.' }) }) },
  responses: {
    200: {
      description: 'Completed (with the stored answer), processing (poll again after Retry-After) or failed.',
      headers: { 'Retry-After': retryAfterHeader },
      content: { 'application/json': { schema: IdempotencyKeyState } },
    },
    ...problems(...COMMON_V1_PROBLEMS, 'idempotency_key_invalid', 'not_found', 'temporal_unavailable'),
  },
});

const keyRequestsRoute = createRoute({
  method: 'get',
  path: '/{key}/requests',
  tags: ['uploads'],
  summary: 'Every request an Idempotency-Key answered or refused: the first answer, replays, attaches, reuse',
  description:
    'Written behind the answers (about a second later), per tenant and key: the first 50 in order with their time, ' +
    'X-Request-Id, route, status and outcome, and how many came in all. Requests refused before the key was looked at ' +
    "(a bad header, a missing scope, a quota) are not the key's and are not listed.",
  security: requires('uploads:read'),
  request: { params: z.object({ key: z.string().openapi({ description: 'The Idempotency-Key, URL-encoded.' }) }) },
  responses: {
    200: { description: 'The requests', content: { 'application/json': { schema: KeyRequests } } },
    ...problems(...COMMON_V1_PROBLEMS, 'idempotency_key_invalid', 'not_found'),
  },
});

export function idempotencyKeyRoutes(deps: { pool: Pool; temporal: Client; box: SecretBox }) {
  const app = router();

  route(app, getKeyRoute, async function getIdempotencyKey(c) {
    const key = IdempotencyKey.safeParse(c.req.param('key'));
    if (!key.success) throw problem('idempotency_key_invalid', key.error.issues[0]?.message);
    return keyState(c, key.data);
  });

  route(app, keyRequestsRoute, async function getKeyRequests(c) {
    const key = IdempotencyKey.safeParse(c.req.param('key'));
    if (!key.success) throw problem('idempotency_key_invalid', key.error.issues[0]?.message);
    const seen = await dependency('database_unavailable', () => keyRequests(deps.pool, c.get('tenantId'), key.data));
    if (seen.total === 0)
      throw problem(
        'not_found',
        'No request with this Idempotency-Key is recorded (yet: they are written about a second after their answer).',
      );
    return c.json(
      {
        idempotencyKey: key.data,
        total: seen.total,
        items: seen.items.map((r) => ({
          n: Number(r.n),
          at: r.at.toISOString(),
          requestId: r.request_id,
          method: r.method,
          route: r.route,
          status: r.status,
          outcome: r.outcome,
        })),
      },
      200,
    );
  });

  async function keyState(c: Context<AppEnv>, key: string) {
    const tenantId = c.get('tenantId');
    const row = await dependency('database_unavailable', () => findKey(deps.pool, tenantId, key));
    // An upload token sees the keys of the uploads it made, once committed.
    const token = callingToken(c);
    if (
      token &&
      !(
        row?.upload_id &&
        (await dependency('database_unavailable', () => findUpload(deps.pool, tenantId, row.upload_id!)))?.token_id === token.id
      )
    )
      throw problem('not_found', 'No upload of this upload token uses this Idempotency-Key (or it is still being committed).');
    // A claim by another route's request that is still running has no answer yet.
    if (row && (row.response_body as string | null) === null) {
      return c.json({ idempotencyKey: key, state: 'processing', phase: null, workflowId: null }, 200, { 'retry-after': '1' });
    }
    if (row) {
      return c.json({
        idempotencyKey: key,
        state: 'completed',
        status: row.response_status,
        uploadId: row.upload_id,
        // Answers of the other mutating routes are stored sealed and may hold a secret that
        // is shown once: only a replay of that request (same key, same body) shows it again.
        response:
          row.route === UPLOAD_ROUTE
            ? JSON.parse(row.response_body)
            : redactSecrets(JSON.parse(deps.box.open(row.response_body, answerContext(tenantId, key)))),
        createdAt: row.created_at.toISOString(),
        completedAt: row.completed_at.toISOString(),
        expiresAt: row.expires_at.toISOString(),
      });
    }
    const description = await dependency('temporal_unavailable', async () => {
      try {
        return await deps.temporal.workflow.getHandle(uploadWorkflowId(tenantId, key)).describe();
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return undefined;
        throw err;
      }
    });
    if (!description) throw problem('not_found', 'No upload uses this Idempotency-Key.');
    const running = description.status.name === 'RUNNING';
    return c.json(
      {
        idempotencyKey: key,
        state: running ? 'processing' : 'failed',
        phase: description.typedSearchAttributes.get(searchAttributes.phase) ?? (running ? 'receiving' : null),
        workflowId: description.workflowId,
      },
      200,
      running ? { 'retry-after': '2' } : {},
    );
  }

  return app;
}
