// Derived credentials (a companion endpoint, a signed URL, a progress socket) name the
// credential that minted them, their parent, and are honoured only as far as the parent
// would be now: an unrevoked API key holding the route's scope, or an unrevoked upload
// token where the route takes one. A derived credential never outlives or outranks its parent.
import { heldScopes, type Principal } from '../credentials';
import type { Queryable } from '../db/pool';
import { findActiveKeyById } from '../db/queries/tenants';
import { findUploadToken } from '../db/queries/upload-tokens';
import { credentialOf } from './upload-tokens';

/** The credential a derived one was minted by. */
export interface Parent {
  kind: 'key' | 'token';
  id: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PREFIX = { key: 'k', token: 't' } as const;

export function parentOf(principal: Principal): Parent {
  return { kind: principal.kind, id: principal.id };
}

/** The parent as a derived credential carries it (signed with the rest): `k-<uuid>` or `t-<uuid>`. */
export function formatParent(p: Parent): string {
  return `${PREFIX[p.kind]}-${p.id}`;
}

/** The parent a derived credential names; undefined when it names none (or not in this form). */
export function parseParent(text: string | undefined): Parent | undefined {
  const m = text ? /^([kt])-(.+)$/.exec(text) : null;
  if (!m || !UUID.test(m[2]!)) return undefined;
  return { kind: m[1] === 'k' ? 'key' : 'token', id: m[2]! };
}

/** The parent as it stands now, as a caller: undefined when it is revoked or gone. */
export async function currentPrincipal(db: Queryable, tenantId: string, parent: Parent): Promise<Principal | undefined> {
  if (parent.kind === 'key') {
    const key = await findActiveKeyById(db, tenantId, parent.id);
    return key && { kind: 'key', id: key.id, label: key.label, scopes: heldScopes(key.scopes) };
  }
  const token = await findUploadToken(db, tenantId, parent.id);
  return token && !token.revoked_at ? credentialOf(token).principal : undefined;
}
