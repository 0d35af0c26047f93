// Downloads as the app mounts them: an upload's content and renditions under /v1/uploads,
// and signed download URLs (their own credential) under /v1/downloads.
import type { Wing } from '../http/wing';
import { signedDownloadRoutes, uploadContentRoutes, type DownloadDeps } from './routes';

export function downloadWing(deps: DownloadDeps): Wing {
  return {
    mountPublic: (app) => app.route('/v1/downloads', signedDownloadRoutes(deps)),
    mount: (app) => app.route('/v1/uploads', uploadContentRoutes(deps)),
  };
}
