// What a resumable session holds in the store besides its final object: the multipart
// upload (or the local parts) and the tail object. Removed when the session ends without
// a commit (expired, terminated, refused); deleting what is already gone is not an error.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { SessionRow } from '../db/queries/sessions';
import type { ObjectStore } from '../storage/store';
import { isAppended } from '../modes';
import { uploadWorkflowId } from '../temporal/ids';

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

/** Ends the run of a session that ended without a commit: its key is free again (its reuse policy allows a new run after a failed one). */
export async function endSessionRun(temporal: Client, s: Pick<SessionRow, 'tenant_id' | 'idempotency_key'>): Promise<void> {
  await temporal.workflow
    .getHandle(uploadWorkflowId(s.tenant_id, s.idempotency_key))
    .terminate('resumable session ended without a commit')
    .catch((err: unknown) => {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    });
}
