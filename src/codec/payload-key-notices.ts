// A worker's ear for new data keys (migration 028 NOTIFYs each one on commit): the API makes
// a run's key just before it starts the run, so the key is usually here before the run's
// first activation needs it, and opening that activation costs no statement. A key missed
// (the connection was down, the notice came late) is read by id as before.
import type { Logger } from 'pino';
import { z } from 'zod';
import { ListenConnection } from '../db/listen-connection';
import type { PayloadKeyring } from './payload-codec';

const CHANNEL = 'oncely_payload_key';

const Notice = z.object({ id: z.uuid(), scope: z.string().min(1), wrapped: z.string().min(1) });

export function listenForPayloadKeys(connectionString: string, keyring: PayloadKeyring, log: Logger): Promise<ListenConnection> {
  return ListenConnection.start(connectionString, CHANNEL, log, {
    message: (payload) => {
      const notice = Notice.safeParse(parseJson(payload));
      if (!notice.success) return log.warn({ channel: CHANNEL }, 'ignored a malformed payload key notice');
      // Unwrapped when first asked for; one that does not unwrap here is then read by id, which says why.
      keyring.learn(notice.data);
    },
    lost: () => {}, // keys announced meanwhile are read by id when first asked for
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
