// The object store a process uses: the instance's store (the default target) with every
// tenant's registered targets routed by address (src/storage/routed-store.ts).
import type { Config } from '../config';
import type { Pool } from '../db/pool';
import type { SecretBox } from '../secret-box';
import { createStore } from '../storage';
import { RoutedStore } from '../storage/routed-store';
import { TargetDirectory, type TargetClientSettings } from './directory';

/** How a registered target's client is tuned: as the instance's S3 store is (its encryption is the bucket's own default). */
export function targetClientSettings(config: Config): TargetClientSettings {
  const MiB = 1024 * 1024;
  return {
    partSizeBytes: config.S3_PART_SIZE_MIB * MiB,
    queueSize: config.S3_QUEUE_SIZE,
    singlePutMaxBytes: config.S3_SINGLE_PUT_MAX_MIB * MiB,
  };
}

export async function createRoutedStore(config: Config, pool: Pool, box: SecretBox): Promise<{ store: RoutedStore; close: () => void }> {
  const directory = new TargetDirectory({ pool, box, settings: targetClientSettings(config) });
  return { store: new RoutedStore(await createStore(config), directory.resolve), close: () => directory.close() };
}
