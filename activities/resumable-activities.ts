// The resumable session's lifecycle step that belongs to its workflow: expiry. A session
// idle for its expiry window is deleted with everything it holds in the store (the
// multipart upload, the tail object), and the run then ends, freeing the key.
import type { Pool } from '../src/db/pool';
import { expireIfIdle } from '../src/db/queries/sessions';
import { discardSessionObjects } from '../src/sessions/cleanup';
import type { ObjectStore } from '../src/storage/store';

export interface ResumableActivityDeps {
  pool: Pool;
  store: ObjectStore;
}

export function createResumableActivities({ pool, store }: ResumableActivityDeps) {
  return {
    async expireIdleSession(sessionId: string, idleSeconds: number): Promise<{ expired: boolean; secondsLeft: number }> {
      const { secondsLeft, expired } = await expireIfIdle(pool, sessionId, idleSeconds);
      if (expired) await discardSessionObjects(store, expired);
      // A session already gone (terminated) ends the wait too.
      return { expired: secondsLeft <= 0, secondsLeft };
    },
  };
}
