// The import wing as the list of doors mounts it: POST /v1/imports and /v1/import-batches
// behind the API-key check, and Uppy's URL plugin under an endpoint token (its own
// credential, so mounted before it).
import type { Door } from '../../arrivals/door';
import { IMPORT_ROUTE } from '../request';
import { uppyUrlRoutes } from '../uppy-url/routes';
import { importRoutes } from './routes';
import { importBatchRoutes } from '../batches/routes';
import { ImportBatches } from '../batches/service';
import { createImporter } from '../importer';

export const importDoor: Door = {
  fingerprintRoute: IMPORT_ROUTE,
  requestHeaders: [],
  responseHeaders: [],
  mountPublic: (app, deps) => app.route('/uppy', uppyUrlRoutes({ ...deps, importer: createImporter(deps) })),
  mount: (app, deps) => {
    const { intake, config, idempotency, pipelines, pool, temporal, box } = deps;
    app.route('/v1/imports', importRoutes({ importer: createImporter(deps), intake, config }));
    const batches = new ImportBatches({
      pool,
      temporal,
      secrets: box,
      taskQueue: config.TASK_QUEUE_UPLOADS,
      maxOpen: config.TENANT_MAX_OPEN_IMPORT_BATCHES,
      allowPrivateNetworks: config.IMPORT_ALLOW_PRIVATE_NETWORKS,
      connectMs: config.IMPORT_CONNECT_SECONDS * 1000,
    });
    app.route('/v1/import-batches', importBatchRoutes({ idempotency, batches, pipelines }));
  },
};
