// Images as the app mounts them: an upload's variants under /v1/uploads, signed image URLs
// (their own credential) under /v1/images, and the tenant's presets. Variants render in a
// run of their own (workflows/images/image-variant.ts).
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Pool } from '../db/pool';
import type { IdempotentRouteOptions } from '../http/idempotent-route';
import type { Wing } from '../http/wing';
import type { SecretBox } from '../secret-box';
import type { ObjectStore } from '../storage/store';
import { imagePresetRoutes } from './preset-routes';
import { signedImageRoutes, uploadImageRoutes } from './variant-routes';
import { ImageVariants } from './variants';

export function imageWing(deps: {
  config: Config;
  pool: Pool;
  store: ObjectStore;
  box: SecretBox;
  temporal: Client;
  idempotency: IdempotentRouteOptions;
}): Wing {
  const { config } = deps;
  const images = {
    ...deps,
    images: new ImageVariants({
      pool: deps.pool,
      temporal: deps.temporal,
      taskQueue: config.TASK_QUEUE_UPLOADS,
      transcodeQueue: config.TASK_QUEUE_TRANSCODE,
      maxPerUpload: config.IMAGE_MAX_VARIANTS_PER_UPLOAD,
      maxRendersInFlight: config.TENANT_MAX_RENDERS_IN_FLIGHT,
    }),
    publicUrl: config.PUBLIC_URL,
    maxUrlSeconds: config.DOWNLOAD_URL_MAX_SECONDS,
    maxRenderCost: config.IMAGE_MAX_RENDER_COST,
  };
  return {
    mountPublic: (app) => app.route('/v1/images', signedImageRoutes(images)),
    mount: (app) => {
      app.route('/v1/uploads', uploadImageRoutes(images));
      app.route(
        '/v1/image-presets',
        imagePresetRoutes({
          idempotency: deps.idempotency,
          limits: { presets: config.TENANT_MAX_IMAGE_PRESETS, versions: config.IMAGE_PRESET_MAX_VERSIONS },
        }),
      );
    },
  };
}
