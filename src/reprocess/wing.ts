// Reprocessing as the app mounts it: jobs that run a pipeline again over a tenant's uploads,
// under /v1. The runs are workflows/reprocess/; the service is src/lifecycle/reprocessing.ts.
import type { IdempotentRouteOptions } from '../http/idempotent-route';
import type { Wing } from '../http/wing';
import type { Reprocessing } from '../lifecycle/reprocessing';
import { reprocessRoutes } from './routes';

export function reprocessWing(deps: { idempotency: IdempotentRouteOptions; reprocessing: Reprocessing }): Wing {
  return { mount: (app) => app.route('/v1', reprocessRoutes(deps)) };
}
