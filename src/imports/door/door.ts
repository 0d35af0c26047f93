// The import wing as the list of doors mounts it: POST /v1/imports and /v1/import-batches
// behind the API-key check, and Uppy's URL plugin under an endpoint token (its own
// credential, so mounted before it).
import type { Door } from '../../arrivals/door';
import { IMPORT_ROUTE } from '../request';
import { uppyUrlRoutes } from '../uppy-url/routes';
import { importRoutes } from './routes';
import { importBatchRoutes } from '../batches/routes';

export const importDoor: Door = {
  fingerprintRoute: IMPORT_ROUTE,
  requestHeaders: [],
  responseHeaders: [],
  mountPublic: (app, deps) => app.route('/uppy', uppyUrlRoutes(deps)),
  mount: (app, { importer, intake, config, idempotency, importBatches, pipelines }) => {
    app.route('/v1/imports', importRoutes({ importer, intake, config }));
    app.route('/v1/import-batches', importBatchRoutes({ idempotency, batches: importBatches, pipelines }));
  },
};
