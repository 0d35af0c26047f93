// One small upload request and its staged copy, for tests of the offer below Temporal
// (a fake client stands in for it).
import type { StagedCopy, UploadRequest } from '../../src/upload/types';

export const fakeRequest: UploadRequest = {
  tenantId: 't1',
  idempotencyKey: 'k1',
  fingerprint: 'fp',
  contentType: 'text/plain',
  fileName: null,
  declaredBytes: 3,
  declaredSha256: null,
};

export const fakeCopy: StagedCopy = {
  attemptId: 'a1',
  fingerprint: 'fp',
  storageKey: 'tenants/t1/k1/a1',
  bytes: 3,
  sha256: 'ab',
  sniffedType: null,
};
