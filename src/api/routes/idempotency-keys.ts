// GET /v1/idempotency-keys/:key — poll an upload by its key: the stored answer once
// completed, the workflow's phase while it runs.
import { Hono } from 'hono';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Pool } from '../../db/pool';
import { findKey } from '../../db/queries/idempotency-keys';
import { dependency, problem } from '../../errors';
import { uploadWorkflowId } from '../../temporal/ids';
import { searchAttributes } from '../../temporal/names';
import type { AppEnv } from '../env';

export function idempotencyKeyRoutes(deps: { pool: Pool; temporal: Client }) {
  const app = new Hono<AppEnv>();

  app.get('/:key', async function getIdempotencyKey(c) {
    const tenantId = c.get('tenantId');
    const key = c.req.param('key');
    const row = await dependency('database_unavailable', () => findKey(deps.pool, tenantId, key));
    if (row) {
      return c.json({
        idempotencyKey: key,
        state: 'completed',
        status: row.response_status,
        uploadId: row.upload_id,
        response: JSON.parse(row.response_body),
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
        phase: description.typedSearchAttributes.get(searchAttributes.phase) ?? null,
        workflowId: description.workflowId,
      },
      200,
      running ? { 'retry-after': '2' } : {},
    );
  });

  return app;
}
