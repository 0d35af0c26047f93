// What a resumable session holds in the store besides its final object: the multipart
// upload (or the local parts) and the tail object. Removed when the session ends without
// a commit (expired, terminated, refused); deleting what is already gone is not an error.
import type { SessionRow } from '../db/queries/sessions';
import type { ObjectStore } from '../storage/store';
import { isAppended } from '../modes';

export async function discardSessionObjects(
  store: ObjectStore,
  session: Pick<SessionRow, 'storage_key' | 'multipart_id' | 'mode'>,
  opts: { object?: boolean } = {},
): Promise<void> {
  // A direct upload of one PUT has no multipart; its object is the client's uncommitted bytes.
  if (session.multipart_id) await store.abortParts(session.storage_key, session.multipart_id);
  if (!isAppended(session.mode)) return void (await store.delete(session.storage_key));
  await deleteTails(store, session.storage_key);
  if (opts.object) await store.delete(session.storage_key);
}

/** The session's tail objects (…/{sessionId}.tail.{offset}); none is needed once it ends. */
export async function deleteTails(store: ObjectStore, storageKey: string): Promise<void> {
  for await (const o of store.list(`${storageKey}.tail.`)) await store.delete(o.key);
}
