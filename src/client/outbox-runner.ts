// The outbox discipline: persist before the first send, update after each attempt,
// remove only on a final answer. A crash or a restart finds the upload (and its key) again.
import type { SendOptions, UploadClient } from './upload-client';
import type { Outbox, PendingUpload, UploadResult } from './types';

export async function sendThroughOutbox(
  client: UploadClient,
  outbox: Outbox,
  pending: PendingUpload,
  so: SendOptions = {},
): Promise<UploadResult> {
  await outbox.put(pending);
  const result = await client.send(pending, {
    ...so,
    onAttempt: (attempt, outcome, delayMs) => {
      void outbox.put(pending).catch(() => {}); // progress only; the upload's result is stored below
      so.onAttempt?.(attempt, outcome, delayMs);
    },
    // A resumable upload's URL is persisted before its first byte goes.
    onUploadUrl: async (p) => {
      await outbox.put(p);
      await so.onUploadUrl?.(p);
    },
  });
  await outbox.remove(pending.id);
  return result;
}

/** Sends everything still pending (on start, when back online, on a timer). */
export async function drainOutbox(
  client: UploadClient,
  outbox: Outbox,
  so: SendOptions = {},
): Promise<{ pending: PendingUpload; result?: UploadResult; error?: unknown }[]> {
  const out = [];
  for (const pending of await outbox.list()) {
    try {
      out.push({ pending, result: await sendThroughOutbox(client, outbox, pending, so) });
    } catch (error) {
      out.push({ pending, error });
    }
  }
  return out;
}
