// The import wing as the app mounts it: POST /v1/imports and /v1/import-batches behind the
// API-key check; Uppy's URL plugin under an endpoint token (its own credential, so before
// it) and the WebSockets the plugin follows an import's progress on; and the imports not yet
// committed that GET and DELETE /v1/uploads/{id} show and cancel.
import type { IdempotentRouteOptions } from '../http/idempotent-route';
import type { Intake } from '../arrivals/intake';
import type { DeclaredPipelines } from '../pipelines/declared';
import type { Wing } from '../http/wing';
import { importBatchRoutes } from './batches/routes';
import { ImportBatches } from './batches/service';
import { importRoutes } from './door/routes';
import { createImporter, type ImporterWiring } from './importer';
import { ImportProgressSockets, type ProgressSocketDeps } from './uppy-url/progress';
import { uppyUrlRoutes } from './uppy-url/routes';

export interface ImportWingDeps extends ImporterWiring {
  intake: Intake;
  uppy: ProgressSocketDeps['uppy'];
  idempotency: IdempotentRouteOptions;
  pipelines: DeclaredPipelines;
}

export function importWing(deps: ImportWingDeps): Wing {
  const { pool, temporal, box, config, intake, uppy, idempotency, pipelines } = deps;
  const importer = createImporter(deps);
  const sockets = new ImportProgressSockets({ uppy, pool, importer, maxPerTenant: config.TENANT_MAX_PROGRESS_SOCKETS });
  const batches = new ImportBatches({
    pool,
    temporal,
    secrets: box,
    taskQueue: config.TASK_QUEUE_UPLOADS,
    maxOpen: config.TENANT_MAX_OPEN_IMPORT_BATCHES,
    allowPrivateNetworks: config.IMPORT_ALLOW_PRIVATE_NETWORKS,
    connectMs: config.IMPORT_CONNECT_SECONDS * 1000,
  });
  return {
    mountPublic: (app) => app.route('/uppy', uppyUrlRoutes({ uppy, pool, importer, intake })),
    mount: (app) => {
      app.route('/v1/imports', importRoutes({ importer, intake, config }));
      app.route('/v1/import-batches', importBatchRoutes({ idempotency, batches, pipelines }));
    },
    upgrade: (req, socket, head) => sockets.handleUpgrade(req, socket, head),
    close: () => sockets.close(),
    uncommitted: importer,
  };
}
