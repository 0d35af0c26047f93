// An import's size is reserved under the tenant's byte quotas as soon as it is known: when
// the origin declares it (before any byte is stored), and again once the file is read (its
// stored size, before the commit). A quota it would pass refuses the import (the refusal is
// the key's answer, like the import's own) and whatever was stored goes.
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from '../../src/db/pool';
import { ByteQuotaExceeded, reserveImportedBytes } from '../../src/db/queries/byte-quotas';
import type { ObjectStore } from '../../src/storage/store';
import type { ImportSpec } from '../../src/temporal/definitions';
import { byteQuotaProblem, quotaRefusal } from '../../src/upload/byte-quota';

/** The reservation needs to last only from the read to the commit, the next step. */
const IMPORT_RESERVATION_SECONDS = 3600;

export async function reserveRead(deps: { pool: Pool; store: ObjectStore }, spec: ImportSpec, bytes: number): Promise<void> {
  try {
    await reserveImportedBytes(deps.pool, spec.uploadId, bytes, IMPORT_RESERVATION_SECONDS);
  } catch (err) {
    if (!(err instanceof ByteQuotaExceeded)) throw err;
    await deps.store.delete(spec.storageKey);
    throw ApplicationFailure.nonRetryable(byteQuotaProblem(quotaRefusal(err)).detail, 'byte_quota_exceeded', quotaRefusal(err));
  }
}
