// Chooses the object store from configuration: S3 when S3_ENDPOINT is set, else a local
// directory under DATA_DIR (the embedded default).
import path from 'node:path';
import type { Config } from '../config';
import { LocalDirectoryStore } from './local-store';
import { S3Store } from './s3-store';
import type { ObjectStore } from './store';

export async function createStore(config: Config): Promise<ObjectStore> {
  if (!config.S3_ENDPOINT) return new LocalDirectoryStore(path.join(config.DATA_DIR, 'objects'));
  const store = new S3Store({
    endpoint: config.S3_ENDPOINT,
    bucket: config.S3_BUCKET,
    region: config.S3_REGION,
    accessKeyId: config.S3_ACCESS_KEY_ID,
    secretAccessKey: config.S3_SECRET_ACCESS_KEY,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    partSizeBytes: config.S3_PART_SIZE_MIB * 1024 * 1024,
    queueSize: config.S3_QUEUE_SIZE,
    singlePutMaxBytes: config.S3_SINGLE_PUT_MAX_MIB * 1024 * 1024,
    publicEndpoint: config.S3_PUBLIC_ENDPOINT,
    encryption: config.S3_SSE ? { sse: config.S3_SSE, kmsKeyId: config.S3_SSE_KMS_KEY_ID } : undefined,
  });
  await store.ensureBucket();
  return store;
}
