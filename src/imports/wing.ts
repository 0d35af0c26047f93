// The import wing's part of the HTTP server beyond its routes (those the list of doors mounts,
// src/imports/door/door.ts): the WebSockets Uppy's URL plugin follows an import's progress on.
import type { Config } from '../config';
import type { Pool } from '../db/pool';
import type { Wing } from '../http/wing';
import type { Importer } from './importer';
import { ImportProgressSockets, type ProgressSocketDeps } from './uppy-url/progress';

export function importWing(deps: { config: Config; pool: Pool; importer: Importer; uppy: ProgressSocketDeps['uppy'] }): Wing {
  const sockets = new ImportProgressSockets({
    uppy: deps.uppy,
    pool: deps.pool,
    importer: deps.importer,
    maxPerTenant: deps.config.TENANT_MAX_PROGRESS_SOCKETS,
  });
  return {
    upgrade: (req, socket, head) => sockets.handleUpgrade(req, socket, head),
    close: () => sockets.close(),
  };
}
