// The upload's record as the app mounts it, beside the upload routes under /v1/uploads: its
// changes (PATCH), versions, legal hold and restore. Metadata and tags arrive with the upload through every door
// (src/http/parse/labels.ts); the list filters on them (src/db/queries/uploads.ts).
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Pool } from '../db/pool';
import type { WebhookRetrySchedule } from '../downstream/types';
import type { IdempotentRouteOptions } from '../http/idempotent-route';
import type { Wing } from '../http/wing';
import { RecordEditor } from './editor';
import { recordRoutes } from './routes';
import { holdRoutes } from './hold-routes';
import { LegalHolds } from './holds';
import { restoreRoutes } from './restore-routes';
import type { Deletions } from '../lifecycle/deletions';
import type { ObjectStore } from '../storage/store';

export function recordWing(deps: {
  config: Config;
  pool: Pool;
  temporal: Client;
  webhookRetry: WebhookRetrySchedule;
  idempotency: IdempotentRouteOptions;
  deletions: Deletions;
  store: ObjectStore;
}): Wing {
  const service = { pool: deps.pool, temporal: deps.temporal, taskQueue: deps.config.TASK_QUEUE_UPLOADS, webhookRetry: deps.webhookRetry };
  const app = recordRoutes({
    editor: new RecordEditor({ ...service, maxVersions: deps.config.RECORD_MAX_VERSIONS }),
    idempotency: deps.idempotency,
  });
  app.route('/', holdRoutes({ holds: new LegalHolds({ ...service, store: deps.store }) }));
  app.route('/', restoreRoutes({ pool: deps.pool, deletions: deps.deletions }));
  return { mount: (api) => api.route('/v1/uploads', app) };
}
