// What a client is told when an upload would pass one of its tenant's byte quotas: 413
// byte_quota_exceeded with the quota, its limit and what is left, before any byte is kept.
import { ByteQuotaExceeded, type ByteQuotaName } from '../db/queries/byte-quotas';
import { problem, type Problem } from '../errors';

/** What the refusal carries (also a commit failure's details, across the workflow). */
export interface QuotaRefusal {
  quota: ByteQuotaName;
  limit: number;
  remaining: number;
  requested: number;
}

export function quotaRefusal(err: ByteQuotaExceeded): QuotaRefusal {
  return { quota: err.quota, limit: err.limit, remaining: err.remaining, requested: err.requested };
}

export function byteQuotaProblem(r: QuotaRefusal, cause?: unknown): Problem {
  const unit = r.quota === 'maxUploadsPerMonth' ? 'uploads' : 'bytes';
  return problem(
    'byte_quota_exceeded',
    `The tenant's ${r.quota} is ${r.limit} ${unit}; ${r.remaining} ${unit} are left and this upload needs ${r.requested}.`,
    { extra: { ...r }, ...(cause ? { cause } : {}) },
  );
}

/** Runs `fn`, answering a byte quota's refusal as the client's problem. */
export async function refusingOverQuota<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ByteQuotaExceeded) throw byteQuotaProblem(quotaRefusal(err));
    throw err;
  }
}
