// What the modes whose bytes go straight to the store (direct uploads, Uppy) are built from:
// the session core, the store, the receiver that commits, and the key that signs their URLs.
import type { Pool } from '../db/pool';
import type { SecretBox } from '../secret-box';
import type { SessionRegistry } from '../sessions/registry';
import type { ObjectStore } from '../storage/store';
import type { UploadReceiver } from '../upload/receive';

export interface SignedModeDeps {
  pool: Pool;
  store: ObjectStore;
  sessions: SessionRegistry;
  receiver: UploadReceiver;
  /** Signs the URLs and tokens the mode hands out. */
  box: SecretBox;
  /** A session not completed within this is aborted and its key freed. */
  expirySeconds: number;
  /** How long each signed URL lasts (never past its session). */
  urlSeconds: number;
}
