// POST /v1/uploads/{id}/steps/{step}/complete: the tenant's decision on an async http.call
// step (it answered the call 202). Sending the same decision again is answered alike.
import { createRoute, z } from '@hono/zod-openapi';
import type { Pool } from '../../db/pool';
import { findUpload } from '../../db/queries/uploads';
import { dependency, problem } from '../../errors';
import type { StepDecisions } from '../../lifecycle/step-decisions';
import { jsonBody } from '../../http/json-body';
import { COMMON_V1_PROBLEMS, problems, route, router, jsonRequestBody } from '../../http/openapi';
import { Uuid } from '../../http/schemas';
import { requires } from '../../http/scopes';

const StepDecisionBody = z
  .object({
    outcome: z.enum(['accept', 'reject']),
    message: z.string().max(500).optional().openapi({ description: 'Why: recorded on the step, and the rejection reason.' }),
    data: z.record(z.string(), z.unknown()).optional().openapi({ description: "Recorded as the step's output." }),
  })
  .strict()
  .openapi('StepDecision');

const completeStepRoute = createRoute({
  method: 'post',
  path: '/{id}/steps/{step}/complete',
  tags: ['pipelines'],
  summary: 'Decide an async http.call step of an upload: accept lets the pipeline go on, reject rejects the upload',
  security: requires('uploads:write'),
  request: {
    params: z.object({
      id: Uuid,
      step: z
        .string()
        .regex(/^\d{1,2}$/)
        .openapi({ description: "The step's index in the pipeline, from 0." }),
    }),
    body: jsonRequestBody(StepDecisionBody, { outcome: 'accept' }),
  },
  responses: {
    200: {
      description: 'Recorded (or the same decision again)',
      content: {
        'application/json': { schema: z.object({ uploadId: Uuid, step: z.number().int(), outcome: z.enum(['accept', 'reject']) }) },
      },
    },
    ...problems(...COMMON_V1_PROBLEMS, 'not_found', 'body_invalid', 'payload_too_large', 'step_not_waiting', 'temporal_unavailable'),
  },
});

export function uploadStepRoutes(deps: { pool: Pool; decisions: StepDecisions }) {
  const app = router();
  route(app, completeStepRoute, async function completeUploadStep(c) {
    const id = c.req.param('id')!;
    const step = Number(c.req.param('step'));
    const upload = Uuid.safeParse(id).success
      ? await dependency('database_unavailable', () => findUpload(deps.pool, c.get('tenantId'), id))
      : undefined;
    if (!upload || !Number.isInteger(step)) throw problem('not_found', 'No such upload.');
    const body = await jsonBody(c, StepDecisionBody);
    await deps.decisions.decide(upload.id, { step, outcome: body.outcome, message: body.message ?? null, data: body.data ?? null });
    return c.json({ uploadId: upload.id, step, outcome: body.outcome }, 200);
  });
  return app;
}
