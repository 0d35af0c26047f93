// A URL this API signed (a download, an image variant) acts as the API key that asked for it
// (src/tokens/parent.ts): checked now, after its signature, as that key's own request would be.
import type { Context } from 'hono';
import type { Pool } from '../db/pool';
import { problem } from '../errors';
import type { AppEnv } from './env';
import { actAsParent, parentAccess } from './scopes';
import { currentPrincipal, parseParent } from '../tokens/parent';

/** What the key behind a signed URL must hold now: what it needed to sign it. */
const SIGNED_READS = parentAccess('uploads:read');

/** `by`: the URL's signed `by` query (the key that asked for it). */
export async function actAsSigner(c: Context<AppEnv>, pool: Pool, tenantId: string, by: string): Promise<void> {
  const parent = parseParent(by);
  if (!parent) throw problem('signature_invalid', 'The URL names no API key that asked for it; ask for a new one.');
  await actAsParent(c, tenantId, parent, () => currentPrincipal(pool, tenantId, parent), SIGNED_READS);
}
