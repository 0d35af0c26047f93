// A creation that would pass a tenant quota answers 409 quota_exceeded (delete or revoke
// one first); other database failures are the usual 503.
import { QuotaReached } from '../db/queries/quotas';
import { dependency, problem } from '../errors';

export async function withinQuota<T>(create: () => Promise<T>): Promise<T> {
  return dependency('database_unavailable', async () => {
    try {
      return await create();
    } catch (err) {
      if (err instanceof QuotaReached)
        throw problem('quota_exceeded', `Quota reached: ${err.message}; remove one first.`, { extra: { limit: err.limit } });
      throw err;
    }
  });
}
