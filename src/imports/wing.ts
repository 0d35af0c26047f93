// The import wing's part of the HTTP server beyond its routes (those the list of doors mounts,
// src/imports/door/door.ts): the WebSockets Uppy's URL plugin follows an import's progress on,
// and the imports not yet committed that GET and DELETE /v1/uploads/{id} show and cancel.
import type { Wing } from '../http/wing';
import { createImporter, type ImporterWiring } from './importer';
import { ImportProgressSockets, type ProgressSocketDeps } from './uppy-url/progress';

export function importWing(deps: ImporterWiring & { uppy: ProgressSocketDeps['uppy'] }): Wing {
  const importer = createImporter(deps);
  const sockets = new ImportProgressSockets({
    uppy: deps.uppy,
    pool: deps.pool,
    importer,
    maxPerTenant: deps.config.TENANT_MAX_PROGRESS_SOCKETS,
  });
  return {
    upgrade: (req, socket, head) => sockets.handleUpgrade(req, socket, head),
    close: () => sockets.close(),
    uncommitted: importer,
  };
}
